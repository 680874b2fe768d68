// prepare_pos_seq_lens.cuh —
// vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens (docs/kernels.md,
// 8. prepare_pos_seq_lens): sequence length and token positions of every
// request in the batch.
//
// Launch: one group of blockDim.x lanes per request slot, blockDim.y groups
// per block; a block takes blockDim.y * kRequestsPerGroup consecutive slots
// per pass (blocks stride the passes up to max(num_reqs, seq_lens_len)),
// group y the slots y, y + blockDim.y, ... of them, each level of loads for
// all of them at once (query bounds and idx_mapping, then
// num_computed_tokens). Slot b < num_reqs writes seq_lens[b] and its
// query's positions; the others zero seq_lens[b]. The host sizes the group
// to the mean query length, so short (decode) queries keep every lane busy
// and write coalesced.
//
// Specialization: num_reqs and seq_lens_len are do_not_specialize; only
// their C++ types (i32/i64/u64) vary.
#pragma once

#include "kernel_support.cuh"

namespace jw::kernels {

template <typename TNumReqs, typename TSeqLensLen>
__global__ void prepare_pos_seq_lens(
    const i32* __restrict__ idx_mapping,
    const i32* __restrict__ query_start_loc,
    const i32* __restrict__ num_computed_tokens, i32* __restrict__ seq_lens,
    i64* __restrict__ positions, TNumReqs num_reqs, TSeqLensLen seq_lens_len) {
  constexpr int kR = kRequestsPerGroup;
  const i64 requests = static_cast<i64>(num_reqs);
  const i64 slots_requested = static_cast<i64>(seq_lens_len);
  const i64 slots = requests > slots_requested ? requests : slots_requested;
  const i64 groups = block_threads_y();
  const i64 lanes = block_threads();
  const i64 lane = thread_index();
  const i64 per_pass = groups * kR;
  for (i64 base =
           static_cast<i64>(block_index_x()) * per_pass + thread_index_y();
       base < slots; base += static_cast<i64>(grid_blocks_x()) * per_pass) {
    i64 query_start[kR];
    i64 query_length[kR];
    i64 row[kR];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i64 slot = base + k * groups;
      query_start[k] = 0;
      query_length[k] = 0;
      row[k] = 0;
      if (slot < requests) {
        query_start[k] = query_start_loc[slot];
        query_length[k] = query_start_loc[slot + 1] - query_start[k];
        row[k] = idx_mapping[slot];
      }
    }
    i64 computed[kR];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      computed[k] =
          base + k * groups < requests ? num_computed_tokens[row[k]] : 0;
    }
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      const i64 slot = base + k * groups;
      if (slot >= slots) break;
      if (slot >= requests) {
        if (lane == 0) seq_lens[slot] = 0;
        continue;
      }
      if (lane == 0) {
        seq_lens[slot] = static_cast<i32>(computed[k] + query_length[k]);
      }
      for (i64 i = lane; i < query_length[k]; i += lanes) {
        positions[query_start[k] + i] = computed[k] + i;
      }
    }
  }
}

}  // namespace jw::kernels
