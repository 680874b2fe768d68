#include "kernel_set.hpp"

#include "schema_builders.hpp"

#include <array>

namespace jitwarm::kernel_set {
namespace {

using namespace schema_builders;

constexpr jw_dtype_set kFloatActivations =
    bit(JW_DTYPE_FLOAT32) | bit(JW_DTYPE_FLOAT16) | bit(JW_DTYPE_BFLOAT16);

// Inputs and outputs of the set are compact unless a stride parameter is
// named; those have a free outer stride and a unit inner stride.
constexpr uint32_t kCompact = JW_PARAM_CONTIGUOUS;
constexpr uint32_t kRowStrided = JW_PARAM_INNER_CONTIGUOUS;
constexpr uint32_t kOut = JW_PARAM_OUTPUT;
constexpr uint32_t kDns = JW_PARAM_DO_NOT_SPECIALIZE;

// 1. compute_slot_mapping
constexpr std::array kComputeSlotMappingParams{
    tensor("query_start_loc", bit(JW_DTYPE_INT32), 1, kCompact),
    tensor("positions", bit(JW_DTYPE_INT64), 1, kCompact),
    tensor("block_table", bit(JW_DTYPE_INT32), 2, kRowStrided),
    integer("block_table_stride"),
    tensor("slot_mapping", bit(JW_DTYPE_INT64), 1, kCompact | kOut),
    integer("num_reqs", kDns),
    integer("max_num_tokens", kDns),
    integer("block_size"),
    constexpr_param("blocks_per_kv_block", 1),
    constexpr_param("cp_world_size", 1),
    constexpr_param("cp_rank", 0),
    constexpr_param("cp_interleave", 1),
};

// 2. expand
constexpr jw_dtype_set kExpandDtypes =
    bit(JW_DTYPE_INT32) | bit(JW_DTYPE_INT64) | bit(JW_DTYPE_FLOAT32);
constexpr std::array kExpandParams{
    tensor("output", kExpandDtypes, 1, kCompact | kOut, "x"),
    tensor("x", kExpandDtypes, 1, kCompact),
    tensor("cu_num_tokens", bit(JW_DTYPE_INT32), 1, kCompact),
    scalar_like("replace_from", "x", kDns),
    scalar_like("replace_to", "x", kDns),
    constexpr_param("MAX_NUM_TOKENS"),
};

// 3. batch_memcpy
constexpr std::array kBatchMemcpyParams{
    tensor("src_ptrs", bit(JW_DTYPE_INT64), 1, kCompact),
    tensor("dst_ptrs", bit(JW_DTYPE_INT64), 1, kCompact),
    tensor("sizes", bit(JW_DTYPE_INT64), 1, kCompact),
    integer("num_copies", kDns),
    constexpr_param("BLOCK_SIZE"),
};

// 4. zero_kv_blocks
constexpr std::array kZeroKvBlocksParams{
    tensor("block_ids", bit(JW_DTYPE_INT32), 1, kCompact),
    tensor("seg_addrs", bit(JW_DTYPE_INT64), 1, kCompact),
    tensor("seg_block_stride", bit(JW_DTYPE_INT64), 1, kCompact),
    tensor("seg_block_bytes", bit(JW_DTYPE_INT64), 1, kCompact),
    integer("n_blocks"),
    integer("n_segments", kDns),
};

// 5. scatter_states (any dtype)
constexpr std::array kScatterStatesParams{
    tensor("state", 0, 2, kRowStrided | kOut),
    integer("state_stride"),
    tensor("src", 0, 2, kCompact, "state"),
    tensor("indices", bit(JW_DTYPE_INT32) | bit(JW_DTYPE_INT64), 1, kCompact),
    integer("num_rows", kDns),
    constexpr_param("ROW_SIZE"),
    constexpr_param("BLOCK_SIZE"),
};

// 6. pack_seq and 7. unpack_seq
constexpr jw_dtype_set kPackDtypes = kFloatActivations | bit(JW_DTYPE_UINT8);
constexpr std::array kPackSeqParams{
    tensor("x", kPackDtypes, 2, kCompact),
    tensor("lengths", bit(JW_DTYPE_INT32), 1, kCompact),
    tensor("out", kPackDtypes, 3, kCompact | kOut, "x"),
    integer("N", kDns),
    integer("D", kDns),
    integer("L_max", kDns),
    floating("pad_value"),
    constexpr_param("BLOCK_T"),
    constexpr_param("BLOCK_D"),
};
constexpr std::array kUnpackSeqParams{
    tensor("packed", kPackDtypes, 3, kCompact),
    tensor("lengths", bit(JW_DTYPE_INT32), 1, kCompact),
    tensor("out", kPackDtypes, 2, kCompact | kOut, "packed"),
    integer("N", kDns),
    integer("D", kDns),
    integer("L_max", kDns),
    constexpr_param("BLOCK_T"),
    constexpr_param("BLOCK_D"),
};

// 8. prepare_pos_seq_lens
constexpr std::array kPreparePosSeqLensParams{
    tensor("idx_mapping", bit(JW_DTYPE_INT32), 1, kCompact),
    tensor("query_start_loc", bit(JW_DTYPE_INT32), 1, kCompact),
    tensor("num_computed_tokens", bit(JW_DTYPE_INT32), 1, kCompact),
    tensor("seq_lens", bit(JW_DTYPE_INT32), 1, kCompact | kOut),
    tensor("positions", bit(JW_DTYPE_INT64), 1, kCompact | kOut),
    integer("num_reqs", kDns),
    integer("seq_lens_len", kDns),
};

// 9. rms_norm
constexpr std::array kRmsNormParams{
    tensor("out", kFloatActivations, 2, kCompact | kOut, "x"),
    tensor("x", kFloatActivations, 2, kRowStrided),
    integer("x_stride"),
    tensor("weight", kFloatActivations, 1, kCompact, "x"),
    floating("eps"),
    integer("T", kDns),
    integer("H"),
};

// 10. silu_and_mul
constexpr std::array kSiluAndMulParams{
    tensor("out", kFloatActivations, 2, kCompact | kOut, "x"),
    tensor("x", kFloatActivations, 2, kCompact),
    integer("T", kDns),
    integer("H"),
};

template <std::size_t N>
constexpr jw_kernel_schema schema(std::string_view name, const char* summary,
                                  const std::array<jw_param_desc, N>& params,
                                  const char* launch_rule) {
  return jw_kernel_schema{
      sizeof(jw_kernel_schema), nullptr,    name.data(), summary, params.data(),
      static_cast<uint32_t>(N), launch_rule};
}

const std::array kSchemas{
    schema(kComputeSlotMapping,
           "Maps each token's position to its slot in the paged KV cache.",
           kComputeSlotMappingParams,
           "one program per request plus one for the padding tail; tokens "
           "of a request are spread over the program's threads"),
    schema(kExpand, "Expands one value per request to one value per token.",
           kExpandParams, "one program per request (B = x.shape[0])"),
    schema(kBatchMemcpy, "Copies many independent byte ranges in one launch.",
           kBatchMemcpyParams,
           "one program per copy; BLOCK_SIZE threads per program"),
    schema(kZeroKvBlocks, "Zeroes the given blocks in several cache segments.",
           kZeroKvBlocksParams, "one program per (segment, block) pair"),
    schema(kScatterStates,
           "Writes state rows at the given indices; negative indices skip.",
           kScatterStatesParams,
           "one program per source row; BLOCK_SIZE elements per step"),
    schema(kPackSeq, "Packs variable-length sequences into a padded batch.",
           kPackSeqParams,
           "programs over (B, ceil(L_max / BLOCK_T), ceil(D / BLOCK_D))"),
    schema(kUnpackSeq, "Unpacks a padded batch into variable-length rows.",
           kUnpackSeqParams,
           "programs over (B, ceil(L_max / BLOCK_T), ceil(D / BLOCK_D))"),
    schema(kPreparePosSeqLens,
           "Computes sequence lengths and token positions per request.",
           kPreparePosSeqLensParams,
           "one program per request slot up to seq_lens_len"),
    schema(kRmsNorm, "Root-mean-square normalization of each row.",
           kRmsNormParams, "one program per row (T)"),
    schema(kSiluAndMul, "silu(x[:, :H]) * x[:, H:] per row.", kSiluAndMulParams,
           "programs over rows (T) and column blocks of H"),
};

template <std::size_t N>
constexpr std::array<const char*, N> names_of(
    const std::array<jw_param_desc, N>& params) {
  std::array<const char*, N> names{};
  for (std::size_t i = 0; i < N; ++i) names[i] = params[i].name;
  return names;
}

const auto kComputeSlotMappingNames = names_of(kComputeSlotMappingParams);
const auto kExpandNames = names_of(kExpandParams);
const auto kBatchMemcpyNames = names_of(kBatchMemcpyParams);
const auto kZeroKvBlocksNames = names_of(kZeroKvBlocksParams);
const auto kScatterStatesNames = names_of(kScatterStatesParams);
const auto kPackSeqNames = names_of(kPackSeqParams);
const auto kUnpackSeqNames = names_of(kUnpackSeqParams);
const auto kPreparePosSeqLensNames = names_of(kPreparePosSeqLensParams);
const auto kRmsNormNames = names_of(kRmsNormParams);
const auto kSiluAndMulNames = names_of(kSiluAndMulParams);

}  // namespace

std::span<const jw_kernel_schema> schemas() {
  return kSchemas;
}

const jw_kernel_schema* find_schema(std::string_view name) {
  for (const auto& s : kSchemas) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::span<const char* const> param_names(std::string_view name) {
  if (name == kComputeSlotMapping) return kComputeSlotMappingNames;
  if (name == kExpand) return kExpandNames;
  if (name == kBatchMemcpy) return kBatchMemcpyNames;
  if (name == kZeroKvBlocks) return kZeroKvBlocksNames;
  if (name == kScatterStates) return kScatterStatesNames;
  if (name == kPackSeq) return kPackSeqNames;
  if (name == kUnpackSeq) return kUnpackSeqNames;
  if (name == kPreparePosSeqLens) return kPreparePosSeqLensNames;
  if (name == kRmsNorm) return kRmsNormNames;
  if (name == kSiluAndMul) return kSiluAndMulNames;
  return {};
}

}  // namespace jitwarm::kernel_set
