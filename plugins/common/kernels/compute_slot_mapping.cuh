// compute_slot_mapping.cuh — vllm.v1.worker.block_table.compute_slot_mapping
// (docs/kernels.md, 1. compute_slot_mapping): the paged-KV-cache slot of every
// token, PAD (-1) past the last token.
//
// Launch: one group of blockDim.x lanes per request, blockDim.y groups per
// block. Every block does two things, so any grid is correct (the host
// picks one that covers both at once):
//   - requests: a block takes blockDim.y * kRequests consecutive requests
//     per pass (blocks stride the passes), group y the requests y, y +
//     blockDim.y, ... of them. A lane's item is an aligned pair of tokens
//     when positions and slot_mapping are 16-byte aligned (one 16-byte load,
//     one 16-byte store; a request's odd first or last token is an item of
//     its own), else one token. Round by round, each level of loads is
//     issued for item i of all of a group's requests before the next (query
//     bounds once; positions; block-table entries), then the stores, so a
//     thread has several requests' loads in flight. The host sizes the
//     group to the mean items per request.
//   - the padding tail [num_tokens, max_num_tokens), which all threads of
//     all blocks share.
// The arithmetic is 32-bit (FastSlotRule: a multiply-high per division by
// the block size) whenever the positions and the virtual block are below
// 2^31, and 64-bit otherwise: the GPUs have no integer divider, and the
// 64-bit divisions by the block size made the kernel issue-bound (0.40x of
// a device copy's bandwidth at the bench's shapes, a million requests of 8
// tokens). What bounds it now: each token's block-table read is a 32-byte
// sector from DRAM (3.6 distinct sectors per request at the bench's shapes,
// where the bench counts 4 bytes per token), so even at a copy's speed the
// kernel would reach only about 0.66x of the bytes the bench counts
// (docs/results/token-kernels.md).
//
// Specialization: block_size and block_table_stride follow their key class
// (1 folded, multiple of 16 assumed); the four constexprs are template
// arguments, so with cp_world_size = cp_interleave = 1 the context-parallel
// arithmetic folds away and V = block_size * blocks_per_kv_block. kVectors
// is the key's alignment of positions and slot_mapping; kRequests (not
// named by the descriptor) is a tuning choice.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

// Where a position lands: whether this context-parallel rank holds it, the
// block-table entry (within the request's row) and the offset in the block.
struct SlotPlace {
  bool local;
  i64 entry;
  i64 offset;
};

// The arithmetic of docs/kernels.md, 1. compute_slot_mapping, split at the
// block-table load.
template <int kBlockSizeClass, i64 kBlocksPerKvBlock, i64 kCpWorldSize,
          i64 kCpRank, i64 kCpInterleave>
struct SlotRule {
  i64 block_size;
  i64 virtual_block_size;

  template <typename TBlockSize>
  JW_INLINE explicit SlotRule(TBlockSize size)
      : block_size(static_cast<i64>(specialize<kBlockSizeClass>(size))),
        virtual_block_size(block_size * kBlocksPerKvBlock * kCpWorldSize) {}

  JW_INLINE SlotPlace place(i64 position) const {
    const i64 virtual_block = position / virtual_block_size;
    const i64 virtual_offset = position % virtual_block_size;
    SlotPlace p;
    p.local = (virtual_offset / kCpInterleave) % kCpWorldSize == kCpRank;
    const i64 local_offset =
        (virtual_offset / (kCpWorldSize * kCpInterleave)) * kCpInterleave +
        virtual_offset % kCpInterleave;
    p.entry = virtual_block * kBlocksPerKvBlock + local_offset / block_size;
    p.offset = local_offset % block_size;
    return p;
  }

  JW_INLINE i64 slot(const SlotPlace& p, i64 block_number) const {
    return p.local ? block_number * block_size + p.offset : i64{-1};
  }
};

// n / d for 0 <= n < 2^31 and a divisor 1 <= d <= 2^31 that is the same for
// the whole launch: a multiply-high and a shift (the round-up method, exact
// in that range: the multiplier is ceil(2^(31 + l) / d) with l = ceil(log2
// d)). The GPUs have no integer divider; a 64-bit division is a subroutine
// of dozens of instructions, which made the kernel issue-bound.
struct FastDivisor {
  u32 divisor;
  u32 multiplier;
  u32 shift;

  JW_INLINE explicit FastDivisor(u32 d) : divisor(d), multiplier(0), shift(0) {
    if (d > 1) {
      u32 log2 = 1;
      while ((u64{1} << log2) < d) ++log2;
      multiplier = static_cast<u32>(((u64{1} << (31 + log2)) + d - 1) / d);
      shift = log2 - 1;
    }
  }
  JW_INLINE u32 quotient(u32 n) const {
    const u32 high =
        static_cast<u32>((static_cast<u64>(n) * multiplier) >> 32) >> shift;
    return divisor == 1 ? n : high;
  }
};

