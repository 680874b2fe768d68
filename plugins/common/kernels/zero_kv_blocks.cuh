// zero_kv_blocks.cuh — vllm.v1.worker.utils.zero_kv_blocks
// (docs/kernels.md, 4. zero_kv_blocks): zeroes seg_block_bytes[s] bytes at
// seg_addrs[s] + block_ids[b] * seg_block_stride[s] for every segment s and
// listed block b.
//
// Launch: one block per (block, segment) pair, grid = (n_blocks, n_segments),
// both capped by the host (blocks stride the pairs). The addresses are
// device data, so each block splits its range at run time into a byte head,
// a 16-byte-vector body and a byte tail (the whole range is vectors when it
// is aligned, as KV-cache blocks are).
//
// Specialization: n_blocks follows its key class (a single block folds the
// loop; a multiple of 16 is assumed); n_segments is do_not_specialize.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

template <typename TNumBlocks, int kNumBlocksClass, typename TNumSegments>
__global__ void zero_kv_blocks(const i32* __restrict__ block_ids,
                               const i64* __restrict__ seg_addrs,
                               const i64* __restrict__ seg_block_stride,
                               const i64* __restrict__ seg_block_bytes,
                               TNumBlocks n_blocks, TNumSegments n_segments) {
  constexpr int kUnroll = 4;
  const i64 blocks = static_cast<i64>(specialize<kNumBlocksClass>(n_blocks));
  const i64 segments = static_cast<i64>(n_segments);
  const i64 tid = thread_index();
  const i64 threads = block_threads();
  for (i64 segment = block_index_y(); segment < segments;
       segment += grid_blocks_y()) {
    const i64 base = seg_addrs[segment];
    const i64 stride = seg_block_stride[segment];
    const i64 bytes = seg_block_bytes[segment];
    for (i64 b = block_index_x(); b < blocks; b += grid_blocks_x()) {
      u8* const start =
          global_pointer<u8>(base + static_cast<i64>(block_ids[b]) * stride);
      const i64 misalignment =
          static_cast<i64>(reinterpret_cast<u64>(start) % kVectorBytes);
      i64 head = misalignment == 0 ? 0 : kVectorBytes - misalignment;
      if (head > bytes) head = bytes;
      const i64 vectors = (bytes - head) / kVectorBytes;
      const i64 tail_start = head + vectors * kVectorBytes;
      for (i64 i = tid; i < head; i += threads) start[i] = 0;
      for (i64 i = tail_start + tid; i < bytes; i += threads) start[i] = 0;
      Bytes16* const body = reinterpret_cast<Bytes16*>(start + head);
      const Bytes16 zero = {{0u, 0u, 0u, 0u}};
      i64 v = tid;
      for (; v + (kUnroll - 1) * threads < vectors; v += kUnroll * threads) {
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) body[v + k * threads] = zero;
      }
      for (; v < vectors; v += threads) body[v] = zero;
    }
  }
}

}  // namespace jw::kernels
