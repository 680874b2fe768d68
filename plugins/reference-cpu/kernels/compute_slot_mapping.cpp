// compute_slot_mapping — the reference for
// vllm.v1.worker.block_table.compute_slot_mapping (docs/kernels.md,
// 1. compute_slot_mapping): each token's position -> its slot in the paged
// KV cache, with context parallelism (cp_world_size ranks, interleaved by
// cp_interleave tokens).
#include <cstdint>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::compute_slot_mapping;

constexpr int64_t kPad = -1;

struct ContextParallelism {
  int64_t blocks_per_kv_block;
  int64_t world_size;  // C
  int64_t rank;        // r
  int64_t interleave;  // I
};

ContextParallelism read_constexprs(const ParamReader& reader) {
  ContextParallelism cp{};
  cp.blocks_per_kv_block =
      constexpr_at_least(reader, p::blocks_per_kv_block, 1);
  cp.world_size = constexpr_at_least(reader, p::cp_world_size, 1);
  cp.rank = reader.constexpr_int(p::cp_rank);
  reader.require(cp.rank >= 0 && cp.rank < cp.world_size,
                 "constexpr cp_rank = ", cp.rank,
                 " must be in [0, cp_world_size = ", cp.world_size, ")");
  cp.interleave = constexpr_at_least(reader, p::cp_interleave, 1);
  return cp;
}

void run(const KernelArgs& args) {
  const ContextParallelism cp = read_constexprs(args);
  const HostTensor query_start_loc = args.tensor(p::query_start_loc);
  const HostTensor positions = args.tensor(p::positions);
  const HostTensor block_table = args.tensor(p::block_table);
  const HostTensor slot_mapping = args.tensor(p::slot_mapping);
  const int64_t table_stride = args.integer(p::block_table_stride);
  const int64_t num_reqs = args.integer(p::num_reqs);
  const int64_t max_num_tokens = args.integer(p::max_num_tokens);
  const int64_t block_size = args.integer(p::block_size);

  args.require(num_reqs >= 0, "num_reqs = ", num_reqs, " is negative");
  args.require(query_start_loc.dim(0) - 1 >= num_reqs, "query_start_loc has ",
               query_start_loc.dim(0), " elements; num_reqs = ", num_reqs,
               " needs num_reqs + 1 of them");
  args.require(num_reqs <= block_table.dim(0), "num_reqs = ", num_reqs,
               " exceeds the rows of block_table (", block_table.dim(0), ")");
  args.require(max_num_tokens >= 0, "max_num_tokens = ", max_num_tokens,
               " is negative");
  args.require(slot_mapping.dim(0) >= max_num_tokens, "slot_mapping has ",
               slot_mapping.dim(0),
               " elements, fewer than max_num_tokens = ", max_num_tokens);
  args.require(block_size >= 1, "block_size = ", block_size, " must be >= 1");
  require_row_stride_matches(args, block_table, table_stride,
                             p::block_table_stride);

  const int32_t* starts = query_start_loc.as<const int32_t>();
  for (int64_t i = 0; i < num_reqs; ++i) {
    args.require(starts[i] >= 0 && starts[i] <= starts[i + 1],
                 "query_start_loc must be non-negative and non-decreasing, "
                 "but query_start_loc[",
                 i, "] = ", starts[i], " and query_start_loc[", i + 1,
                 "] = ", starts[i + 1]);
  }
  const int64_t num_tokens = starts[num_reqs];
  args.require(num_tokens >= 0 && num_tokens <= max_num_tokens,
               "num_tokens = query_start_loc[num_reqs] = ", num_tokens,
               " must be in [0, max_num_tokens = ", max_num_tokens, "]");
  args.require(positions.dim(0) >= num_tokens, "positions has ",
               positions.dim(0),
               " elements, fewer than num_tokens = ", num_tokens);

  const int64_t kv_block_size =
      checked_mul(args, block_size, cp.blocks_per_kv_block,
                  "block_size * blocks_per_kv_block");
  const int64_t virtual_block_size =
      checked_mul(args, kv_block_size, cp.world_size,
                  "block_size * blocks_per_kv_block * cp_world_size");
  const int64_t rank_stride = checked_mul(args, cp.world_size, cp.interleave,
                                          "cp_world_size * cp_interleave");

  const int64_t* token_positions = positions.as<const int64_t>();
  const int32_t* table = block_table.as<const int32_t>();
  int64_t* slots = slot_mapping.as<int64_t>();
  for (int64_t request = 0; request < num_reqs; ++request) {
    for (int64_t token = starts[request]; token < starts[request + 1];
         ++token) {
      const int64_t position = token_positions[token];
      args.require(position >= 0, "positions[", token, "] = ", position,
                   " is negative");
      const int64_t virtual_block = position / virtual_block_size;
      const int64_t virtual_offset = position % virtual_block_size;
      const bool local =
          (virtual_offset / cp.interleave) % cp.world_size == cp.rank;
      if (!local) {
        slots[token] = kPad;
        continue;
      }
      const int64_t local_offset =
          (virtual_offset / rank_stride) * cp.interleave +
          virtual_offset % cp.interleave;
      // virtual_block * blocks_per_kv_block <= position, so no overflow.
      const int64_t column =
          virtual_block * cp.blocks_per_kv_block + local_offset / block_size;
      args.require(column < block_table.dim(1), "request ", request, ", token ",
                   token, " (position ", position, ") needs block_table[",
                   request, ", ", column, "], but block_table has ",
                   block_table.dim(1), " columns");
      const int64_t block_number = table[request * table_stride + column];
      slots[token] = checked_add(
          args, checked_mul(args, block_number, block_size, "the slot"),
          local_offset % block_size, "the slot");
    }
  }
  for (int64_t token = num_tokens; token < max_num_tokens; ++token) {
    slots[token] = kPad;
  }
}

const Instantiation kInstantiations[] = {{"compute_slot_mapping", &run}};

const Instantiation& select(const ParamReader& reader) {
  read_constexprs(reader);
  return kInstantiations[0];
}

}  // namespace

const KernelDefinition& compute_slot_mapping_definition() {
  static const KernelDefinition definition{
      kernel_set::kComputeSlotMapping, &select,
      "one instantiation (every dtype is fixed); the key's constexprs "
      "(blocks_per_kv_block, cp_world_size, cp_rank, cp_interleave) are "
      "validated and applied at launch",
      kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
