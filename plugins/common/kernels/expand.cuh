// expand.cuh — vllm.v1.sample.rejection_sampler.expand (docs/kernels.md,
// 2. expand): one value per request becomes one value per token, with one
// value replaced.
//
// Launch: one group of blockDim.x lanes per request, blockDim.y groups per
// block; a block takes blockDim.y * kRequestsPerGroup consecutive requests
// per pass (blocks stride the passes), group y the requests y, y +
// blockDim.y, ... of them, all their loads first. A group's lanes stride its
// request's tokens [cu_num_tokens[b-1], cu_num_tokens[b]). The host sizes
// the group to MAX_NUM_TOKENS, so a block of a few tokens per request keeps
// every lane busy and neighbouring groups write neighbouring tokens
// (coalesced), where a block per request left most of a block idle.
//
// Specialization: T is x's dtype (int32, int64, float32); TReplaceFrom and
// TReplaceTo are the C++ types the key chose for replace_from/replace_to
// (i32/i64/u64, or float/double). MAX_NUM_TOKENS is only an upper bound the
// host uses to size the block; it is a template argument so the key maps to one
// binary.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

// Compares as mathematical values: an unsigned 64-bit scalar above 2^63 - 1
// equals no signed element (C++'s conversions would make -1 == 2^64 - 1).
template <typename T, typename TScalar>
JW_INLINE bool equals_scalar(T element, TScalar scalar) {
  if constexpr (is_same_type<TScalar, u64>::value) {
    return element >= 0 &&
           static_cast<u64>(element) == scalar;  // element is integral here
  } else if constexpr (is_same_type<T, float>::value) {
    // replace_from is rounded to x's dtype first (as the reference does).
    return element == static_cast<float>(scalar);
  } else {
    return static_cast<i64>(element) == static_cast<i64>(scalar);
  }
}

// A struct, not a constexpr function: NVRTC compiles no unannotated
// (host) functions, and a constant needs no __device__.
template <typename T>
struct is_float_type {
  static constexpr bool value =
      is_same_type<T, float>::value || is_same_type<T, double>::value;
};

template <typename T, typename TReplaceFrom, typename TReplaceTo,
          i64 kMaxNumTokens>
__global__ void expand(T* __restrict__ output, const T* __restrict__ x,
                       const i32* __restrict__ cu_num_tokens,
                       TReplaceFrom replace_from, TReplaceTo replace_to,
                       i64 batch /* x's length B, appended by the host */) {
  static_assert(is_float_type<T>::value == is_float_type<TReplaceFrom>::value &&
                    is_float_type<T>::value == is_float_type<TReplaceTo>::value,
                "replace_from/replace_to are of x's kind (the host checks)");
  static_assert(kMaxNumTokens >= 1, "the host validates MAX_NUM_TOKENS");

  constexpr int kR = kRequestsPerGroup;
  const i64 groups = block_threads_y();
  const i64 lanes = block_threads();
  const i64 per_pass = groups * kR;
  for (i64 base =
           static_cast<i64>(block_index_x()) * per_pass + thread_index_y();
       base < batch; base += static_cast<i64>(grid_blocks_x()) * per_pass) {
    i64 first[kR];
    i64 end[kR];
    T value[kR];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i64 request = base + k * groups;
      first[k] = 0;
      end[k] = 0;
      value[k] = T{};
      if (request < batch) {
        first[k] = request == 0 ? 0 : cu_num_tokens[request - 1];
        end[k] = cu_num_tokens[request];
        value[k] = x[request];
      }
    }
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      T v = value[k];
      if (equals_scalar(v, replace_from)) v = static_cast<T>(replace_to);
      for (i64 token = first[k] + thread_index(); token < end[k];
           token += lanes) {
        output[token] = v;
      }
    }
  }
}

}  // namespace jw::kernels
