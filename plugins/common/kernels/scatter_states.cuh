// scatter_states.cuh — vllm.model_executor.layers.mamba.ops.scatter_states
// (docs/kernels.md, 5. scatter_states): state[indices[t], :] = src[t, :],
// negative indices skipped.
//
// Launch: one block per source row (grid.x = num_rows, capped by the host;
// blocks stride the rows), kThreads threads.
//
// Specialization: the kernel only moves bytes, so the dtype becomes an
// unsigned storage type of its size (int32 and float32 share a binary).
// ROW_SIZE is a template argument (the loop bound is a constant). When the
// key proves state and src 16-byte aligned, ROW_SIZE * element size a
// multiple of 16 and state_stride divisible by 16, rows move as 16-byte
// vectors (kVectorized); otherwise element by element. state_stride follows
// its key class. BLOCK_SIZE (elements per step) becomes kThreads =
// BLOCK_SIZE / elements-per-access, rounded to whole warps, chosen by the
// host.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

template <typename TElement, typename TStateStride, int kStateStrideClass,
          typename TIndex, typename TNumRows, i64 kRowSize, int kThreads,
          bool kVectorized>
__global__ JW_LAUNCH_BOUNDS(kThreads) void scatter_states(
    TElement* __restrict__ state, TStateStride state_stride,
    const TElement* __restrict__ src, const TIndex* __restrict__ indices,
    TNumRows num_rows) {
  static_assert(kRowSize >= 0, "the host validates ROW_SIZE");
  static_assert(!kVectorized || (kRowSize * sizeof(TElement)) % 16 == 0,
                "vector rows need a row size that is a multiple of 16 bytes");
  const i64 stride =
      static_cast<i64>(specialize<kStateStrideClass>(state_stride));
  const i64 rows = static_cast<i64>(num_rows);
  const i64 tid = thread_index();
  for (i64 row = block_index_x(); row < rows; row += grid_blocks_x()) {
    const i64 destination = static_cast<i64>(indices[row]);
    if (destination < 0) continue;
    TElement* __restrict__ out = state + destination * stride;
    const TElement* __restrict__ in = src + row * kRowSize;
    if constexpr (kVectorized) {
      constexpr i64 kVectors = kRowSize * sizeof(TElement) / kVectorBytes;
      Bytes16* __restrict__ out_vectors = reinterpret_cast<Bytes16*>(out);
      const Bytes16* __restrict__ in_vectors =
          reinterpret_cast<const Bytes16*>(in);
#pragma unroll 4
      for (i64 v = tid; v < kVectors; v += kThreads) {
        out_vectors[v] = in_vectors[v];
      }
    } else {
#pragma unroll 4
      for (i64 i = tid; i < kRowSize; i += kThreads) out[i] = in[i];
    }
  }
}

}  // namespace jw::kernels
