// silu_and_mul.cuh — vllm.model_executor.layers.activation.silu_and_mul
// (docs/kernels.md, 10. silu_and_mul): out[t, h] = silu(x[t, h]) * x[t, H + h]
// with silu(v) = v / (1 + exp(-v)), in float32, rounded once to the output
// dtype.
//
// Launch: grid = (T, column blocks), both capped by the host (blocks stride
// rows and columns). Each thread loads Unroll accesses of both halves
// before computing, so several loads are in flight per thread; an access is
// one element or one 16-byte vector.
//
// Specialization: kPlan holds kVectorMode (kernel_support.cuh) from the key,
// and silu_and_mul.toml's unroll above it (0 by default): 16-byte
// accesses always when out and x are aligned and H is divisible by 16 (so
// every row start and the second half of x are aligned too); after a
// run-time check of H when only the pointers are proven aligned; never
// otherwise. H follows its key class; T is do_not_specialize.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {
namespace silu_detail {

// Accesses per thread per step: elements (and 4-element vectors) are loaded
// several at a time to keep bytes in flight; 8-element (16-bit) vectors are
// already compute-bound, where more registers per thread only cost
// occupancy. A tuned key gives its own (kChoice, not 0). The host plans
// with the same numbers (silu_and_mul.toml's `steps`).
template <int kPerAccess, int kChoice>
struct Unroll {
  static constexpr int value = kChoice != 0      ? kChoice
                               : kPerAccess == 1 ? 4
                               : kPerAccess == 4 ? 2
                                                 : 1;
};

template <typename T, int kPerAccess, int kChoice, bool kStreaming>
JW_INLINE void silu_row(T* __restrict__ result, const T* __restrict__ gate,
                        const T* __restrict__ up, i64 accesses, i64 first,
                        i64 stride) {
  typedef Access<T, kPerAccess> A;
  constexpr int kUnroll = Unroll<kPerAccess, kChoice>::value;
  for (i64 base = first; base < accesses; base += kUnroll * stride) {
    typename A::type a[kUnroll];
    typename A::type b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const i64 i = base + u * stride;
      if (i < accesses) {
        a[u] = A::template load_once<kStreaming>(gate + i * kPerAccess);
        b[u] = A::template load_once<kStreaming>(up + i * kPerAccess);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const i64 i = base + u * stride;
      if (i >= accesses) continue;
      typename A::type product = A::zero();
#pragma unroll
      for (int k = 0; k < kPerAccess; ++k) {
        const float v = to_float(A::get(a[u], k));
        const float silu = v / (1.0f + exp_f32(-v));
        A::put(product, k, from_float<T>(silu * to_float(A::get(b[u], k))));
      }
      A::template store_once<kStreaming>(result + i * kPerAccess, product);
    }
  }
}

}  // namespace silu_detail

template <typename T, typename TRows, typename THidden, int kHiddenClass,
          int kPlan>
__global__ void silu_and_mul(T* __restrict__ out, const T* __restrict__ x,
                             TRows T_, THidden H) {
  using silu_detail::silu_row;
  constexpr int kVectorMode = kVectorModeOf<kPlan>;
  constexpr int kUnrollChoice = kTunedField<kPlan, 4, 64, 0>;
  // Streaming (evict-first) accesses: every byte is touched once.
  constexpr bool kStream = kTunedField<kPlan, 256, 2, 0> != 0;
  constexpr int kPerVector = Vector<T>::kElements;
  const i64 hidden = static_cast<i64>(specialize<kHiddenClass>(H));
  const i64 rows = static_cast<i64>(T_);
  // With kVectorIfSizesAllow the pointers are proven aligned; every row
  // and both halves start on 16-byte boundaries when H spans whole vectors.
  const bool sizes_allow_vectors =
      (hidden * static_cast<i64>(sizeof(T))) % kVectorBytes == 0;
  const i64 threads = block_threads();
  const i64 first = block_index_y() * threads + thread_index();
  const i64 stride = static_cast<i64>(grid_blocks_y()) * threads;
  for (i64 row = block_index_x(); row < rows; row += grid_blocks_x()) {
    const T* gate = x + row * 2 * hidden;
    const T* up = gate + hidden;
    T* result = out + row * hidden;
    if constexpr (kVectorMode == kVectorAlways) {
      silu_row<T, kPerVector, kUnrollChoice, kStream>(
          result, gate, up, hidden / kPerVector, first, stride);
    } else if constexpr (kVectorMode == kVectorIfSizesAllow) {
      if (sizes_allow_vectors) {
        silu_row<T, kPerVector, kUnrollChoice, kStream>(
            result, gate, up, hidden / kPerVector, first, stride);
      } else {
        silu_row<T, 1, kUnrollChoice, kStream>(result, gate, up, hidden, first,
                                               stride);
      }
    } else {
      silu_row<T, 1, kUnrollChoice, kStream>(result, gate, up, hidden, first,
                                             stride);
    }
  }
}

}  // namespace jw::kernels
