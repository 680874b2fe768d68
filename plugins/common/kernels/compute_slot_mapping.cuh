// compute_slot_mapping.cuh — vllm.v1.worker.block_table.compute_slot_mapping
// (KERNELS.md 1): the paged-KV-cache slot of every token, PAD (-1) past the
// last token.
//
// Launch: one group of blockDim.x lanes per request, blockDim.y requests per
// block; grid.x = ceil(num_reqs / blockDim.y) request blocks + tail blocks.
// A group strides its request's tokens over its lanes (the host sizes the
// group to the mean tokens per request); the tail blocks share the padding
// range [num_tokens, max_num_tokens) (the host picks how many).
//
// Specialization: block_size and block_table_stride follow their key class
// (1 folded, multiple of 16 assumed); the four constexprs are template
// arguments, so with cp_world_size = cp_interleave = 1 the context-parallel
// arithmetic folds away and V = block_size * blocks_per_kv_block.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

template <typename TTableStride, int kTableStrideClass, typename TNumReqs,
          typename TMaxNumTokens, typename TBlockSize, int kBlockSizeClass,
          i64 kBlocksPerKvBlock, i64 kCpWorldSize, i64 kCpRank,
          i64 kCpInterleave>
__global__ void compute_slot_mapping(
    const i32* __restrict__ query_start_loc, const i64* __restrict__ positions,
    const i32* __restrict__ block_table, TTableStride block_table_stride,
    i64* __restrict__ slot_mapping, TNumReqs num_reqs,
    TMaxNumTokens max_num_tokens, TBlockSize block_size) {
  static_assert(kBlocksPerKvBlock >= 1 && kCpWorldSize >= 1 &&
                    kCpInterleave >= 1 && kCpRank >= 0 &&
                    kCpRank < kCpWorldSize,
                "the host validates the constexprs");
  constexpr i64 kPad = -1;
  const i64 requests = static_cast<i64>(num_reqs);
  const i64 lanes = block_threads();
  const i64 groups = block_threads_y();
  const i64 request_blocks = (requests + groups - 1) / groups;
  const i64 block = block_index_x();

  if (block < request_blocks) {
    const i64 program = block * groups + thread_index_y();
    if (program >= requests) return;
    const i64 table_stride =
        static_cast<i64>(specialize<kTableStrideClass>(block_table_stride));
    const i64 bs = static_cast<i64>(specialize<kBlockSizeClass>(block_size));
    const i64 kv_block_size = bs * kBlocksPerKvBlock;
    const i64 virtual_block_size = kv_block_size * kCpWorldSize;
    const i32* __restrict__ table_row = block_table + program * table_stride;
    const i64 first = query_start_loc[program];
    const i64 end = query_start_loc[program + 1];
    for (i64 token = first + thread_index(); token < end; token += lanes) {
      const i64 position = positions[token];
      const i64 virtual_block = position / virtual_block_size;
      const i64 virtual_offset = position % virtual_block_size;
      const bool local =
          (virtual_offset / kCpInterleave) % kCpWorldSize == kCpRank;
      i64 slot = kPad;
      if (local) {
        const i64 local_offset =
            (virtual_offset / (kCpWorldSize * kCpInterleave)) * kCpInterleave +
            virtual_offset % kCpInterleave;
        const i64 block_number =
            table_row[virtual_block * kBlocksPerKvBlock + local_offset / bs];
        slot = block_number * bs + local_offset % bs;
      }
      slot_mapping[token] = slot;
    }
    return;
  }

  // Padding tail, shared by the blocks past the requests (all their threads).
  const i64 threads = lanes * groups;
  const i64 thread = thread_index_y() * lanes + thread_index();
  const i64 num_tokens = query_start_loc[requests];
  const i64 tail_program = block - request_blocks;
  const i64 tail_programs = static_cast<i64>(grid_blocks_x()) - request_blocks;
  const i64 limit = static_cast<i64>(max_num_tokens);
  for (i64 token = num_tokens + tail_program * threads + thread; token < limit;
       token += tail_programs * threads) {
    slot_mapping[token] = kPad;
  }
}

}  // namespace jw::kernels
