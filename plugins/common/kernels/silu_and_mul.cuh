// silu_and_mul.cuh — vllm.model_executor.layers.activation.silu_and_mul
// (KERNELS.md 10): out[t, h] = silu(x[t, h]) * x[t, H + h] with
// silu(v) = v / (1 + exp(-v)), in float32, rounded once to the output dtype.
//
// Launch: grid = (T, column blocks), both capped by the host (blocks stride
// rows and columns); each thread handles one element or one 16-byte vector
// per step.
//
// Specialization: when the key proves out and x 16-byte aligned and H
// divisible by 16 (so every row start and the second half of x are aligned
// too), the kernel moves 16-byte vectors (kVectorized); otherwise elements.
// H follows its key class; T is do_not_specialize.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

template <typename T, typename TRows, typename THidden, int kHiddenClass,
          bool kVectorized>
__global__ void silu_and_mul(T* __restrict__ out, const T* __restrict__ x,
                             TRows T_, THidden H) {
  constexpr int kPerAccess = kVectorized ? Vector<T>::kElements : 1;
  typedef Access<T, kPerAccess> A;
  const i64 hidden = static_cast<i64>(specialize<kHiddenClass>(H));
  const i64 rows = static_cast<i64>(T_);
  const i64 accesses = hidden / kPerAccess;
  const i64 threads = block_threads();
  const i64 first_access = block_index_y() * threads + thread_index();
  const i64 access_stride = static_cast<i64>(grid_blocks_y()) * threads;
  for (i64 row = block_index_x(); row < rows; row += grid_blocks_x()) {
    const T* __restrict__ gate = x + row * 2 * hidden;
    const T* __restrict__ up = gate + hidden;
    T* __restrict__ result = out + row * hidden;
    for (i64 i = first_access; i < accesses; i += access_stride) {
      const typename A::type a = A::load(gate + i * kPerAccess);
      const typename A::type b = A::load(up + i * kPerAccess);
      typename A::type product;
#pragma unroll
      for (int k = 0; k < kPerAccess; ++k) {
        const float v = to_float(A::element(a, k));
        const float silu = v / (1.0f + exp_f32(-v));
        A::element(product, k) =
            from_float<T>(silu * to_float(A::element(b, k)));
      }
      A::store(result + i * kPerAccess, product);
    }
  }
}

}  // namespace jw::kernels
