// batch_memcpy.cuh — vllm.v1.worker.mamba_utils.batch_memcpy
// (docs/kernels.md, 3. batch_memcpy): many independent byte copies in one
// launch, memmove semantics within a pair, any size and any alignment.
//
// Launch: grid = (ceil(num_copies / G), split), BLOCK_SIZE threads, where a
// block is G groups of one warp (wavefront) each. Block (x, y) takes the
// batch of G copies starting at x * G (blocks stride the batches):
//   1. each group copies its own copy when it is small (at most
//      kGroupCopyBytes) and its source and destination are disjoint, so a
//      block moves G small copies at once instead of one (the sizes and
//      addresses are device data: a block of its own per copy left most of
//      its threads idle and had one copy in flight per block);
//   2. then whole blocks take the batch's large copies and its overlapping
//      pairs; the `split` blocks of the batch deal them out, each copy to
//      ceil(split / count) of them, so many large copies go whole to one
//      block each and a few large copies are shared and still fill the GPU;
//      - disjoint: the blocks of a copy share its bytes;
//      - overlapping pair: the first block of the copy alone moves it chunk
//        by chunk, in the direction that never reads a byte it already
//        overwrote (backward when the destination lies above the source),
//        with one barrier per chunk between loading the chunk into registers
//        and storing it.
// Access width: 16-byte vectors when source and destination are congruent
// modulo 16 (byte head and tail around an aligned body), else 4-byte words
// when they are congruent modulo 4, else bytes (overlapping pairs: 16 or 1).
// This is decided per copy at run time; BLOCK_SIZE is a template argument
// (launch bounds, the group count and constant loop strides).
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {
namespace batch_memcpy_detail {

// A unit of copying: 1, 4 or 16 bytes, naturally aligned. (8 and 2 would
// add little over 4 and 1 and cost compile time on every key.)
template <int kBytes>
struct Unit;
template <>
struct Unit<1> {
  typedef u8 type;
};
template <>
struct Unit<4> {
  typedef u32 type;
};
template <>
struct Unit<16> {
  typedef Bytes16 type;
};

// Loads in flight per thread on the hot path; the rare paths use 1 (their
// unrolled copies would double the compile time of every key for little).
constexpr int kHotUnroll = 4;

// How a byte range splits around the units: `head` bytes up to the first
// unit boundary of the destination, `units` whole units, then `tail` bytes.
struct Split {
  i64 head;
  i64 units;
  i64 tail;
};

template <int kBytes>
JW_INLINE Split split_range(const u8* dst, i64 size) {
  const i64 misalignment =
      static_cast<i64>(reinterpret_cast<u64>(dst) % static_cast<u64>(kBytes));
  i64 head = misalignment == 0 ? 0 : kBytes - misalignment;
  if (head > size) head = size;
  const i64 units = (size - head) / kBytes;
  return Split{head, units, size - head - units * kBytes};
}

// Disjoint ranges, moved by kThreads threads (a group or the whole block;
// this one is `tid` among them) that are part `part` of `parts` sharing the
// copy.
template <int kBytes, i64 kThreads, int kUnroll>
JW_INLINE void copy_disjoint(u8* __restrict__ dst, const u8* __restrict__ src,
                             i64 size, i64 tid, i64 part, i64 parts) {
  typedef typename Unit<kBytes>::type U;
  const Split split = split_range<kBytes>(dst, size);
  if (part == 0) {
    for (i64 i = tid; i < split.head; i += kThreads) dst[i] = src[i];
    const i64 tail_start = split.head + split.units * kBytes;
    for (i64 i = tid; i < split.tail; i += kThreads) {
      dst[tail_start + i] = src[tail_start + i];
    }
  }
  U* __restrict__ dst_units = reinterpret_cast<U*>(dst + split.head);
  const U* __restrict__ src_units =
      reinterpret_cast<const U*>(src + split.head);
  const i64 stride = parts * kThreads;
  i64 i = part * kThreads + tid;
  // Several loads in flight per thread before the stores.
  for (; i + (kUnroll - 1) * stride < split.units; i += kUnroll * stride) {
    U staged[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) staged[k] = src_units[i + k * stride];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) dst_units[i + k * stride] = staged[k];
  }
  for (; i < split.units; i += stride) dst_units[i] = src_units[i];
}

// Moves `count` elements of type E from src to dst (which may overlap), one
// chunk of kThreads * kUnroll elements at a time, whole chunk loaded before
// any of it is stored. Chunks go up (forward) or down. Called by every
// thread of the block with the same arguments.
template <typename E, i64 kThreads, int kUnroll>
JW_INLINE void move_chunks(E* dst, const E* src, i64 count, bool forward) {
  constexpr i64 kChunk = kThreads * kUnroll;
  const i64 chunks = (count + kChunk - 1) / kChunk;
  const i64 tid = thread_index();
  for (i64 c = 0; c < chunks; ++c) {
    const i64 base = (forward ? c : chunks - 1 - c) * kChunk;
    E staged[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const i64 i = base + k * kThreads + tid;
      if (i < count) staged[k] = src[i];
    }
    // Every thread's loads of this chunk happen before anyone's stores.
    block_barrier();
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const i64 i = base + k * kThreads + tid;
      if (i < count) dst[i] = staged[k];
    }
  }
}

