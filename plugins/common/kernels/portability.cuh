// portability.cuh — the thin layer between the kernel sources and the device
// compilers. It owns: fixed-width integer names, the function qualifiers,
// thread/block indices, the block barrier, the warp (wavefront) width and a
// lane shuffle, float bit casts, fp16 conversions, exp/sqrt and assumptions.
//
// It must compile, with no system or vendor header at all, under:
//   - NVRTC and nvcc (CUDA):            __CUDACC__ is defined;
//   - hiprtc (HIP, in-process):          __HIPCC_RTC__, __AMDGCN__;
//   - clang -x hip --cuda-device-only -nogpuinc -nogpulib (AMD, no HIP
//     headers and no device libraries):  __HIP__, __AMDGCN__.
// So nothing here may name a libc, CUDA-runtime or HIP-runtime declaration
// except the CUDA built-ins NVRTC always provides, and the AMD side uses
// clang builtins only (no __ocml_*/__ockl_* device-library calls).
//
// The kernels never assume a 32-wide warp: kWarpSize is the target's width
// (32 on NVIDIA and RDNA, 64 on CDNA gfx90a/gfx942).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define JW_TARGET_CUDA 1
#elif defined(__AMDGCN__)
#define JW_TARGET_AMDGCN 1
#else
#error "portability.cuh: compile with NVRTC/nvcc (CUDA) or for amdgcn (HIP)"
#endif

#if defined(JW_TARGET_AMDGCN) && !defined(__global__)
// clang in HIP mode without the HIP headers: the attributes exist, the
// keyword-like macros the headers would define do not.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#endif

// JW_RARE_PATH marks a device function on a rarely taken branch. amdgcn
// keeps it out of line, because inlined it pushed the hot loop it branches
// off past its register budget (scratch spills in batch_memcpy at 1024
// threads); NVVM inlines it, which compiles faster and spills nothing there.
#if defined(JW_TARGET_CUDA)
#define JW_INLINE __device__ __forceinline__
#define JW_RARE_PATH JW_INLINE
#define JW_LAUNCH_BOUNDS(max_threads) __launch_bounds__(max_threads)
#else
#define JW_INLINE __device__ inline __attribute__((always_inline))
#define JW_RARE_PATH __device__ __attribute__((noinline))
#define JW_LAUNCH_BOUNDS(max_threads) \
  __attribute__((amdgpu_flat_work_group_size(1, max_threads)))
#endif

// Tells the optimizer a fact the compile key guarantees (e.g. "divisible by
// 16"); both NVVM and LLVM/amdgcn turn it into llvm.assume.
#define JW_ASSUME(condition) __builtin_assume(condition)

