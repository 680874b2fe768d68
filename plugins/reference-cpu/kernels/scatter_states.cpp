// scatter_states — the reference for
// vllm.model_executor.layers.mamba.ops.scatter_states (docs/kernels.md,
// 5. scatter_states): state[indices[t], :] = src[t, :], negative indices
// skipped. A row copy never looks at values, so one instantiation per element
// size (and index dtype) serves every dtype in jitwarm.h.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::scatter_states;

template <std::size_t kElementBytes, typename Index>
void run(const KernelArgs& args) {
  constexpr_at_least(args, p::BLOCK_SIZE, 1);
  const int64_t row_size = constexpr_at_least(args, p::ROW_SIZE, 1);
  const HostTensor state = args.tensor(p::state);
  const HostTensor src = args.tensor(p::src);
  const HostTensor indices = args.typed_tensor<Index>(p::indices);
  const int64_t state_stride = args.integer(p::state_stride);
  const int64_t num_rows = args.integer(p::num_rows);

  args.require(dtype_info(state.dtype).size == kElementBytes,
               "state has dtype ", dtype_name(state.dtype), " (",
               dtype_info(state.dtype).size,
               " bytes) but this instantiation copies ", kElementBytes,
               "-byte elements");
  args.require(src.dtype == state.dtype, "src has dtype ",
               dtype_name(src.dtype), ", state ", dtype_name(state.dtype));
  args.require(num_rows >= 0, "num_rows = ", num_rows, " is negative");
  args.require(state.dim(1) == row_size, "state has rows of ", state.dim(1),
               " elements, but ROW_SIZE = ", row_size);
  args.require(src.dim(1) == row_size, "src has rows of ", src.dim(1),
               " elements, but ROW_SIZE = ", row_size);
  args.require(src.dim(0) >= num_rows, "src has ", src.dim(0),
               " rows, fewer than num_rows = ", num_rows);
  args.require(indices.dim(0) >= num_rows, "indices has ", indices.dim(0),
               " elements, fewer than num_rows = ", num_rows);
  require_row_stride_matches(args, state, state_stride, p::state_stride);

  // Indices must name rows of state and be distinct (docs/kernels.md,
  // 5. scatter_states): with a repeated index the result would depend on a
  // GPU's scheduling, so the oracle refuses it instead of picking a winner.
  const Index* targets = indices.as<const Index>();
  std::vector<std::pair<int64_t, int64_t>> used;  // (index, t)
  for (int64_t t = 0; t < num_rows; ++t) {
    const int64_t target = targets[t];
    if (target < 0) continue;
    args.require(target < state.dim(0), "indices[", t, "] = ", target,
                 " is out of range for state with ", state.dim(0), " rows");
    used.emplace_back(target, t);
  }
  std::sort(used.begin(), used.end());
  for (std::size_t i = 1; i < used.size(); ++i) {
    args.require(used[i].first != used[i - 1].first, "indices[",
                 used[i - 1].second, "] and indices[", used[i].second,
                 "] are both ", used[i].first,
                 "; scatter_states needs distinct indices");
  }

  const std::size_t row_bytes =
      static_cast<std::size_t>(row_size) * kElementBytes;
  const auto* source = static_cast<const unsigned char*>(src.data);
  auto* destination = static_cast<unsigned char*>(state.data);
  for (const auto& [target, t] : used) {
    // memmove: state and src may be views of one buffer.
    std::memmove(destination + static_cast<std::size_t>(target * state_stride) *
                                   kElementBytes,
                 source + static_cast<std::size_t>(t) * row_bytes, row_bytes);
  }
}

const Instantiation kInstantiations[] = {
    {"scatter_states<bytes1,i32>", &run<1, int32_t>},
    {"scatter_states<bytes2,i32>", &run<2, int32_t>},
    {"scatter_states<bytes4,i32>", &run<4, int32_t>},
    {"scatter_states<bytes8,i32>", &run<8, int32_t>},
    {"scatter_states<bytes1,i64>", &run<1, int64_t>},
    {"scatter_states<bytes2,i64>", &run<2, int64_t>},
    {"scatter_states<bytes4,i64>", &run<4, int64_t>},
    {"scatter_states<bytes8,i64>", &run<8, int64_t>},
};

const Instantiation& select(const ParamReader& reader) {
  constexpr_at_least(reader, p::ROW_SIZE, 1);
  constexpr_at_least(reader, p::BLOCK_SIZE, 1);
  const jw_dtype state_dtype = reader.tensor_dtype(p::state);
  const jw_dtype index_dtype = reader.tensor_dtype(p::indices);
  std::size_t size_slot = 0;
  switch (dtype_info(state_dtype).size) {
    case 1: size_slot = 0; break;
    case 2: size_slot = 1; break;
    case 4: size_slot = 2; break;
    case 8: size_slot = 3; break;
    default:
      reader.fail("state has dtype ", dtype_name(state_dtype),
                  ", which has no element size the reference copies");
  }
  switch (index_dtype) {
    case JW_DTYPE_INT32: return kInstantiations[size_slot];
    case JW_DTYPE_INT64: return kInstantiations[4 + size_slot];
    default: break;
  }
  reader.fail("indices has dtype ", dtype_name(index_dtype),
              "; scatter_states takes int32 or int64 indices");
}

}  // namespace

const KernelDefinition& scatter_states_definition() {
  static const KernelDefinition definition{
      kernel_set::kScatterStates, &select,
      "the element size of state's dtype (a row copy moves bytes) and the "
      "dtype of indices",
      kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
