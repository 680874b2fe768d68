// expand — the reference for vllm.v1.sample.rejection_sampler.expand
// (docs/kernels.md, 2. expand): one value per request becomes one value per
// token, with one value replaced by another on the way.
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::expand;

// replace_from / replace_to for integer x: compared in int64 (as a GPU
// compares after promoting x to the scalar's type), so a replace_from that
// x cannot hold simply never matches; replace_to must fit x's dtype.
template <typename T>
struct IntegerReplacement {
  std::optional<int64_t> from;
  T to;

  T apply(T value) const {
    return from.has_value() && static_cast<int64_t>(value) == *from ? to
                                                                    : value;
  }
};

// For float32 x both scalars are float32 values; NaN never matches.
struct FloatReplacement {
  float from;
  float to;

  float apply(float value) const { return value == from ? to : value; }
};

template <typename T>
IntegerReplacement<T> read_integer_replacement(const KernelArgs& args) {
  IntegerReplacement<T> replacement{};
  const jw_scalar& from = args.scalar(p::replace_from);
  if (from.kind == JW_SCALAR_INT) {
    replacement.from = from.value.i;
  } else if (from.kind == JW_SCALAR_UINT) {
    if (from.value.u <=
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      replacement.from = static_cast<int64_t>(from.value.u);
    }
  } else {
    args.fail("replace_from must be an integer for x of dtype ",
              dtype_name(kDtypeOf<T>));
  }
  const jw_scalar& to = args.scalar(p::replace_to);
  constexpr int64_t kMin = std::numeric_limits<T>::min();
  constexpr int64_t kMax = std::numeric_limits<T>::max();
  if (to.kind == JW_SCALAR_INT && to.value.i >= kMin && to.value.i <= kMax) {
    replacement.to = static_cast<T>(to.value.i);
  } else if (to.kind == JW_SCALAR_UINT &&
             to.value.u <= static_cast<uint64_t>(kMax)) {
    replacement.to = static_cast<T>(to.value.u);
  } else if (to.kind == JW_SCALAR_INT || to.kind == JW_SCALAR_UINT) {
    args.fail("replace_to = ",
              to.kind == JW_SCALAR_INT ? std::to_string(to.value.i)
                                       : std::to_string(to.value.u),
              " does not fit x's dtype ", dtype_name(kDtypeOf<T>));
  } else {
    args.fail("replace_to must be an integer for x of dtype ",
              dtype_name(kDtypeOf<T>));
  }
  return replacement;
}

FloatReplacement read_float_replacement(const KernelArgs& args) {
  return FloatReplacement{static_cast<float>(args.floating(p::replace_from)),
                          static_cast<float>(args.floating(p::replace_to))};
}

template <typename T>
void run(const KernelArgs& args) {
  const int64_t max_tokens_per_request =
      constexpr_at_least(args, p::MAX_NUM_TOKENS, 1);
  const HostTensor output = args.typed_tensor<T>(p::output);
  const HostTensor x = args.typed_tensor<T>(p::x);
  const HostTensor cu_num_tokens = args.tensor(p::cu_num_tokens);
  const auto replacement = [&] {
    if constexpr (std::is_same_v<T, float>) {
      return read_float_replacement(args);
    } else {
      return read_integer_replacement<T>(args);
    }
  }();

  const int64_t num_requests = x.dim(0);
  args.require(cu_num_tokens.dim(0) >= num_requests, "cu_num_tokens has ",
               cu_num_tokens.dim(0),
               " elements, fewer than B = x.shape[0] = ", num_requests);
  const int32_t* ends = cu_num_tokens.as<const int32_t>();
  int64_t start = 0;
  for (int64_t b = 0; b < num_requests; ++b) {
    args.require(ends[b] >= start,
                 "cu_num_tokens must be a non-negative, "
                 "non-decreasing prefix sum, but cu_num_tokens[",
                 b, "] = ", ends[b], " is below the previous end ", start);
    args.require(
        ends[b] - start <= max_tokens_per_request, "request ", b, " has ",
        ends[b] - start,
        " tokens, more than MAX_NUM_TOKENS = ", max_tokens_per_request);
    start = ends[b];
  }
  const int64_t total = start;
  args.require(output.dim(0) >= total, "output has ", output.dim(0),
               " elements, fewer than the ", total,
               " tokens cu_num_tokens covers");

  const T* values = x.as<const T>();
  T* out = output.as<T>();
  start = 0;
  for (int64_t b = 0; b < num_requests; ++b) {
    const T value = replacement.apply(values[b]);
    for (int64_t token = start; token < ends[b]; ++token) out[token] = value;
    start = ends[b];
  }
}

const Instantiation kInstantiations[] = {
    {"expand<i32>", &run<int32_t>},
    {"expand<i64>", &run<int64_t>},
    {"expand<fp32>", &run<float>},
};
const jw_dtype kDtypes[] = {JW_DTYPE_INT32, JW_DTYPE_INT64, JW_DTYPE_FLOAT32};

const Instantiation& select(const ParamReader& reader) {
  constexpr_at_least(reader, p::MAX_NUM_TOKENS, 1);
  const jw_dtype dtype = reader.tensor_dtype(p::x);
  if (dtype != JW_DTYPE_FLOAT32) {
    for (uint32_t scalar :
         {uint32_t{p::replace_from}, uint32_t{p::replace_to}}) {
      reader.require(reader.scalar_kind(scalar) == JW_SCALAR_INT,
                     reader.param_name(scalar),
                     " is a float, but x has the integer dtype ",
                     dtype_name(dtype));
    }
  }
  return select_by_dtype(reader, p::x, kDtypes, kInstantiations);
}

}  // namespace

const KernelDefinition& expand_definition() {
  static const KernelDefinition definition{
      kernel_set::kExpand, &select,
      "the dtype of x (output shares it); replace_from and replace_to must "
      "be integers for integer x",
      kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