// SlotRule's arithmetic in 32 bits, for positions below 2^31 and a virtual
// block (block_size * blocks_per_kv_block * cp_world_size) of at most 2^31:
// the common case, checked per launch (the block size) and per position.
template <i64 kBlocksPerKvBlock, i64 kCpWorldSize, i64 kCpRank,
          i64 kCpInterleave>
struct FastSlotRule {
  static constexpr bool kPlain = kBlocksPerKvBlock == 1 && kCpWorldSize == 1;
  static constexpr i64 kLimit = i64{1} << 31;
  bool usable;
  FastDivisor virtual_block;
  FastDivisor block;

  JW_INLINE explicit FastSlotRule(i64 block_size)
      : usable(block_size <= kLimit &&
               kBlocksPerKvBlock * kCpWorldSize <= kLimit &&
               block_size * (kBlocksPerKvBlock * kCpWorldSize) <= kLimit),
        virtual_block(usable ? static_cast<u32>(block_size * kBlocksPerKvBlock *
                                                kCpWorldSize)
                             : 1u),
        block(usable && !kPlain ? static_cast<u32>(block_size) : 1u) {}

  JW_INLINE bool applies(i64 position) const {
    return usable && static_cast<u64>(position) < static_cast<u64>(kLimit);
  }
  // SlotPlace with the offset in 32 bits: fewer registers per token held
  // while its table load is in flight.
  struct Place {
    bool local;
    i64 entry;
    u32 offset;
  };
  // For a position that applies.
  JW_INLINE Place place(i64 position) const {
    const u32 p = static_cast<u32>(position);
    const u32 vb = virtual_block.quotient(p);
    const u32 vo = p - vb * virtual_block.divisor;
    Place place;
    if constexpr (kPlain) {
      place.local = true;
      place.entry = vb;
      place.offset = vo;
    } else {
      const u64 o = vo;
      place.local =
          static_cast<i64>((o / kCpInterleave) % kCpWorldSize) == kCpRank;
      const u32 lo = static_cast<u32>((o / (kCpWorldSize * kCpInterleave)) *
                                          kCpInterleave +
                                      o % kCpInterleave);
      const u32 q = block.quotient(lo);
      place.entry = static_cast<i64>(vb) * kBlocksPerKvBlock + q;
      place.offset = lo - q * block.divisor;
    }
    return place;
  }
};

template <typename TTableStride, int kTableStrideClass, typename TNumReqs,
          typename TMaxNumTokens, typename TBlockSize, int kBlockSizeClass,
          i64 kBlocksPerKvBlock, i64 kCpWorldSize, i64 kCpRank,
          i64 kCpInterleave, bool kVectors, int kRequests = kRequestsPerGroup>
