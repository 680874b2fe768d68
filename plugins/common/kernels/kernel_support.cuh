// kernel_support.cuh — what the kernels of the set share on top of
// portability.cuh: the integer specialization classes of a compile key,
// 16-bit float storage types and float conversions, 16-byte vector access,
// and a block-wide sum.
//
// The host side (plugins/common/kernel_instantiation.cpp) spells template
// arguments with the names defined here (jw::f16, jw::bf16, jw::i64, ...),
// so a rename here is a rename there.
#pragma once

#include "portability.cuh"

namespace jw {

// ---------------------------------------------------------------------------
// The token-level kernels (expand, prepare_pos_seq_lens,
// compute_slot_mapping) run a group of lanes per request; each group takes
// this many requests per pass and issues the loads of all of them before
// any store, so a thread has several loads in flight instead of one (with
// one request per group, a million short requests made 31 waves of
// threads that each waited out one load). It is each kernel's default
// (prepare_pos_seq_lens takes 8); the kernels stride their requests, so
// the descriptors' copy of the number (their grid) only sizes the grid.
// ---------------------------------------------------------------------------
constexpr int kRequestsPerGroup = 4;

// A request's tokens [first, end) split for 16-byte vectors of kPerVector
// elements of a 16-byte-aligned tensor: the body [body_first, body_end) is
// whole vectors; the head [first, body_first) and the tail [body_end, end),
// fewer than kPerVector tokens each, are the request's share of vectors it
// has in common with its neighbours, so it writes them element by element.
// Token indices are 32-bit: they come from int32 offsets (query_start_loc,
// cu_num_tokens), so every index of a valid launch is below 2^31.
template <u32 kPerVector>
struct TokenSpan {
  static_assert(kPerVector >= 1 && (kPerVector & (kPerVector - 1)) == 0,
                "a power of two");
  u32 body_first;
  u32 body_end;
  u32 head;   // tokens before body_first
  u32 edges;  // head and tail tokens together

