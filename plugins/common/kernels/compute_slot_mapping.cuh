// compute_slot_mapping.cuh — vllm.v1.worker.block_table.compute_slot_mapping
// (docs/kernels.md, 1. compute_slot_mapping): the paged-KV-cache slot of every
// token, PAD (-1) past the last token.
//
// Launch: one group of blockDim.x lanes per request, blockDim.y groups per
// block. Every block does two things, so any grid is correct (the host
// picks one that covers both at once):
//   - requests: a block takes blockDim.y * kRequestsPerGroup consecutive
//     requests per pass (blocks stride the passes), group y the requests
//     y, y + blockDim.y, ... of them. Each level of loads is issued for all
//     of a group's requests before the next (query bounds; the position of
//     each lane's first token; its block-table entry), then the stores; a
//     request with more tokens than lanes finishes the rest one level at a
//     time. The host sizes the group to the mean tokens per request.
//   - the padding tail [num_tokens, max_num_tokens), which all threads of
//     all blocks share.
//
// Specialization: block_size and block_table_stride follow their key class
// (1 folded, multiple of 16 assumed); the four constexprs are template
// arguments, so with cp_world_size = cp_interleave = 1 the context-parallel
// arithmetic folds away and V = block_size * blocks_per_kv_block.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

// Where a position lands: whether this context-parallel rank holds it, the
// block-table entry (within the request's row) and the offset in the block.
struct SlotPlace {
  bool local;
  i64 entry;
  i64 offset;
};

// The arithmetic of docs/kernels.md, 1. compute_slot_mapping, split at the
// block-table load.
template <int kBlockSizeClass, i64 kBlocksPerKvBlock, i64 kCpWorldSize,
          i64 kCpRank, i64 kCpInterleave>
struct SlotRule {
  i64 block_size;
  i64 virtual_block_size;

  template <typename TBlockSize>
  JW_INLINE explicit SlotRule(TBlockSize size)
      : block_size(static_cast<i64>(specialize<kBlockSizeClass>(size))),
        virtual_block_size(block_size * kBlocksPerKvBlock * kCpWorldSize) {}

  JW_INLINE SlotPlace place(i64 position) const {
    const i64 virtual_block = position / virtual_block_size;
    const i64 virtual_offset = position % virtual_block_size;
    SlotPlace p;
    p.local = (virtual_offset / kCpInterleave) % kCpWorldSize == kCpRank;
    const i64 local_offset =
        (virtual_offset / (kCpWorldSize * kCpInterleave)) * kCpInterleave +
        virtual_offset % kCpInterleave;
    p.entry = virtual_block * kBlocksPerKvBlock + local_offset / block_size;
    p.offset = local_offset % block_size;
    return p;
  }

  JW_INLINE i64 slot(const SlotPlace& p, i64 block_number) const {
    return p.local ? block_number * block_size + p.offset : i64{-1};
  }
};

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
  constexpr int kR = kRequestsPerGroup;
  const i64 requests = static_cast<i64>(num_reqs);
  const i64 lanes = block_threads();
  const i64 groups = block_threads_y();
  const i64 lane = thread_index();
  const i64 table_stride =
      static_cast<i64>(specialize<kTableStrideClass>(block_table_stride));
  const SlotRule<kBlockSizeClass, kBlocksPerKvBlock, kCpWorldSize, kCpRank,
                 kCpInterleave>
      rule(block_size);

  const i64 per_pass = groups * kR;
  for (i64 base =
           static_cast<i64>(block_index_x()) * per_pass + thread_index_y();
       base < requests; base += static_cast<i64>(grid_blocks_x()) * per_pass) {
    i64 first[kR];
    i64 end[kR];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i64 request = base + k * groups;
      first[k] = 0;
      end[k] = 0;
      if (request < requests) {
        first[k] = query_start_loc[request];
        end[k] = query_start_loc[request + 1];
      }
    }
    i64 position[kR];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i64 token = first[k] + lane;
      position[k] = token < end[k] ? positions[token] : 0;
    }
    SlotPlace place[kR];
    i64 block_number[kR];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      place[k] = rule.place(position[k]);
      const i64 request = base + k * groups;
      block_number[k] = 0;
      if (first[k] + lane < end[k] && place[k].local) {
        block_number[k] = block_table[request * table_stride + place[k].entry];
      }
    }
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i64 token = first[k] + lane;
      if (token < end[k]) {
        slot_mapping[token] = rule.slot(place[k], block_number[k]);
      }
    }
    // Tokens past the first `lanes` of a request.
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i32* __restrict__ table_row =
          block_table + (base + k * groups) * table_stride;
      for (i64 token = first[k] + lanes + lane; token < end[k];
           token += lanes) {
        const SlotPlace p = rule.place(positions[token]);
        slot_mapping[token] = rule.slot(p, p.local ? table_row[p.entry] : 0);
      }
    }
  }

  // Padding tail, shared by every thread of every block.
  const i64 threads = lanes * groups;
  const i64 thread = thread_index_y() * lanes + lane;
  const i64 num_tokens = query_start_loc[requests];
  const i64 limit = static_cast<i64>(max_num_tokens);
  for (i64 token =
           num_tokens + static_cast<i64>(block_index_x()) * threads + thread;
       token < limit; token += static_cast<i64>(grid_blocks_x()) * threads) {
    slot_mapping[token] = kPad;
  }
}

}  // namespace jw::kernels