// Overlapping ranges, one block. The three parts of the split are moved in
// address order (head, units, tail) going forward, reversed going backward;
// a later part never reads what an earlier one wrote, because the
// destination lies strictly on the side already consumed.
template <int kBytes, i64 kThreads>
JW_INLINE void move_overlapping(u8* dst, const u8* src, i64 size) {
  typedef typename Unit<kBytes>::type U;
  const Split split = split_range<kBytes>(dst, size);
  const i64 tail_start = split.head + split.units * kBytes;
  U* dst_units = reinterpret_cast<U*>(dst + split.head);
  const U* src_units = reinterpret_cast<const U*>(src + split.head);
  if (dst < src) {
    move_chunks<u8, kThreads, 1>(dst, src, split.head, true);
    move_chunks<U, kThreads, 1>(dst_units, src_units, split.units, true);
    move_chunks<u8, kThreads, 1>(dst + tail_start, src + tail_start, split.tail,
                                 true);
  } else {
    move_chunks<u8, kThreads, 1>(dst + tail_start, src + tail_start, split.tail,
                                 false);
    move_chunks<U, kThreads, 1>(dst_units, src_units, split.units, false);
    move_chunks<u8, kThreads, 1>(dst, src, split.head, false);
  }
}

// The widest unit both addresses can use at once.
JW_INLINE int common_unit_bytes(const u8* dst, const u8* src) {
  const u64 difference =
      reinterpret_cast<u64>(dst) ^ reinterpret_cast<u64>(src);
  if (difference % 16 == 0) return 16;
  if (difference % 4 == 0) return 4;
  return 1;
}

// The rare paths (see JW_RARE_PATH): the hot loop of the kernel is 16-byte
// units over disjoint ranges.
template <i64 kThreads>
JW_RARE_PATH void copy_disjoint_narrow(u8* dst, const u8* src, i64 size,
                                       i64 tid, i64 part, i64 parts, int unit) {
  if (unit == 4) {
    copy_disjoint<4, kThreads, 1>(dst, src, size, tid, part, parts);
  } else {
    copy_disjoint<1, kThreads, 1>(dst, src, size, tid, part, parts);
  }
}

// Disjoint ranges of any alignment, moved by kThreads threads.
template <i64 kThreads>
JW_INLINE void copy_disjoint_any(u8* __restrict__ dst,
                                 const u8* __restrict__ src, i64 size, i64 tid,
                                 i64 part, i64 parts, int unit) {
  if (unit == 16) {
    copy_disjoint<16, kThreads, kHotUnroll>(dst, src, size, tid, part, parts);
  } else {
    copy_disjoint_narrow<kThreads>(dst, src, size, tid, part, parts, unit);
  }
}

// One copy as the arrays describe it.
struct Copy {
  u8* dst;
  const u8* src;
  i64 size;
  JW_INLINE bool empty() const { return size <= 0 || dst == src; }
  JW_INLINE bool overlapping() const {
    return dst < src + size && src < dst + size;
  }
};

JW_INLINE Copy load_copy(const i64* __restrict__ src_ptrs,
                         const i64* __restrict__ dst_ptrs,
                         const i64* __restrict__ sizes, i64 copy) {
  return Copy{global_pointer<u8>(dst_ptrs[copy]),
              global_pointer<const u8>(src_ptrs[copy]), sizes[copy]};
}