  // An end below first (decreasing offsets, which the reference refuses)
  // counts as an empty request.
  JW_INLINE TokenSpan(u32 first, u32 end) {
    if (end < first) end = first;
    const u32 rounded_up = (first + (kPerVector - 1)) & ~(kPerVector - 1);
    body_first = rounded_up < end ? rounded_up : end;
    const u32 rounded_down = end & ~(kPerVector - 1);
    body_end = rounded_down > body_first ? rounded_down : body_first;
    head = body_first - first;
    edges = head + (end - body_end);
  }
  // Edge token i, for i < edges: the head's, then the tail's.
  JW_INLINE u32 edge(u32 i) const {
    return i < head ? body_first - head + i : body_end + (i - head);
  }
};

// ---------------------------------------------------------------------------
// Integer specialization (docs/compile-keys.md). The numbering equals
// jw_int_class in jitwarm.h, which is frozen.
// ---------------------------------------------------------------------------
constexpr int kClassNone = 0;
constexpr int kClassOne = 1;
constexpr int kClassDiv16 = 2;

// The value of an integer kernel argument as its compile-key class allows
// the compiler to see it: the constant 1 for the class "one" (the argument
// is not even read), a multiple of 16 for "divisible by 16".
template <int kClass, typename T>
JW_INLINE T specialize(T value) {
  if constexpr (kClass == kClassOne) {
    return T(1);
  } else if constexpr (kClass == kClassDiv16) {
    JW_ASSUME(value % 16 == 0);
    return value;
  } else {
    return value;
  }
}

template <typename A, typename B>
struct is_same_type {
  static constexpr bool value = false;
};
template <typename A>
struct is_same_type<A, A> {
  static constexpr bool value = true;
};

// How a kernel may use 16-byte vectors, as the compile key allows (the host
// picks it; kernel_instantiation.cpp):
//   kVectorNever       a tensor is not 16-byte aligned: elements only;
//   kVectorIfSizesAllow  every pointer is aligned, but the sizes that place
//                      rows are not proven multiples of 16 bytes: the kernel
//                      checks them once at run time and takes either path;
//   kVectorAlways      aligned pointers and sizes divisible by 16 proven.
constexpr int kVectorNever = 0;
constexpr int kVectorIfSizesAllow = 1;
constexpr int kVectorAlways = 2;

// A tunable kernel's choices ([tune], docs/kernel-descriptors.md) that
// change its code ride in the template argument of its vector mode: the mode
// in the two low bits, each choice in a field above them that is 0 at the
// choice's default. A key without a config therefore spells the template
// arguments (name expression, entry point) it did before the kernel was
// tunable, and a config adds no template argument or define.
// (Variable templates: NVRTC takes an unannotated constexpr function for a
// host function, which JIT mode refuses.)
template <int kPlan>
constexpr int kVectorModeOf = kPlan % 4;
// The field of kPlan that starts at kScale (a power of two, at least 4) and
// holds values below kSize, or kFallback where it is 0 (the default).
template <int kPlan, int kScale, int kSize, int kFallback>
constexpr int kTunedField = (kPlan / kScale) % kSize == 0
                                ? kFallback
                                : (kPlan / kScale) % kSize;

// ---------------------------------------------------------------------------
// 16-bit floats: storage only; arithmetic happens in float32.
// ---------------------------------------------------------------------------
struct alignas(2) f16 {
  u16 bits;
};
struct alignas(2) bf16 {
  u16 bits;
};

JW_INLINE float to_float(float value) {
  return value;
}
JW_INLINE float to_float(f16 value) {
  return half_bits_to_float(value.bits);
}
JW_INLINE float to_float(bf16 value) {
  return float_from_bits(static_cast<u32>(value.bits) << 16);
}

template <typename T>
JW_INLINE T from_float(float value);
template <>
JW_INLINE float from_float<float>(float value) {
  return value;
}
template <>
JW_INLINE f16 from_float<f16>(float value) {
  return f16{float_to_half_bits(value)};
}
// Round to nearest even, NaN stays NaN (quietened): one instruction on
// sm_80 and later, integer arithmetic elsewhere (exact on every target).
template <>
JW_INLINE bf16 from_float<bf16>(float value) {
#if defined(JW_TARGET_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  u16 bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bf16{bits};
#else
  const u32 bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return bf16{static_cast<u16>((bits >> 16) | 0x40u)};
  }
  const u32 rounding = 0x7fffu + ((bits >> 16) & 1u);
  return bf16{static_cast<u16>((bits + rounding) >> 16)};
#endif
}

// ---------------------------------------------------------------------------
// 16-byte vector access. Only used where the compile key (or a run-time
// check it allows) proves the address is 16-byte aligned.
// ---------------------------------------------------------------------------
constexpr int kVectorBytes = 16;

struct alignas(16) Bytes16 {
  u32 word[4];
};

// Elements of T in one 16-byte vector.
template <typename T>
struct Vector {
  static constexpr int kElements = kVectorBytes / static_cast<int>(sizeof(T));
};

// One 128-bit store. NVVM splits a plain 16-byte aggregate store into
// 32-bit stores in some loops (seen in rms_norm and pack_seq), so on CUDA
// the instruction is spelled out; `address` is a global-memory pointer.
JW_INLINE void store_bytes16(void* address, const Bytes16& value) {
#if defined(JW_TARGET_CUDA)
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
               :
               : "l"(__cvta_generic_to_global(address)), "r"(value.word[0]),
                 "r"(value.word[1]), "r"(value.word[2]), "r"(value.word[3])
               : "memory");
#else
  *reinterpret_cast<Bytes16*>(address) = value;
#endif
}

