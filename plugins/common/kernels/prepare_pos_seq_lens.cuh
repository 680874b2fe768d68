// prepare_pos_seq_lens.cuh —
// vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens (KERNELS.md 8):
// sequence length and token positions of every request in the batch.
//
// Launch: one group of blockDim.x lanes per request slot, blockDim.y slots
// per block; blocks stride the slots up to max(num_reqs, seq_lens_len). Slot
// b < num_reqs writes seq_lens[b] and its query's positions; the others zero
// seq_lens[b]. The host sizes the group to the mean query length, so short
// (decode) queries keep every lane busy and write coalesced.
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
  const i64 requests = static_cast<i64>(num_reqs);
  const i64 slots_requested = static_cast<i64>(seq_lens_len);
  const i64 slots = requests > slots_requested ? requests : slots_requested;
  const i64 groups = block_threads_y();
  for (i64 slot = static_cast<i64>(block_index_x()) * groups + thread_index_y();
       slot < slots; slot += static_cast<i64>(grid_blocks_x()) * groups) {
    if (slot >= requests) {
      if (thread_index() == 0) seq_lens[slot] = 0;
      continue;
    }
    const i64 query_start = query_start_loc[slot];
    const i64 query_length = query_start_loc[slot + 1] - query_start;
    const i64 computed = num_computed_tokens[idx_mapping[slot]];
    if (thread_index() == 0) {
      seq_lens[slot] = static_cast<i32>(computed + query_length);
    }
    for (i64 k = thread_index(); k < query_length; k += block_threads()) {
      positions[query_start + k] = computed + k;
    }
  }
}

}  // namespace jw::kernels
