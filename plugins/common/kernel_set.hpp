// The portable kernel set (docs/kernels.md): names, parameter order and
// flags, as one table every backend reads.
//
// The reference-cpu plugin *defines* these schemas with the core; the device
// plugins only read the table to know the parameter order they implement.
// Changing a parameter here changes the schema of every backend at once.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>
#include <span>
#include <string_view>

namespace jitwarm::kernel_set {

inline constexpr std::string_view kComputeSlotMapping =
    "vllm.v1.worker.block_table.compute_slot_mapping";
inline constexpr std::string_view kExpand =
    "vllm.v1.sample.rejection_sampler.expand";
inline constexpr std::string_view kBatchMemcpy =
    "vllm.v1.worker.mamba_utils.batch_memcpy";
inline constexpr std::string_view kZeroKvBlocks =
    "vllm.v1.worker.utils.zero_kv_blocks";
inline constexpr std::string_view kScatterStates =
    "vllm.model_executor.layers.mamba.ops.scatter_states";
inline constexpr std::string_view kPackSeq = "vllm.v1.attention.ops.pack_seq";
inline constexpr std::string_view kUnpackSeq =
    "vllm.v1.attention.ops.unpack_seq";
inline constexpr std::string_view kPreparePosSeqLens =
    "vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens";
inline constexpr std::string_view kRmsNorm =
    "vllm.model_executor.layers.layernorm.rms_norm";
inline constexpr std::string_view kSiluAndMul =
    "vllm.model_executor.layers.activation.silu_and_mul";

// Parameter positions, per kernel, in schema order. Backends index the
// argument array with these.
namespace compute_slot_mapping {
enum : uint32_t {
  query_start_loc,
  positions,
  block_table,
  block_table_stride,
  slot_mapping,
  num_reqs,
  max_num_tokens,
  block_size,
  blocks_per_kv_block,
  cp_world_size,
  cp_rank,
  cp_interleave,
  count
};
}
namespace expand {
enum : uint32_t {
  output,
  x,
  cu_num_tokens,
  replace_from,
  replace_to,
  MAX_NUM_TOKENS,
  count
};
}
namespace batch_memcpy {
enum : uint32_t { src_ptrs, dst_ptrs, sizes, num_copies, BLOCK_SIZE, count };
}
namespace zero_kv_blocks {
enum : uint32_t {
  block_ids,
  seg_addrs,
  seg_block_stride,
  seg_block_bytes,
  n_blocks,
  n_segments,
  count
};
}
namespace scatter_states {
enum : uint32_t {
  state,
  state_stride,
  src,
  indices,
  num_rows,
  ROW_SIZE,
  BLOCK_SIZE,
  count
};
}
namespace pack_seq {
enum : uint32_t {
  x,
  lengths,
  out,
  N,
  D,
  L_max,
  pad_value,
  BLOCK_T,
  BLOCK_D,
  count
};
}
namespace unpack_seq {
enum : uint32_t { packed, lengths, out, N, D, L_max, BLOCK_T, BLOCK_D, count };
}
namespace prepare_pos_seq_lens {
enum : uint32_t {
  idx_mapping,
  query_start_loc,
  num_computed_tokens,
  seq_lens,
  positions,
  num_reqs,
  seq_lens_len,
  count
};
}
namespace rms_norm {
enum : uint32_t { out, x, x_stride, weight, eps, T, H, count };
}
namespace silu_and_mul {
enum : uint32_t { out, x, T, H, count };
}

// The ten schemas, in the order of docs/kernels.md. Static storage.
std::span<const jw_kernel_schema> schemas();
// nullptr when the name is not in the set.
const jw_kernel_schema* find_schema(std::string_view name);
// Parameter names of a schema, in order (static storage), for
// jw_kernel_impl::param_names.
std::span<const char* const> param_names(std::string_view name);

}  // namespace jitwarm::kernel_set
