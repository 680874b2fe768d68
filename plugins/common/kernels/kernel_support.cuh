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
// Integer specialization (DESIGN.md "Specialization"). The numbering equals
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
// Round to nearest even by integer arithmetic (cvt.rn.bf16.f32 needs sm_80;
// this is exact on every target). NaN stays NaN (quietened).
template <>
JW_INLINE bf16 from_float<bf16>(float value) {
  const u32 bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return bf16{static_cast<u16>((bits >> 16) | 0x40u)};
  }
  const u32 rounding = 0x7fffu + ((bits >> 16) & 1u);
  return bf16{static_cast<u16>((bits + rounding) >> 16)};
}

// ---------------------------------------------------------------------------
// 16-byte vector access. Only used where the compile key proves the address
// is 16-byte aligned (tensor alignment plus divisible-by-16 sizes).
// ---------------------------------------------------------------------------
constexpr int kVectorBytes = 16;

struct alignas(16) Bytes16 {
  u32 word[4];
};

// kVectorBytes bytes seen as elements of T.
template <typename T>
struct alignas(16) Vector {
  static constexpr int kElements = kVectorBytes / static_cast<int>(sizeof(T));
  T element[kElements];
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

// The bits of an element, as the unsigned integer of its size.
JW_INLINE u32 element_bits(float value) {
  return float_bits(value);
}
JW_INLINE u16 element_bits(f16 value) {
  return value.bits;
}
JW_INLINE u16 element_bits(bf16 value) {
  return value.bits;
}
JW_INLINE u8 element_bits(u8 value) {
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

// Vectors travel as four 32-bit words assembled with shifts, so both
// compilers emit exactly one 128-bit access (ld/st.global.v4.u32,
// global_load/store_dwordx4); copying a Vector<T> of 16-bit structs member
// by member lets them split it into 16-bit accesses.
template <typename T>
JW_INLINE Vector<T> load_vector(const T* address) {
  constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));
  static_assert(kPerWord >= 1, "elements of at most 4 bytes");
  const Bytes16 raw = *reinterpret_cast<const Bytes16*>(address);
  Vector<T> result;
#pragma unroll
  for (int k = 0; k < Vector<T>::kElements; ++k) {
    const u32 word = raw.word[k / kPerWord];
    result.element[k] = element_from_bits<T>(
        kPerWord == 1 ? word : word >> (kBits * (k % kPerWord)));
  }
  return result;
}
template <typename T>
JW_INLINE void store_vector(T* address, const Vector<T>& value) {
  constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));
  static_assert(kPerWord >= 1, "elements of at most 4 bytes");
  Bytes16 raw = {{0u, 0u, 0u, 0u}};
#pragma unroll
  for (int k = 0; k < Vector<T>::kElements; ++k) {
    const u32 bits = static_cast<u32>(element_bits(value.element[k]));
    raw.word[k / kPerWord] |=
        kPerWord == 1 ? bits : bits << (kBits * (k % kPerWord));
  }
  store_bytes16(address, raw);
}

// One element (kPerAccess = 1) or one 16-byte vector of T, so a kernel body
// can be written once for its scalar and its vectorized instantiation.
template <typename T, int kPerAccess>
struct Access {
  static_assert(kPerAccess == Vector<T>::kElements, "a whole vector");
  typedef Vector<T> type;
  static JW_INLINE type load(const T* p) { return load_vector(p); }
  static JW_INLINE void store(T* p, const type& v) { store_vector(p, v); }
  static JW_INLINE T& element(type& v, int k) { return v.element[k]; }
  static JW_INLINE const T& element(const type& v, int k) {
    return v.element[k];
  }
  static JW_INLINE type splat(T value) {
    type v;
#pragma unroll
    for (int k = 0; k < kPerAccess; ++k) v.element[k] = value;
    return v;
  }
};
template <typename T>
struct Access<T, 1> {
  typedef T type;
  static JW_INLINE type load(const T* p) { return *p; }
  static JW_INLINE void store(T* p, const type& v) { *p = v; }
  static JW_INLINE T& element(type& v, int) { return v; }
  static JW_INLINE const T& element(const type& v, int) { return v; }
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

// Exact integer sums (the callers add a few values per block, so the
// shared-memory tree is cheap and independent of the warp width).
JW_INLINE i64 block_sum(i64 value) {
  return block_sum_through_shared_memory(value);
}

}  // namespace jw