// Up to this size a disjoint copy is one group's work. At 16 KiB a 32-lane
// group issues 8 rounds of 4 vectors per lane, a little longer than the
// latency of the batch's first loads; larger copies are the block's.
constexpr i64 kGroupCopyBytes = 16 << 10;

// Overlap within a pair is rare: 16-byte units when the two ends are
// congruent, else bytes.
template <i64 kThreads>
JW_RARE_PATH void move_overlapping_any(u8* dst, const u8* src, i64 size,
                                       int unit) {
  if (unit == 16) {
    move_overlapping<16, kThreads>(dst, src, size);
  } else {
    move_overlapping<1, kThreads>(dst, src, size);
  }
}

}  // namespace batch_memcpy_detail

template <typename TNumCopies, i64 kBlockSize>
__global__ JW_LAUNCH_BOUNDS(kBlockSize) void batch_memcpy(
    const i64* __restrict__ src_ptrs, const i64* __restrict__ dst_ptrs,
    const i64* __restrict__ sizes, TNumCopies num_copies) {
  using namespace batch_memcpy_detail;
  static_assert(kBlockSize >= 1 && kBlockSize <= kMaxBlockThreads,
                "the host validates BLOCK_SIZE");
  // Groups are whole warps, so a group's lanes run its copy in step; a
  // BLOCK_SIZE that is not a multiple of the warp leaves its last lanes
  // out of step 1 (they still work in step 2).
  constexpr i64 kGroupLanes = kBlockSize < kWarpSize ? kBlockSize : kWarpSize;
  constexpr i64 kGroups = kBlockSize / kGroupLanes;
  // Step 1 marks the copies of the batch it leaves to step 2, which lists
  // them (group indices, in order).
  __shared__ bool for_block[kGroups];
  __shared__ i32 block_copies[kGroups];
  __shared__ i32 block_copy_count;
  const i64 copies = static_cast<i64>(num_copies);
  const i64 part = block_index_y();
  const i64 parts = grid_blocks_y();
  const i64 group = thread_index() / kGroupLanes;
  const i64 lane = thread_index() % kGroupLanes;
  for (i64 first = static_cast<i64>(block_index_x()) * kGroups; first < copies;
       first += static_cast<i64>(grid_blocks_x()) * kGroups) {
    // Step 1: small disjoint copies, one per group, each shared by the
    // `parts` blocks of the batch. Uniform per group.
    if (group < kGroups) {
      const i64 copy = first + group;
      bool block_work = false;
      if (copy < copies) {
        const Copy c = load_copy(src_ptrs, dst_ptrs, sizes, copy);
        if (!c.empty()) {
          block_work = c.size > kGroupCopyBytes || c.overlapping();
          if (!block_work) {
            copy_disjoint_any<kGroupLanes>(c.dst, c.src, c.size, lane, part,
                                           parts,
                                           common_unit_bytes(c.dst, c.src));
          }
        }
      }
      if (lane == 0) for_block[group] = block_work;
    }
    block_barrier();
    if (thread_index() == 0) {
      i32 count = 0;
      for (i32 g = 0; g < kGroups; ++g) {
        if (for_block[g]) block_copies[count++] = g;
      }
      block_copy_count = count;
    }
    block_barrier();
    // Step 2: the rest, each by whole blocks. The batch's `parts` blocks
    // share them out: `shares` blocks per copy, so that a batch of many
    // large copies gives each block whole copies (long unrolled loops)
    // rather than a sliver of every one. An overlapping pair is its first
    // share's alone. Uniform per block, so the barriers inside
    // move_overlapping are reached by all its threads.
    const i64 large = block_copy_count;
    if (large > 0) {
      const i64 shares = (parts + large - 1) / large;
      for (i64 item = part; item < large * shares; item += parts) {
        const Copy c = load_copy(src_ptrs, dst_ptrs, sizes,
                                 first + block_copies[item / shares]);
        const i64 share = item % shares;
        const int unit = common_unit_bytes(c.dst, c.src);
        if (c.overlapping()) {
          if (share == 0) {
            move_overlapping_any<kBlockSize>(c.dst, c.src, c.size, unit);
          }
        } else {
          copy_disjoint_any<kBlockSize>(c.dst, c.src, c.size, thread_index(),
                                        share, shares, unit);
        }
      }
    }
    // The flags and the list are the next batch's to write.
    block_barrier();
  }
}

}  // namespace jw::kernels
