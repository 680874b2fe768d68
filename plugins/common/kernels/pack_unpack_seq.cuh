// pack_unpack_seq.cuh — vllm.v1.attention.ops.pack_seq and unpack_seq
// (docs/kernels.md, 6. pack_seq and 7. unpack_seq): variable-length rows <-> a
// padded [B, L_max, D] batch.
//
// Launch: grid = (B, ceil(L_max / BLOCK_T), ceil(D / BLOCK_D)), y and z
// capped by the host (blocks stride the tiles), kThreads threads. Block
// (b, ty, tz) sums lengths[0..b) (its start row) across its threads, unless
// its tiles are all padding (pack writes pad values, unpack returns at
// once), then moves the BLOCK_T x BLOCK_D tile at (ty, tz) of request b:
// each thread loads all its accesses of the tile, then stores them.
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
// takes the byte the value names (docs/kernels.md, 6. pack_seq: for uint8 it
// must be an exact byte), clamped to [0, 255] and NaN -> 0 so no conversion
// is undefined.
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

// Where access `i` of a tile lands, and whether it is inside the tensors.
struct TileAccess {
  i64 packed;   // element offset in the padded [B, L_max, D] tensor
  i64 flat;     // element offset in the [N, D] tensor (when `real`)
  bool inside;  // within L_max and D
  bool real;    // a real row (t < length and the row < N), not padding
};

template <int kPerAccess, i64 kBlockD>
JW_INLINE TileAccess locate(const Tile& tile, i64 i, i64 rows, i64 columns,
                            i64 l_max) {
  constexpr i64 kAccessesPerRow = kBlockD / kPerAccess;
  const i64 t = tile.t0 + i / kAccessesPerRow;
  const i64 d = tile.d0 + (i % kAccessesPerRow) * kPerAccess;
  TileAccess a;
  a.inside = t < l_max && d < columns;
  a.packed = (tile.request * l_max + t) * columns + d;
  const i64 row = tile.start_row + t;
  a.real = t < tile.length && row < rows;
  a.flat = row * columns + d;
  return a;
}

// Up to this many accesses per thread a tile is staged in registers: all
// loads first, then all stores, so each thread has them in flight at once.
constexpr int kMaxStagedAccesses = 8;

template <typename T, int kPerAccess, i64 kBlockT, i64 kBlockD, int kThreads,
          bool kPack>
JW_INLINE void move_tile(const T* __restrict__ in, T* __restrict__ out,
                         const Tile& tile, i64 rows, i64 columns, i64 l_max,
                         T pad) {
  typedef Access<T, kPerAccess> A;
  constexpr i64 kAccesses = kBlockT * (kBlockD / kPerAccess);
  constexpr i64 kSteps = (kAccesses + kThreads - 1) / kThreads;
  const typename A::type pad_access = A::splat(pad);
  const i64 tid = thread_index();
  if constexpr (kSteps <= kMaxStagedAccesses) {
    typename A::type staged[kSteps];
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      const i64 i = tid + step * kThreads;
      const TileAccess a =
          locate<kPerAccess, kBlockD>(tile, i, rows, columns, l_max);
      if (i >= kAccesses || !a.inside) continue;
      if constexpr (kPack) {
        staged[step] = a.real ? A::load(in + a.flat) : pad_access;
      } else if (a.real) {
        staged[step] = A::load(in + a.packed);
      }
    }
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      const i64 i = tid + step * kThreads;
      const TileAccess a =
          locate<kPerAccess, kBlockD>(tile, i, rows, columns, l_max);
      if (i >= kAccesses || !a.inside) continue;
      if constexpr (kPack) {
        A::store(out + a.packed, staged[step]);
      } else if (a.real) {
        A::store(out + a.flat, staged[step]);
      }
    }
  } else {
    for (i64 i = tid; i < kAccesses; i += kThreads) {
      const TileAccess a =
          locate<kPerAccess, kBlockD>(tile, i, rows, columns, l_max);
      if (!a.inside) continue;
      if constexpr (kPack) {
        A::store(out + a.packed, a.real ? A::load(in + a.flat) : pad_access);
      } else if (a.real) {
        A::store(out + a.flat, A::load(in + a.packed));
      }
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
  tile.length = lengths[tile.request];
  // The block's tiles start at its lowest position: when even that is past
  // the request's length, every tile is padding (pack) or nothing (unpack)
  // and the start row is never used. Uniform across the block.
  const i64 first_t = static_cast<i64>(block_index_y()) * kBlockT;
  const bool has_real_rows = first_t < tile.length && first_t < l_max;
  if (!kPack && !has_real_rows) return;
  tile.start_row = 0;
  if (has_real_rows) {
    i64 partial = 0;
    for (i64 i = thread_index(); i < tile.request; i += kThreads) {
      partial += lengths[i];
    }
    tile.start_row = block_sum(partial);
  }
  const bool vectors =
      kAligned && (columns * static_cast<i64>(sizeof(T))) % kVectorBytes == 0;
  for (i64 ty = block_index_y(); ty * kBlockT < l_max; ty += grid_blocks_y()) {
    tile.t0 = ty * kBlockT;
    if (!kPack && tile.t0 >= tile.length) break;  // only padding follows
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
