// expand.cuh — vllm.v1.sample.rejection_sampler.expand (docs/kernels.md,
// 2. expand): one value per request becomes one value per token, with one
// value replaced.
//
// Launch: one group of blockDim.x lanes per request, blockDim.y groups per
// block; a block takes blockDim.y * kRequests consecutive requests per pass
// (blocks stride the passes), group y the requests y, y + blockDim.y, ... of
// them, all their loads first. A group's lanes stride its request's tokens
// [cu_num_tokens[b-1], cu_num_tokens[b]): with a 16-byte-aligned output,
// 16-byte vectors of copies of the value (TokenSpan: the request's edges,
// shared with its neighbours' vectors, element by element), else elements.
// The host gives a group as many lanes as MAX_NUM_TOKENS takes vectors (two
// for 8 int32 tokens), so neighbouring groups write neighbouring tokens
// (coalesced), and caps the grid at a wave (8 blocks of 256 per SM), whose
// blocks stride the rest. One lane per token with 4-byte stores issued a
// store and its index arithmetic for every 4 bytes, which held the kernel at
// 0.40x of a device copy's bandwidth at the bench's shapes (a million
// requests of 8 tokens); docs/results/token-kernels.md has what vectors
// reach.
//
// Specialization: T is x's dtype (int32, int64, float32); TReplaceFrom and
// TReplaceTo are the C++ types the key chose for replace_from/replace_to
// (i32/i64/u64, or float/double). MAX_NUM_TOKENS is only an upper bound the
// host uses to size the block; it is a template argument so the key maps to one
// binary. kVectorStores is the key's alignment of output; kRequests (not
// named by the descriptor) is a tuning choice.
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

// x's value as 16 bytes of copies of it, for vector stores.
JW_INLINE Bytes16 splat_bytes16(i32 value) {
  const u32 word = static_cast<u32>(value);
  return Bytes16{{word, word, word, word}};
}
JW_INLINE Bytes16 splat_bytes16(float value) {
  const u32 word = float_bits(value);
  return Bytes16{{word, word, word, word}};
}
JW_INLINE Bytes16 splat_bytes16(i64 value) {
  const u32 low = static_cast<u32>(value);
  const u32 high = static_cast<u32>(static_cast<u64>(value) >> 32);
  return Bytes16{{low, high, low, high}};
}

template <typename T, typename TReplaceFrom, typename TReplaceTo,
          i64 kMaxNumTokens, bool kVectorStores,
          int kRequests = kRequestsPerGroup>
__global__ void expand(T* __restrict__ output, const T* __restrict__ x,
                       const i32* __restrict__ cu_num_tokens,
                       TReplaceFrom replace_from, TReplaceTo replace_to,
                       i64 batch /* x's length B, appended by the host */) {
  static_assert(is_float_type<T>::value == is_float_type<TReplaceFrom>::value &&
                    is_float_type<T>::value == is_float_type<TReplaceTo>::value,
                "replace_from/replace_to are of x's kind (the host checks)");
  static_assert(kMaxNumTokens >= 1, "the host validates MAX_NUM_TOKENS");
  constexpr u32 kPerVector =
      kVectorStores ? kVectorBytes / static_cast<u32>(sizeof(T)) : 1;

  const u32 lanes = block_threads();
  const u32 lane = thread_index();
  const i64 groups = block_threads_y();
  const i64 per_pass = groups * kRequests;
  for (i64 base =
           static_cast<i64>(block_index_x()) * per_pass + thread_index_y();
       base < batch; base += static_cast<i64>(grid_blocks_x()) * per_pass) {
    u32 first[kRequests];
    u32 end[kRequests];
    T value[kRequests];
#pragma unroll
    for (int k = 0; k < kRequests; ++k) {
      const i64 request = base + k * groups;
      first[k] = 0;
      end[k] = 0;
      value[k] = T{};
      if (request < batch) {
        first[k] =
            request == 0 ? 0u : static_cast<u32>(cu_num_tokens[request - 1]);
        end[k] = static_cast<u32>(cu_num_tokens[request]);
        value[k] = x[request];
      }
    }
#pragma unroll
    for (int k = 0; k < kRequests; ++k) {
      T v = value[k];
      if (equals_scalar(v, replace_from)) v = static_cast<T>(replace_to);
      if constexpr (kPerVector == 1) {
        for (u32 token = first[k] + lane; token < end[k]; token += lanes) {
          output[token] = v;
        }
      } else {
        const TokenSpan<kPerVector> span(first[k], end[k]);
        for (u32 i = lane; i < span.edges; i += lanes) output[span.edge(i)] = v;
        const Bytes16 vector = splat_bytes16(v);
        for (u32 token = span.body_first + lane * kPerVector;
             token < span.body_end; token += lanes * kPerVector) {
          store_bytes16(output + token, vector);
        }
      }
    }
  }
}

}  // namespace jw::kernels
