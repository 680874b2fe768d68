// rms_norm.cuh — vllm.model_executor.layers.layernorm.rms_norm (KERNELS.md 9):
// out[t, h] = x[t, h] * (1 / sqrt(mean(x[t, :]^2) + eps)) * weight[h], in
// float32, rounded once to the output dtype.
//
// Launch: one block per row (grid.x = T, capped by the host; blocks stride
// the rows), threads ~ H / elements-per-access rounded to whole warps.
// Each thread keeps its first kCachedAccesses loads of the row in registers
// for the second pass, so x is read from memory once for rows up to
// kCachedAccesses * threads accesses; longer rows re-read the rest (from
// cache). The row's sum of squares is a block reduction: warp shuffles of
// the target's width, then shared memory.
//
// out may alias x (in-place normalization, as the CPU reference allows):
// each thread writes only the elements it read itself, after reading them,
// so neither pointer is __restrict__.
//
// Specialization: when the key proves out, x and weight 16-byte aligned and
// H and x_stride divisible by 16, rows move as 16-byte vectors
// (kVectorized); otherwise element by element. H and x_stride follow their
// key classes (H = 1 folds to a single element); T is do_not_specialize.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

template <typename T, typename TXStride, int kXStrideClass, typename TEps,
          typename TRows, typename THidden, int kHiddenClass, bool kVectorized>
__global__ JW_LAUNCH_BOUNDS(kMaxBlockThreads) void rms_norm(
    T* out, const T* x, TXStride x_stride, const T* __restrict__ weight,
    TEps eps, TRows T_, THidden H) {
  constexpr int kPerAccess = kVectorized ? Vector<T>::kElements : 1;
  constexpr int kCachedAccesses = 4;
  typedef Access<T, kPerAccess> A;
  const i64 hidden = static_cast<i64>(specialize<kHiddenClass>(H));
  const i64 row_stride = static_cast<i64>(specialize<kXStrideClass>(x_stride));
  const i64 rows = static_cast<i64>(T_);
  const i64 accesses = hidden / kPerAccess;
  const i64 tid = thread_index();
  const i64 threads = block_threads();
  const float epsilon = static_cast<float>(eps);

  for (i64 row = block_index_x(); row < rows; row += grid_blocks_x()) {
    const T* in = x + row * row_stride;
    T* result = out + row * hidden;

    typename A::type cached[kCachedAccesses];
    float sum_of_squares = 0.0f;
#pragma unroll
    for (int c = 0; c < kCachedAccesses; ++c) {
      const i64 i = tid + c * threads;
      if (i < accesses) {
        cached[c] = A::load(in + i * kPerAccess);
#pragma unroll
        for (int k = 0; k < kPerAccess; ++k) {
          const float v = to_float(A::element(cached[c], k));
          sum_of_squares += v * v;
        }
      }
    }
    for (i64 i = tid + kCachedAccesses * threads; i < accesses; i += threads) {
      const typename A::type loaded = A::load(in + i * kPerAccess);
#pragma unroll
      for (int k = 0; k < kPerAccess; ++k) {
        const float v = to_float(A::element(loaded, k));
        sum_of_squares += v * v;
      }
    }
    const float total = block_sum(sum_of_squares);
    const float inverse_rms =
        1.0f / sqrt_f32(total / static_cast<float>(hidden) + epsilon);

    auto normalize = [&](i64 i, const typename A::type& values) {
      const typename A::type scale = A::load(weight + i * kPerAccess);
      typename A::type normalized;
#pragma unroll
      for (int k = 0; k < kPerAccess; ++k) {
        A::element(normalized, k) =
            from_float<T>(to_float(A::element(values, k)) * inverse_rms *
                          to_float(A::element(scale, k)));
      }
      A::store(result + i * kPerAccess, normalized);
    };
#pragma unroll
    for (int c = 0; c < kCachedAccesses; ++c) {
      const i64 i = tid + c * threads;
      if (i < accesses) normalize(i, cached[c]);
    }
    for (i64 i = tid + kCachedAccesses * threads; i < accesses; i += threads) {
      normalize(i, A::load(in + i * kPerAccess));
    }
  }
}

}  // namespace jw::kernels