// The same 128-bit load and store, marked streaming (evict first): for data
// a kernel touches once, so that it does not push out of the caches what
// other blocks still read (a weight row every block reads, say). A tuning
// choice where a kernel offers it: whether it pays depends on the device.
JW_INLINE Bytes16 load_bytes16_streaming(const void* address) {
#if defined(JW_TARGET_CUDA)
  Bytes16 value;
  asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(value.word[0]), "=r"(value.word[1]), "=r"(value.word[2]),
                 "=r"(value.word[3])
               : "l"(__cvta_generic_to_global(address)));
  return value;
#else
  typedef u32 Words __attribute__((ext_vector_type(4)));
  const Words words =
      __builtin_nontemporal_load(reinterpret_cast<const Words*>(address));
  return Bytes16{{words.x, words.y, words.z, words.w}};
#endif
}
JW_INLINE void store_bytes16_streaming(void* address, const Bytes16& value) {
#if defined(JW_TARGET_CUDA)
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};"
               :
               : "l"(__cvta_generic_to_global(address)), "r"(value.word[0]),
                 "r"(value.word[1]), "r"(value.word[2]), "r"(value.word[3])
               : "memory");
#else
  typedef u32 Words __attribute__((ext_vector_type(4)));
  const Words words = {value.word[0], value.word[1], value.word[2],
                       value.word[3]};
  __builtin_nontemporal_store(words, reinterpret_cast<Words*>(address));
#endif
}

// The bits of an element, as the unsigned integer of its size.
JW_INLINE u32 element_bits(float value) {
  return float_bits(value);
}
JW_INLINE u32 element_bits(f16 value) {
  return value.bits;
}
JW_INLINE u32 element_bits(bf16 value) {
  return value.bits;
}
JW_INLINE u32 element_bits(u8 value) {
  return value;
}

template <typename T>
JW_INLINE T element_from_bits(u32 bits);
template <>
JW_INLINE float element_from_bits<float>(u32 bits) {
  return float_from_bits(bits);
}
template <>
JW_INLINE f16 element_from_bits<f16>(u32 bits) {
  return f16{static_cast<u16>(bits)};
}
template <>
JW_INLINE bf16 element_from_bits<bf16>(u32 bits) {
  return bf16{static_cast<u16>(bits)};
}
template <>
JW_INLINE u8 element_from_bits<u8>(u32 bits) {
  return static_cast<u8>(bits);
}

// One element (kPerAccess = 1) or one 16-byte vector of T, so a kernel body
// is written once for its scalar and its vectorized instantiation. A vector
// stays four 32-bit words in registers (as loaded and stored); elements are
// shifted out and in on use. Held as an array of 16-bit structs instead, it
// took one register per element, which cost the bf16 kernels occupancy.
template <typename T, int kPerAccess>
struct Access {
  static_assert(kPerAccess == Vector<T>::kElements, "a whole vector");
  static constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  static constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));
  static_assert(kPerWord >= 1, "elements of at most 4 bytes");
  typedef Bytes16 type;

  static JW_INLINE type load(const T* p) {
    return *reinterpret_cast<const Bytes16*>(p);
  }
  static JW_INLINE void store(T* p, const type& v) { store_bytes16(p, v); }
  // Streaming (evict-first) when kStreaming: see load_bytes16_streaming.
  template <bool kStreaming>
  static JW_INLINE type load_once(const T* p) {
    if constexpr (kStreaming) return load_bytes16_streaming(p);
    return load(p);
  }
  template <bool kStreaming>
  static JW_INLINE void store_once(T* p, const type& v) {
    if constexpr (kStreaming) {
      store_bytes16_streaming(p, v);
    } else {
      store(p, v);
    }
  }
  static JW_INLINE type zero() { return Bytes16{{0u, 0u, 0u, 0u}}; }
  static JW_INLINE T get(const type& v, int k) {
    const u32 word = v.word[k / kPerWord];
    return element_from_bits<T>(
        kPerWord == 1 ? word : word >> (kBits * (k % kPerWord)));
  }
  // Fills element k of a vector that started as zero().
  static JW_INLINE void put(type& v, int k, T value) {
    const u32 bits = element_bits(value);
    v.word[k / kPerWord] |=
        kPerWord == 1 ? bits : bits << (kBits * (k % kPerWord));
  }
  static JW_INLINE type splat(T value) {
    type v = zero();
#pragma unroll
    for (int k = 0; k < kPerAccess; ++k) put(v, k, value);
    return v;
  }
};
template <typename T>
struct Access<T, 1> {
  typedef T type;
  static JW_INLINE type load(const T* p) { return *p; }
  static JW_INLINE void store(T* p, const type& v) { *p = v; }
  // Single elements take no cache hint.
  template <bool>
  static JW_INLINE type load_once(const T* p) {
    return *p;
  }
  template <bool>
  static JW_INLINE void store_once(T* p, const type& v) {
    *p = v;
  }
  static JW_INLINE type zero() { return T{}; }
  static JW_INLINE T get(const type& v, int) { return v; }
  static JW_INLINE void put(type& v, int, T value) { v = value; }
  static JW_INLINE type splat(T value) { return value; }
};