__global__ void compute_slot_mapping(
    const i32* __restrict__ query_start_loc, const i64* __restrict__ positions,
    const i32* __restrict__ block_table, TTableStride block_table_stride,
    i64* __restrict__ slot_mapping, TNumReqs num_reqs,
    TMaxNumTokens max_num_tokens, TBlockSize block_size) {
  static_assert(kBlocksPerKvBlock >= 1 && kCpWorldSize >= 1 &&
                    kCpInterleave >= 1 && kCpRank >= 0 &&
                    kCpRank < kCpWorldSize,
                "the host validates the constexprs");
  constexpr i64 kPad = -1;
  constexpr int kR = kRequests;
  // A lane takes an aligned pair of tokens (one 16-byte load of positions,
  // one 16-byte store of slots) or, unaligned, one token.
  constexpr u32 kPerItem = kVectors ? 2 : 1;
  const i64 requests = static_cast<i64>(num_reqs);
  const u32 lanes = block_threads();
  const i64 groups = block_threads_y();
  const u32 lane = thread_index();
  const i64 table_stride =
      static_cast<i64>(specialize<kTableStrideClass>(block_table_stride));
  const SlotRule<kBlockSizeClass, kBlocksPerKvBlock, kCpWorldSize, kCpRank,
                 kCpInterleave>
      rule(block_size);
  const FastSlotRule<kBlocksPerKvBlock, kCpWorldSize, kCpRank, kCpInterleave>
      fast(rule.block_size);

  // Item `item` of a request [first, end): its first token and whether it
  // is a whole pair (else one token: a request's odd first or last token).
  struct Item {
    u32 token;
    bool pair;
  };
  const auto item_of = [&](u32 first, u32 end, u32 item) {
    Item it;
    if constexpr (kPerItem == 1) {
      it.token = first + item;
      it.pair = false;
    } else {
      const u32 token = (first & ~1u) + 2 * item;
      it.pair = token >= first && token + 1 < end;
      it.token = token < first ? first : token;
    }
    return it;
  };
  // Items of a request: tokens of the aligned pairs it overlaps.
  const auto items_of = [&](u32 first, u32 end) -> u32 {
    if (end <= first) return 0;
    return kPerItem == 1 ? end - first : ((end + 1) >> 1) - (first >> 1);
  };

  const i64 per_pass = groups * kR;
  for (i64 base =
           static_cast<i64>(block_index_x()) * per_pass + thread_index_y();
       base < requests; base += static_cast<i64>(grid_blocks_x()) * per_pass) {
    u32 first[kR];
    u32 end[kR];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i64 request = base + k * groups;
      first[k] = 0;
      end[k] = 0;
      if (request < requests) {
        first[k] = static_cast<u32>(query_start_loc[request]);
        end[k] = static_cast<u32>(query_start_loc[request + 1]);
      }
    }
    u32 items[kR];
    u32 most = 0;
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      items[k] = items_of(first[k], end[k]);
      most = items[k] > most ? items[k] : most;
    }
    // Round by round, item `i` of each of the kR requests: each level of
    // loads for all of them (positions, then block-table entries), then the
    // stores. A request of more items than lanes takes more rounds.
    for (u32 i = lane; i < most; i += lanes) {
      Item item[kR];
      bool has[kR];
      i64 position[kR][kPerItem];
#pragma unroll
      for (int k = 0; k < kR; ++k) {
        has[k] = i < items[k];
        item[k] = item_of(first[k], end[k], i);
#pragma unroll
        for (u32 e = 0; e < kPerItem; ++e) position[k][e] = 0;
        if (has[k]) {
          if (kPerItem == 2 && item[k].pair) {
            const Bytes16 two =
                *reinterpret_cast<const Bytes16*>(positions + item[k].token);
#pragma unroll
            for (u32 e = 0; e < kPerItem; ++e) {
              position[k][e] = static_cast<i64>(
                  (static_cast<u64>(two.word[2 * e + 1]) << 32) |
                  two.word[2 * e]);
            }
          } else {
            position[k][0] = positions[item[k].token];
          }
        }
      }
      // The 32-bit rule for all of them in one batch of table loads, or,
      // when a position or the virtual block is past 2^31 (never in
      // practice), the 64-bit rule token by token: apart, the 64-bit
      // division's registers do not add to the batch's.
      bool in_32_bits = fast.usable;
#pragma unroll
      for (int k = 0; k < kR; ++k) {
#pragma unroll
        for (u32 e = 0; e < kPerItem; ++e) {
          if (has[k] && (e == 0 || item[k].pair)) {
            in_32_bits = in_32_bits && fast.applies(position[k][e]);
          }
        }
      }
      if (in_32_bits) {
        typename decltype(fast)::Place place[kR][kPerItem];
        i32 block_number[kR][kPerItem];
#pragma unroll
        for (int k = 0; k < kR; ++k) {
          const i32* __restrict__ table_row =
              block_table + (base + k * groups) * table_stride;
#pragma unroll
          for (u32 e = 0; e < kPerItem; ++e) {
            place[k][e] = fast.place(position[k][e]);
            block_number[k][e] = 0;
            const bool used = has[k] && (e == 0 || item[k].pair);
            if (used && place[k][e].local) {
              block_number[k][e] = table_row[place[k][e].entry];
            }
          }
        }
#pragma unroll
        for (int k = 0; k < kR; ++k) {
          if (!has[k]) continue;
          const auto slot = [&](u32 e) {
            return place[k][e].local ? static_cast<i64>(block_number[k][e]) *
                                               rule.block_size +
                                           place[k][e].offset
                                     : kPad;
          };
          if (kPerItem == 2 && item[k].pair) {
            const u64 a = static_cast<u64>(slot(0));
            const u64 b = static_cast<u64>(slot(kPerItem - 1));
            store_bytes16(
                slot_mapping + item[k].token,
                Bytes16{{static_cast<u32>(a), static_cast<u32>(a >> 32),
                         static_cast<u32>(b), static_cast<u32>(b >> 32)}});
          } else {
            slot_mapping[item[k].token] = slot(0);
          }
        }
      } else {
#pragma unroll
        for (int k = 0; k < kR; ++k) {
          if (!has[k]) continue;
          const i32* __restrict__ table_row =
              block_table + (base + k * groups) * table_stride;
          // Read again rather than kept: position[] would stay live across
          // the division.
          const Item it = item_of(first[k], end[k], i);
          const u32 count = kPerItem == 2 && it.pair ? 2 : 1;
          for (u32 e = 0; e < count; ++e) {
            const SlotPlace p = rule.place(positions[it.token + e]);
            slot_mapping[it.token + e] =
                rule.slot(p, p.local ? table_row[p.entry] : 0);
          }
        }
      }
    }
  }

  // Padding tail, shared by every thread of every block.
  const i64 threads = static_cast<i64>(lanes) * groups;
  const i64 thread = thread_index_y() * static_cast<i64>(lanes) + lane;
  const i64 num_tokens = query_start_loc[requests];
  const i64 limit = static_cast<i64>(max_num_tokens);
  for (i64 token =
           num_tokens + static_cast<i64>(block_index_x()) * threads + thread;
       token < limit; token += static_cast<i64>(grid_blocks_x()) * threads) {
    slot_mapping[token] = kPad;
  }
}

}  // namespace jw::kernels
