// pack_unpack_seq.cuh — vllm.v1.attention.ops.pack_seq and unpack_seq
// (KERNELS.md 6 and 7): variable-length rows <-> a padded [B, L_max, D]
// batch.
//
// Launch: grid = (B, ceil(L_max / BLOCK_T), ceil(D / BLOCK_D)), y and z
// capped by the host (blocks stride the tiles), kThreads threads. Block
// (b, ty, tz) first sums lengths[0..b) (its start row) across its threads,
// then moves the BLOCK_T x BLOCK_D tile at (ty, tz) of request b.
//
// Specialization: BLOCK_T and BLOCK_D are template arguments (constant tile
// arithmetic). kAligned says the key proved both tensors 16-byte aligned
// and BLOCK_D * element size is a multiple of 16; D is do_not_specialize,
// so whether D * element size is a multiple of 16 as well is checked once
// per block at run time, and tiles then move as 16-byte vectors. Rows past
// N are never touched (a packed row whose source lies past N is padding).
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {
namespace pack_detail {

// pad_value as the element type: float types round to nearest even; uint8
// takes the byte the value names (KERNELS.md: "for uint8 an exact byte"),
// clamped to [0, 255] and NaN -> 0 so no conversion is undefined.
template <typename T, typename TPad>
JW_INLINE T pad_element(TPad pad_value) {
  if constexpr (is_same_type<T, u8>::value) {
    const double value = static_cast<double>(pad_value);
    if (!(value > 0.0)) return u8(0);
    if (value >= 255.0) return u8(255);
    return static_cast<u8>(value);
  } else {
    return from_float<T>(static_cast<float>(pad_value));
  }
}

// Where a block's tile is and which request it belongs to.
struct Tile {
  i64 request;
  i64 start_row;  // lengths[0] + ... + lengths[request - 1]
  i64 length;     // lengths[request]
  i64 t0;         // first packed position of the tile
  i64 d0;         // first column of the tile
};

template <typename T, int kPerAccess, i64 kBlockT, i64 kBlockD, int kThreads,
          bool kPack>
JW_INLINE void move_tile(const T* __restrict__ in, T* __restrict__ out,
                         const Tile& tile, i64 rows, i64 columns, i64 l_max,
                         T pad) {
  typedef Access<T, kPerAccess> A;
  constexpr i64 kAccessesPerRow = kBlockD / kPerAccess;
  const typename A::type pad_access = A::splat(pad);
  for (i64 i = thread_index(); i < kBlockT * kAccessesPerRow; i += kThreads) {
    const i64 t = tile.t0 + i / kAccessesPerRow;
    const i64 d = tile.d0 + (i % kAccessesPerRow) * kPerAccess;
    if (t >= l_max || d >= columns) continue;
    const i64 packed = (tile.request * l_max + t) * columns + d;
    const i64 row = tile.start_row + t;
    const bool real = t < tile.length && row < rows;
    if constexpr (kPack) {
      A::store(out + packed,
               real ? A::load(in + row * columns + d) : pad_access);
    } else if (real) {
      A::store(out + row * columns + d, A::load(in + packed));
    }
  }
}

template <typename T, i64 kBlockT, i64 kBlockD, int kThreads, bool kAligned,
          bool kPack>
JW_INLINE void move_request(const T* __restrict__ in,
                            const i32* __restrict__ lengths,
                            T* __restrict__ out, i64 rows, i64 columns,
                            i64 l_max, T pad) {
  static_assert(kBlockT >= 1 && kBlockD >= 1, "the host validates the tile");
  constexpr int kPerVector = Vector<T>::kElements;
  static_assert(!kAligned || kBlockD % kPerVector == 0,
                "aligned tiles hold whole vectors");
  Tile tile;
  tile.request = block_index_x();
  i64 partial = 0;
  for (i64 i = thread_index(); i < tile.request; i += kThreads) {
    partial += lengths[i];
  }
  tile.start_row = block_sum(partial);
  tile.length = lengths[tile.request];
  const bool vectors =
      kAligned && (columns * static_cast<i64>(sizeof(T))) % kVectorBytes == 0;
  for (i64 ty = block_index_y(); ty * kBlockT < l_max; ty += grid_blocks_y()) {
    tile.t0 = ty * kBlockT;
    for (i64 tz = block_index_z(); tz * kBlockD < columns;
         tz += grid_blocks_z()) {
      tile.d0 = tz * kBlockD;
      if (kAligned && vectors) {
        move_tile<T, kAligned ? kPerVector : 1, kBlockT, kBlockD, kThreads,
                  kPack>(in, out, tile, rows, columns, l_max, pad);
      } else {
        move_tile<T, 1, kBlockT, kBlockD, kThreads, kPack>(in, out, tile, rows,
                                                           columns, l_max, pad);
      }
    }
  }
}

}  // namespace pack_detail

template <typename T, typename TN, typename TD, typename TLMax, typename TPad,
          i64 kBlockT, i64 kBlockD, int kThreads, bool kAligned>
__global__ JW_LAUNCH_BOUNDS(kThreads) void pack_seq(
    const T* __restrict__ x, const i32* __restrict__ lengths,
    T* __restrict__ out, TN N, TD D, TLMax L_max, TPad pad_value) {
  pack_detail::move_request<T, kBlockT, kBlockD, kThreads, kAligned, true>(
      x, lengths, out, static_cast<i64>(N), static_cast<i64>(D),
      static_cast<i64>(L_max), pack_detail::pad_element<T>(pad_value));
}

template <typename T, typename TN, typename TD, typename TLMax, i64 kBlockT,
          i64 kBlockD, int kThreads, bool kAligned>
__global__ JW_LAUNCH_BOUNDS(kThreads) void unpack_seq(
    const T* __restrict__ packed, const i32* __restrict__ lengths,
    T* __restrict__ out, TN N, TD D, TLMax L_max) {
  pack_detail::move_request<T, kBlockT, kBlockD, kThreads, kAligned, false>(
      packed, lengths, out, static_cast<i64>(N), static_cast<i64>(D),
      static_cast<i64>(L_max), T{});
}

}  // namespace jw::kernels