namespace jw {

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

static_assert(sizeof(i8) == 1 && sizeof(i16) == 2 && sizeof(i32) == 4 &&
                  sizeof(i64) == 8,
              "signed fixed-width integers");
static_assert(sizeof(u8) == 1 && sizeof(u16) == 2 && sizeof(u32) == 4 &&
                  sizeof(u64) == 8,
              "unsigned fixed-width integers");
static_assert(sizeof(void*) == 8, "64-bit device addresses");

// ---------------------------------------------------------------------------
// Indices. Blocks are 1-D, except the token-level kernels, which run one
// group of blockDim.x lanes per request and blockDim.y requests per block;
// grids may be 3-D.
// ---------------------------------------------------------------------------
#if defined(JW_TARGET_CUDA)
JW_INLINE u32 thread_index() {
  return threadIdx.x;
}
JW_INLINE u32 block_threads() {
  return blockDim.x;
}
JW_INLINE u32 thread_index_y() {
  return threadIdx.y;
}
JW_INLINE u32 block_threads_y() {
  return blockDim.y;
}
JW_INLINE u32 block_index_x() {
  return blockIdx.x;
}
JW_INLINE u32 block_index_y() {
  return blockIdx.y;
}
JW_INLINE u32 block_index_z() {
  return blockIdx.z;
}
JW_INLINE u32 grid_blocks_x() {
  return gridDim.x;
}
JW_INLINE u32 grid_blocks_y() {
  return gridDim.y;
}
JW_INLINE u32 grid_blocks_z() {
  return gridDim.z;
}
JW_INLINE void block_barrier() {
  __syncthreads();
}
#else
JW_INLINE u32 thread_index() {
  return __builtin_amdgcn_workitem_id_x();
}
JW_INLINE u32 block_threads() {
  return __builtin_amdgcn_workgroup_size_x();
}
JW_INLINE u32 thread_index_y() {
  return __builtin_amdgcn_workitem_id_y();
}
JW_INLINE u32 block_threads_y() {
  return __builtin_amdgcn_workgroup_size_y();
}
JW_INLINE u32 block_index_x() {
  return __builtin_amdgcn_workgroup_id_x();
}
JW_INLINE u32 block_index_y() {
  return __builtin_amdgcn_workgroup_id_y();
}
JW_INLINE u32 block_index_z() {
  return __builtin_amdgcn_workgroup_id_z();
}
// The dispatch packet holds the grid in work-items; HIP launches always
// cover whole work-groups, so the quotient is exact.
JW_INLINE u32 grid_blocks_x() {
  return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
}
JW_INLINE u32 grid_blocks_y() {
  return __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y();
}
JW_INLINE u32 grid_blocks_z() {
  return __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z();
}
// What HIP's __syncthreads() expands to: make this work-group's memory
// operations visible, wait for every wavefront, then acquire theirs.
JW_INLINE void block_barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#endif

// ---------------------------------------------------------------------------
// Warps / wavefronts
// ---------------------------------------------------------------------------
#if defined(JW_TARGET_CUDA)
constexpr int kWarpSize = 32;
#else
constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#endif
// The largest block any kernel of the set is launched with; reductions size
// their per-warp scratch from it.
constexpr int kMaxBlockThreads = 1024;
constexpr int kMaxWarpsPerBlock = kMaxBlockThreads / kWarpSize;

JW_INLINE u32 lane_index() {
#if defined(JW_TARGET_CUDA)
  return thread_index() % kWarpSize;
#else
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
#endif
}

// A device address that arrives as an integer (batch_memcpy, zero_kv_blocks)
// as a pointer the compiler knows is in global memory, so it emits global
// rather than generic (flat) accesses.
template <typename T>
JW_INLINE T* global_pointer(i64 address) {
#if defined(JW_TARGET_CUDA)
  T* const pointer = reinterpret_cast<T*>(address);
  JW_ASSUME(__isGlobal(pointer));
  return pointer;
#else
  // Through an address_space(1) pointer: LLVM's address-space inference
  // then keeps every access derived from it global.
  typedef __attribute__((address_space(1))) T GlobalT;
  return (T*)(reinterpret_cast<GlobalT*>(address));
#endif
}

// ---------------------------------------------------------------------------
// Float bits and math (IEEE, no fast-math anywhere)
// ---------------------------------------------------------------------------
JW_INLINE u32 float_bits(float value) {
#if defined(JW_TARGET_CUDA)
  return __float_as_uint(value);
#else
  return __builtin_bit_cast(u32, value);
#endif
}
JW_INLINE float float_from_bits(u32 bits) {
#if defined(JW_TARGET_CUDA)
  return __uint_as_float(bits);
#else
  return __builtin_bit_cast(float, bits);
#endif
}

// Exchanges `value` with the lane whose index differs by `lane_mask`, in
// every lane of a full warp (all lanes must be active). Bit-exact.
JW_INLINE u32 shuffle_xor(u32 value, int lane_mask) {
#if defined(JW_TARGET_CUDA)
  return __shfl_xor_sync(0xffffffffu, value, lane_mask);
#else
  // ds_bpermute addresses lanes in bytes and works for wave32 and wave64.
  const int source_lane = static_cast<int>(lane_index()) ^ lane_mask;
  return static_cast<u32>(
      __builtin_amdgcn_ds_bpermute(source_lane << 2, static_cast<int>(value)));
#endif
}
JW_INLINE float shuffle_xor(float value, int lane_mask) {
  return float_from_bits(shuffle_xor(float_bits(value), lane_mask));
}

JW_INLINE float exp_f32(float value) {
#if defined(JW_TARGET_CUDA)
  return expf(value);
#else
  return __builtin_expf(value);
#endif
}
JW_INLINE float sqrt_f32(float value) {
#if defined(JW_TARGET_CUDA)
  return sqrtf(value);  // correctly rounded: NVRTC defaults to -prec-sqrt
#else
  return __builtin_sqrtf(value);
#endif
}

// ---------------------------------------------------------------------------
// IEEE half precision <-> float, rounding to nearest even
// ---------------------------------------------------------------------------
JW_INLINE float half_bits_to_float(u16 bits) {
#if defined(JW_TARGET_CUDA)
  float result;
  asm("cvt.f32.f16 %0, %1;" : "=f"(result) : "h"(bits));
  return result;
#else
  return static_cast<float>(__builtin_bit_cast(_Float16, bits));
#endif
}
JW_INLINE u16 float_to_half_bits(float value) {
#if defined(JW_TARGET_CUDA)
  u16 bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
#else
  return __builtin_bit_cast(u16, static_cast<_Float16>(value));
#endif
}

}  // namespace jw