// ---------------------------------------------------------------------------
// Block-wide reduction
// ---------------------------------------------------------------------------
// The sum of `value` over the calling block, returned to every thread (each
// thread reads the partial sums in the same order, so all agree). Every
// thread of the block must call these; they may be called again at once.
template <typename T>
JW_INLINE T block_sum_through_shared_memory(T value) {
  __shared__ T thread_sums[kMaxBlockThreads];
  const u32 tid = thread_index();
  thread_sums[tid] = value;
  block_barrier();
  // Fold the upper part onto the lower one until one value remains; any
  // block size works, not only powers of two.
  for (u32 active = block_threads(); active > 1;) {
    const u32 half = (active + 1) / 2;
    if (tid + half < active) thread_sums[tid] += thread_sums[tid + half];
    block_barrier();
    active = half;
  }
  const T total = thread_sums[0];
  // The next call overwrites thread_sums: wait until every thread has read.
  block_barrier();
  return total;
}

// Float sums reduce each warp with shuffles first. A shuffle needs every
// lane of the warp, so a block that is not a whole number of warps (the
// host rounds to the target's width, but the kernel does not rely on it)
// takes the shared-memory path.
JW_INLINE float block_sum(float value) {
  if (block_threads() % kWarpSize != 0) {
    return block_sum_through_shared_memory(value);
  }
  __shared__ float warp_sums[kMaxWarpsPerBlock];
  for (int lane_mask = kWarpSize / 2; lane_mask > 0; lane_mask /= 2) {
    value += shuffle_xor(value, lane_mask);
  }
  const u32 warps = block_threads() / kWarpSize;
  if (lane_index() == 0) warp_sums[thread_index() / kWarpSize] = value;
  block_barrier();
  float total = 0.0f;
  for (u32 w = 0; w < warps; ++w) total += warp_sums[w];
  block_barrier();
  return total;
}

// Exact 64-bit integer sums, reduced like the float ones (a 64-bit value
// crosses lanes as two 32-bit halves).
JW_INLINE i64 block_sum(i64 value) {
  if (block_threads() % kWarpSize != 0) {
    return block_sum_through_shared_memory(value);
  }
  __shared__ i64 warp_sums[kMaxWarpsPerBlock];
  for (int lane_mask = kWarpSize / 2; lane_mask > 0; lane_mask /= 2) {
    const u64 bits = static_cast<u64>(value);
    const u32 low = shuffle_xor(static_cast<u32>(bits), lane_mask);
    const u32 high = shuffle_xor(static_cast<u32>(bits >> 32), lane_mask);
    value += static_cast<i64>((static_cast<u64>(high) << 32) | low);
  }
  const u32 warps = block_threads() / kWarpSize;
  if (lane_index() == 0) warp_sums[thread_index() / kWarpSize] = value;
  block_barrier();
  i64 total = 0;
  for (u32 w = 0; w < warps; ++w) total += warp_sums[w];
  block_barrier();
  return total;
}

}  // namespace jw
