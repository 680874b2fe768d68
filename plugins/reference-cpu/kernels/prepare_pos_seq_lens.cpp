// prepare_pos_seq_lens — the reference for
// vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens (docs/kernels.md,
// 8. prepare_pos_seq_lens): per batch slot, the sequence length after this step
// and the position of every scheduled token.
#include <cstdint>
#include <limits>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::prepare_pos_seq_lens;

void run(const KernelArgs& args) {
  const HostTensor idx_mapping = args.tensor(p::idx_mapping);
  const HostTensor query_start_loc = args.tensor(p::query_start_loc);
  const HostTensor num_computed_tokens = args.tensor(p::num_computed_tokens);
  const HostTensor seq_lens = args.tensor(p::seq_lens);
  const HostTensor positions = args.tensor(p::positions);
  const int64_t num_reqs = args.integer(p::num_reqs);
  const int64_t seq_lens_len = args.integer(p::seq_lens_len);

  args.require(num_reqs >= 0, "num_reqs = ", num_reqs, " is negative");
  args.require(seq_lens_len >= num_reqs, "seq_lens_len = ", seq_lens_len,
               " is smaller than num_reqs = ", num_reqs,
               " (one program per slot up to seq_lens_len computes every "
               "request)");
  args.require(idx_mapping.dim(0) >= num_reqs, "idx_mapping has ",
               idx_mapping.dim(0),
               " elements, fewer than num_reqs = ", num_reqs);
  args.require(query_start_loc.dim(0) - 1 >= num_reqs, "query_start_loc has ",
               query_start_loc.dim(0), " elements; num_reqs = ", num_reqs,
               " needs num_reqs + 1 of them");
  args.require(seq_lens.dim(0) >= seq_lens_len, "seq_lens has ",
               seq_lens.dim(0),
               " elements, fewer than seq_lens_len = ", seq_lens_len);

  const int32_t* slots = idx_mapping.as<const int32_t>();
  const int32_t* starts = query_start_loc.as<const int32_t>();
  const int32_t* computed = num_computed_tokens.as<const int32_t>();
  // Check every request before writing anything.
  for (int64_t b = 0; b < num_reqs; ++b) {
    args.require(starts[b] >= 0 && starts[b] <= starts[b + 1],
                 "query_start_loc must be non-negative and non-decreasing, "
                 "but query_start_loc[",
                 b, "] = ", starts[b], " and query_start_loc[", b + 1,
                 "] = ", starts[b + 1]);
    args.require(slots[b] >= 0 && slots[b] < num_computed_tokens.dim(0),
                 "idx_mapping[", b, "] = ", slots[b],
                 " is out of range for num_computed_tokens with ",
                 num_computed_tokens.dim(0), " rows");
    const int64_t already_computed = computed[slots[b]];
    args.require(already_computed >= 0, "num_computed_tokens[", slots[b],
                 "] = ", already_computed, " is negative");
    const int64_t seq_len = already_computed + (starts[b + 1] - starts[b]);
    args.require(seq_len <= std::numeric_limits<int32_t>::max(),
                 "the sequence length of request ", b, " (", seq_len,
                 ") does not fit seq_lens' int32");
  }
  const int64_t num_tokens = num_reqs > 0 ? starts[num_reqs] : 0;
  args.require(positions.dim(0) >= num_tokens, "positions has ",
               positions.dim(0), " elements, fewer than the ", num_tokens,
               " tokens query_start_loc covers");

  int32_t* lengths = seq_lens.as<int32_t>();
  int64_t* token_positions = positions.as<int64_t>();
  for (int64_t b = 0; b < num_reqs; ++b) {
    const int64_t already_computed = computed[slots[b]];
    const int64_t query_length = starts[b + 1] - starts[b];
    lengths[b] = static_cast<int32_t>(already_computed + query_length);
    for (int64_t k = 0; k < query_length; ++k) {
      token_positions[starts[b] + k] = already_computed + k;
    }
  }
  for (int64_t b = num_reqs; b < seq_lens_len; ++b) lengths[b] = 0;
}

const Instantiation kInstantiations[] = {{"prepare_pos_seq_lens", &run}};

const Instantiation& select(const ParamReader&) {
  return kInstantiations[0];
}

}  // namespace

const KernelDefinition& prepare_pos_seq_lens_definition() {
  static const KernelDefinition definition{
      kernel_set::kPreparePosSeqLens, &select,
      "one instantiation (every dtype is fixed, no constexprs)",
      kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
