// prepare_pos_seq_lens.cuh —
// vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens (docs/kernels.md,
// 8. prepare_pos_seq_lens): sequence length and token positions of every
// request in the batch.
//
// Launch: one group of blockDim.x lanes per request slot, blockDim.y groups
// per block; a block takes blockDim.y * kRequests consecutive slots per
// pass (blocks stride the passes up to max(num_reqs, seq_lens_len)), group
// y the slots y, y + blockDim.y, ... of them, each level of loads for all
// of them at once (query bounds and idx_mapping, then
// num_computed_tokens). Slot b < num_reqs writes seq_lens[b] and its
// query's positions, as 16-byte vectors of two when positions is 16-byte
// aligned (TokenSpan: a query's odd first or last token alone); the others
// zero seq_lens[b]. The host sizes the group to the mean query length at
// two vectors (four tokens) per lane, so short (decode) queries keep every
// lane busy and write coalesced. kRequests is 8, not the token-level
// kernels' 4: the second, dependent level of loads (num_computed_tokens
// through idx_mapping) wants more slots in flight per thread. With one
// 8-byte store per lane and token the kernel stayed at 0.55x of a device
// copy's bandwidth (docs/results/token-kernels.md has the new numbers).
//
// Specialization: num_reqs and seq_lens_len are do_not_specialize; only
// their C++ types (i32/i64/u64) vary. kVectorStores is the key's alignment
// of positions; kRequests (not named by the descriptor) is a tuning choice.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

// Slots per group and pass; the descriptor's grid is sized by it (the
// kernel strides, so any grid is correct).
constexpr int kPrepareRequestsPerGroup = 8;

template <typename TNumReqs, typename TSeqLensLen, bool kVectorStores,
          int kRequests = kPrepareRequestsPerGroup>
__global__ void prepare_pos_seq_lens(
    const i32* __restrict__ idx_mapping,
    const i32* __restrict__ query_start_loc,
    const i32* __restrict__ num_computed_tokens, i32* __restrict__ seq_lens,
    i64* __restrict__ positions, TNumReqs num_reqs, TSeqLensLen seq_lens_len) {
  constexpr u32 kPerVector = kVectorStores ? 2 : 1;  // int64 positions
  const i64 requests = static_cast<i64>(num_reqs);
  const i64 slots_requested = static_cast<i64>(seq_lens_len);
  const i64 slots = requests > slots_requested ? requests : slots_requested;
  const i64 groups = block_threads_y();
  const u32 lanes = block_threads();
  const u32 lane = thread_index();
  const i64 per_pass = groups * kRequests;
  for (i64 base =
           static_cast<i64>(block_index_x()) * per_pass + thread_index_y();
       base < slots; base += static_cast<i64>(grid_blocks_x()) * per_pass) {
    i32 query_start[kRequests];
    i32 query_end[kRequests];
    i32 row[kRequests];
#pragma unroll
    for (int k = 0; k < kRequests; ++k) {
      const i64 slot = base + k * groups;
      query_start[k] = 0;
      query_end[k] = 0;
      row[k] = 0;
      if (slot < requests) {
        query_start[k] = query_start_loc[slot];
        query_end[k] = query_start_loc[slot + 1];
        row[k] = idx_mapping[slot];
      }
    }
    i32 computed[kRequests];
#pragma unroll
    for (int k = 0; k < kRequests; ++k) {
      computed[k] =
          base + k * groups < requests ? num_computed_tokens[row[k]] : 0;
    }
#pragma unroll
    for (int k = 0; k < kRequests; ++k) {
      const i64 slot = base + k * groups;
      if (slot >= slots) break;
      if (slot >= requests) {
        if (lane == 0) seq_lens[slot] = 0;
        continue;
      }
      if (lane == 0) {
        seq_lens[slot] =
            static_cast<i32>(static_cast<i64>(computed[k]) +
                             (static_cast<i64>(query_end[k]) - query_start[k]));
      }
      // positions[t] = offset + t over the query's tokens t.
      const i64 offset = static_cast<i64>(computed[k]) - query_start[k];
      const u32 first = static_cast<u32>(query_start[k]);
      const u32 end = static_cast<u32>(query_end[k]);
      if constexpr (kPerVector == 1) {
        for (u32 token = first + lane; token < end; token += lanes) {
          positions[token] = offset + token;
        }
      } else {
        const TokenSpan<kPerVector> span(first, end);
        for (u32 i = lane; i < span.edges; i += lanes) {
          const u32 token = span.edge(i);
          positions[token] = offset + token;
        }
        for (u32 token = span.body_first + lane * kPerVector;
             token < span.body_end; token += lanes * kPerVector) {
          const u64 a = static_cast<u64>(offset + token);
          const u64 b = a + 1;
          store_bytes16(
              positions + token,
              Bytes16{{static_cast<u32>(a), static_cast<u32>(a >> 32),
                       static_cast<u32>(b), static_cast<u32>(b >> 32)}});
        }
      }
    }
  }
}

}  // namespace jw::kernels
