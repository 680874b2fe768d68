// rms_norm.cuh — vllm.model_executor.layers.layernorm.rms_norm
// (docs/kernels.md, 9. rms_norm):
// out[t, h] = x[t, h] * (1 / sqrt(mean(x[t, :]^2) + eps)) * weight[h], in
// float32, rounded once to the output dtype.
//
// Launch: one block per row (grid.x = T, capped by the host; blocks stride
// the rows). The host sizes the block so that each thread has about
// kCachedAccesses accesses of the row (4 unless tuned): they are issued back
// to back and kept in registers for the second pass, so x is read from
// memory once and many bytes are in flight per SM (a row cannot be written
// before its reduction ends). Longer rows re-read the rest (from cache). The
// sum of squares is a block reduction: warp shuffles of the target's width,
// then shared memory.
//
// out may alias x (in-place normalization, as the CPU reference allows):
// each thread writes only the elements it read itself, after reading them,
// so neither pointer is __restrict__.
//
// Specialization: kPlan holds kVectorMode (kernel_support.cuh) from the key,
// and rms_norm.toml's tune choices above it (zero at their defaults): 16-byte
// accesses always when out, x and weight are aligned and H and x_stride are
// divisible by 16; after a run-time check of H and x_stride when only the
// pointers are proven aligned; never otherwise. H and x_stride follow their
// key classes (H = 1 folds to a single element); T is do_not_specialize.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {
namespace rms_norm_detail {

// kPlan's tune fields (rms_norm.toml's last template argument): the
// accesses each thread caches, and the block's thread cap in units of 32,
// which is also the launch bound, so that a smaller block leaves each thread
// more registers for a longer cache.
template <int kPlan>
constexpr int kCachedAccessesOf = kTunedField<kPlan, 4, 64, 4>;
template <int kPlan>
constexpr int kMaxThreadsOf =
    32 * kTunedField<kPlan, 256, 64, kMaxBlockThreads / 32>;
// Whether x and out go through streaming (evict-first) accesses, leaving
// the caches to the weight row every block reads.
template <int kPlan>
constexpr bool kStreamingOf = kTunedField<kPlan, 16384, 2, 0> != 0;

template <typename T, int kPerAccess, int kCachedAccesses, bool kStreaming>
JW_INLINE void normalize_row(T* result, const T* in,
                             const T* __restrict__ weight, i64 hidden,
                             float epsilon) {
  typedef Access<T, kPerAccess> A;
  const i64 accesses = hidden / kPerAccess;
  const i64 tid = thread_index();
  const i64 threads = block_threads();

  typename A::type cached[kCachedAccesses];
  float sum_of_squares = 0.0f;
#pragma unroll
  for (int c = 0; c < kCachedAccesses; ++c) {
    const i64 i = tid + c * threads;
    if (i < accesses)
      cached[c] = A::template load_once<kStreaming>(in + i * kPerAccess);
  }
#pragma unroll
  for (int c = 0; c < kCachedAccesses; ++c) {
    const i64 i = tid + c * threads;
    if (i < accesses) {
#pragma unroll
      for (int k = 0; k < kPerAccess; ++k) {
        const float v = to_float(A::get(cached[c], k));
        sum_of_squares += v * v;
      }
    }
  }
  // The rest of a long row is read twice (here and to normalize it): only
  // the second read may stream.
  for (i64 i = tid + kCachedAccesses * threads; i < accesses; i += threads) {
    const typename A::type loaded = A::load(in + i * kPerAccess);
#pragma unroll
    for (int k = 0; k < kPerAccess; ++k) {
      const float v = to_float(A::get(loaded, k));
      sum_of_squares += v * v;
    }
  }
  const float total = block_sum(sum_of_squares);
  const float inverse_rms =
      1.0f / sqrt_f32(total / static_cast<float>(hidden) + epsilon);

  auto normalize = [&](i64 i, const typename A::type& values) {
    const typename A::type scale = A::load(weight + i * kPerAccess);
    typename A::type normalized = A::zero();
#pragma unroll
    for (int k = 0; k < kPerAccess; ++k) {
      A::put(normalized, k,
             from_float<T>(to_float(A::get(values, k)) * inverse_rms *
                           to_float(A::get(scale, k))));
    }
    A::template store_once<kStreaming>(result + i * kPerAccess, normalized);
  };
#pragma unroll
  for (int c = 0; c < kCachedAccesses; ++c) {
    const i64 i = tid + c * threads;
    if (i < accesses) normalize(i, cached[c]);
  }
  for (i64 i = tid + kCachedAccesses * threads; i < accesses; i += threads) {
    normalize(i, A::template load_once<kStreaming>(in + i * kPerAccess));
  }
}

}  // namespace rms_norm_detail

template <typename T, typename TXStride, int kXStrideClass, typename TEps,
          typename TRows, typename THidden, int kHiddenClass, int kPlan>
__global__
JW_LAUNCH_BOUNDS(rms_norm_detail::kMaxThreadsOf<kPlan>) void rms_norm(
    T* out, const T* x, TXStride x_stride, const T* __restrict__ weight,
    TEps eps, TRows T_, THidden H) {
  using rms_norm_detail::normalize_row;
  constexpr int kVectorMode = kVectorModeOf<kPlan>;
  constexpr int kCached = rms_norm_detail::kCachedAccessesOf<kPlan>;
  constexpr bool kStream = rms_norm_detail::kStreamingOf<kPlan>;
  constexpr int kPerVector = Vector<T>::kElements;
  const i64 hidden = static_cast<i64>(specialize<kHiddenClass>(H));
  const i64 row_stride = static_cast<i64>(specialize<kXStrideClass>(x_stride));
  const i64 rows = static_cast<i64>(T_);
  const float epsilon = static_cast<float>(eps);
  constexpr i64 kElementBytes = static_cast<i64>(sizeof(T));
  // With kVectorIfSizesAllow the pointers are proven aligned; rows start
  // on 16-byte boundaries when H and x_stride span whole vectors too.
  const bool sizes_allow_vectors =
      (hidden * kElementBytes) % kVectorBytes == 0 &&
      (row_stride * kElementBytes) % kVectorBytes == 0;
  for (i64 row = block_index_x(); row < rows; row += grid_blocks_x()) {
    const T* in = x + row * row_stride;
    T* result = out + row * hidden;
    if constexpr (kVectorMode == kVectorAlways) {
      normalize_row<T, kPerVector, kCached, kStream>(result, in, weight, hidden,
                                                     epsilon);
    } else if constexpr (kVectorMode == kVectorIfSizesAllow) {
      if (sizes_allow_vectors) {
        normalize_row<T, kPerVector, kCached, kStream>(result, in, weight,
                                                       hidden, epsilon);
      } else {
        normalize_row<T, 1, kCached, kStream>(result, in, weight, hidden,
                                              epsilon);
      }
    } else {
      normalize_row<T, 1, kCached, kStream>(result, in, weight, hidden,
                                            epsilon);
    }
  }
}

}  // namespace jw::kernels
