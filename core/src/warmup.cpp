// The warmup engine's pure part: expanding a request's axes into compile
// keys (collapsing values that specialize alike) and building storage-free
// inputs that reproduce a key. Compiling the keys is WarmupExecution's.
#include <jitwarm/jitwarm.hpp>

#include <bit>
#include <set>

#include "errors.hpp"

namespace jitwarm {
namespace {

using detail::fail;
constexpr __int128 kOne = 1;

// Bounds on what one request may expand to, so a typo in a manifest is an
// error instead of a hang. Every value of a constexpr range is its own
// compile key, so its range is walked value by value: 4096 compiles is far
// beyond any real sweep. Integer ranges are not bounded: they collapse to
// the few classes they produce without being walked. The product of the
// axes is walked combination by combination (each one derives a key).
constexpr __int128 kMaxConstexprRangeValues = 4096;
constexpr __int128 kMaxCombinations = 1 << 20;

std::string value_text(const WarmupValue& v) {
  if (const auto* i = std::get_if<__int128>(&v)) return int128_to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  const auto& t = std::get<TensorChoice>(v);
  return fmt::format("{}{}", dtype_name(t.dtype),
                     t.aligned_16 ? "" : " (unaligned)");
}

// What a value contributes to the key of `p`; values with equal signatures
// give equal keys, so only the first of them is kept.
std::string signature(const KernelSchema& schema, const ParamDesc& p,
                      const WarmupValue& v) {
  const auto wrong = [&](const char* wants) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "warmup of {}: parameter '{}' takes {}; got {}", schema.name(), p.name,
         wants, value_text(v));
  };
  const bool dns = p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE);
  switch (p.kind) {
    case JW_PARAM_TENSOR: {
      const auto* t = std::get_if<TensorChoice>(&v);
      if (t == nullptr) wrong("a tensor (a dtype)");
      std::string s = fmt::format("t{}", static_cast<int>(t->dtype));
      if (!p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT))
        s += t->aligned_16 ? "a" : "u";
      if (p.has_flag(JW_PARAM_SPECIALIZE_STRIDES)) {
        for (int64_t stride : t->strides) {
          const IntSpec spec = specialize_integer(stride, false);
          s += fmt::format(",{}{}", static_cast<int>(spec.type),
                           static_cast<int>(spec.value_class));
        }
      }
      return s;
    }
    case JW_PARAM_INT: {
      const auto* i = std::get_if<__int128>(&v);
      if (i == nullptr) wrong("an integer");
      const IntSpec spec = specialize_integer(*i, dns);
      return fmt::format("i{}{}", static_cast<int>(spec.type),
                         static_cast<int>(spec.value_class));
    }
    case JW_PARAM_FLOAT:
      if (std::holds_alternative<TensorChoice>(v) ||
          std::holds_alternative<bool>(v))
        wrong("a float");
      return "f";
    case JW_PARAM_SCALAR: {
      if (std::holds_alternative<double>(v)) return "f";
      const auto* i = std::get_if<__int128>(&v);
      if (i == nullptr) wrong("an integer or a float");
      const IntSpec spec = specialize_integer(*i, dns);
      return fmt::format("i{}{}", static_cast<int>(spec.type),
                         static_cast<int>(spec.value_class));
    }
    case JW_PARAM_CONSTEXPR:
      if (const auto* i = std::get_if<__int128>(&v)) {
        return fmt::format("c{}", int128_to_string(*i));
      }
      if (const auto* d = std::get_if<double>(&v)) {
        return fmt::format("d{:x}", std::bit_cast<uint64_t>(*d));
      }
      if (const auto* b = std::get_if<bool>(&v)) return *b ? "b1" : "b0";
      wrong("a constant");
  }
  return "";
}

// The first lattice points of a range in each integer-type region: enough
// to meet every (type, class) the range produces, without walking 8192 (or
// 2^40) values.
std::vector<__int128> range_candidates(const KernelSchema& schema,
                                       const ParamDesc& p, const IntRange& r) {
  if (r.step <= 0) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "warmup of {}: range of '{}' needs a positive step, got {}",
         schema.name(), p.name, r.step);
  }
  const __int128 start = r.start, stop = r.stop, step = r.step;
  const __int128 bounds[] = {-(kOne << 63), -(kOne << 31), kOne << 31,
                             kOne << 63};
  std::vector<__int128> out;
  for (int region = 0; region < 3; ++region) {
    const __int128 lo = std::max(start, bounds[region]);
    const __int128 hi = std::min(stop, bounds[region + 1]);
    if (lo >= hi) continue;
    __int128 first = start;
    if (lo > start) first = start + ((lo - start + step - 1) / step) * step;
    // 1, a multiple of 16 and a non-multiple all appear within 17 steps of
    // any start, and 1 (when in range) is checked explicitly.
    for (int k = 0; k < 18; ++k) {
      const __int128 x = first + k * step;
      if (x >= hi) break;
      out.push_back(x);
    }
    if (1 >= lo && 1 < hi && (1 - start) % step == 0) out.push_back(1);
  }
  return out;
}

struct Choice {
  std::vector<std::pair<std::size_t, WarmupValue>>
      values;  // (param index, value)
};

std::vector<WarmupValue> default_axis(const KernelSchema& schema,
                                      const ParamDesc& p);

// Values of one axis, first of each signature, in order.
std::vector<WarmupValue> collapsed_axis(const KernelSchema& schema,
                                        const ParamDesc& p,
                                        const WarmupAxis& axis) {
  std::vector<WarmupValue> out;
  std::set<std::string> seen;
  const auto consider = [&](const WarmupValue& v) {
    if (seen.insert(signature(schema, p, v)).second) out.push_back(v);
  };
  for (const auto& v : axis.values) {
    const auto* t = std::get_if<TensorChoice>(&v);
    if (p.kind == JW_PARAM_TENSOR && t != nullptr &&
        t->dtype == JW_DTYPE_INVALID && p.same_dtype_as.empty()) {
      // "aligned = [...]" without dtypes: every dtype the schema allows.
      for (const auto& d : default_axis(schema, p)) {
        TensorChoice c = *t;
        c.dtype = std::get<TensorChoice>(d).dtype;
        consider(c);
      }
      continue;
    }
    consider(v);
  }
  for (const auto& r : axis.ranges) {
    if (p.kind != JW_PARAM_INT && p.kind != JW_PARAM_SCALAR &&
        p.kind != JW_PARAM_CONSTEXPR) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup of {}: '{}' is not an integer; ranges need one",
           schema.name(), p.name);
    }
    if (p.kind == JW_PARAM_CONSTEXPR) {
      // Every constexpr value is its own key: walk the range itself.
      if (r.step <= 0) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "warmup of {}: range of '{}' needs a positive step", schema.name(),
             p.name);
      }
      const __int128 start = r.start, stop = r.stop, step = r.step;
      const __int128 count =
          stop > start ? (stop - start + step - 1) / step : 0;
      if (count > kMaxConstexprRangeValues) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "warmup of {}: constexpr range of '{}' [{}, {}) step {} gives {} "
             "values, each its own compile; a range may give at most {} "
             "(list the values you need)",
             schema.name(), p.name, r.start, r.stop, r.step,
             int128_to_string(count),
             int128_to_string(kMaxConstexprRangeValues));
      }
      for (__int128 x = start; x < stop; x += step) consider(x);
      continue;
    }
    for (__int128 x : range_candidates(schema, p, r)) consider(x);
  }
  if (out.empty()) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "warmup of {}: parameter '{}' has no values", schema.name(), p.name);
  }
  return out;
}

// Defaults for a parameter the request does not mention.
std::vector<WarmupValue> default_axis(const KernelSchema& schema,
                                      const ParamDesc& p) {
  switch (p.kind) {
    case JW_PARAM_TENSOR: {
      if (!p.same_dtype_as.empty())
        return {TensorChoice{JW_DTYPE_INVALID, true, {}}};
      if (p.allowed_dtypes == 0) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "warmup of {}: tensor '{}' takes any dtype; list the dtypes to "
             "warm",
             schema.name(), p.name);
      }
      std::vector<WarmupValue> out;
      for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
        if ((p.allowed_dtypes & JW_DTYPE_BIT(d)) != 0) {
          out.push_back(TensorChoice{static_cast<jw_dtype>(d), true, {}});
        }
      }
      if (out.empty()) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "warmup of {}: tensor '{}' allows no dtype this build knows "
             "(allowed_dtypes {:#x})",
             schema.name(), p.name, p.allowed_dtypes);
      }
      return out;
    }
    case JW_PARAM_INT:
      // Every class of an i32: one, divisible by 16, neither.
      if (p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE)) return {__int128{2}};
      return {__int128{1}, __int128{16}, __int128{2}};
    case JW_PARAM_FLOAT: return {0.0};
    case JW_PARAM_SCALAR: return {__int128{0}};
    case JW_PARAM_CONSTEXPR:
      if (!p.has_flag(JW_PARAM_HAS_DEFAULT)) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "warmup of {}: constexpr '{}' has no default; give it a value",
             schema.name(), p.name);
      }
      // Read raw: the default came through the C ABI (errors.hpp raw_enum);
      // an unknown kind gives no default, which the caller reports.
      switch (detail::raw_enum(p.default_value.kind)) {
        case JW_SCALAR_INT: return {__int128{p.default_value.value.i}};
        case JW_SCALAR_UINT:
          return {static_cast<__int128>(p.default_value.value.u)};
        case JW_SCALAR_FLOAT: return {p.default_value.value.f};
        case JW_SCALAR_BOOL: return {p.default_value.value.i != 0};
        default:
          fail(JW_ERROR_INVALID_ARGUMENT,
               "warmup of {}: constexpr '{}' has a default of unknown kind {}",
               schema.name(), p.name, detail::raw_enum(p.default_value.kind));
      }
  }
  return {};
}

jw_scalar scalar_from(__int128 v) {
  if (v >= -(kOne << 63) && v < (kOne << 63))
    return scalar_int(static_cast<int64_t>(v));
  return scalar_uint(static_cast<uint64_t>(v));
}

// Storage-free arguments for one assignment (schema order).
WarmupInputs inputs_from(const KernelSchema& schema,
                         const std::vector<WarmupValue>& values) {
  WarmupInputs in;
  const auto& params = schema.params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamDesc& p = params[i];
    const WarmupValue& v = values[i];
    jw_arg_value a{};
    a.struct_size = sizeof(a);
    if (p.kind == JW_PARAM_TENSOR) {
      const auto& t = std::get<TensorChoice>(v);
      const uint32_t rank = p.rank >= 0
                                ? static_cast<uint32_t>(p.rank)
                                : static_cast<uint32_t>(std::max<std::size_t>(
                                      t.strides.size(), 1));
      std::vector<int64_t> shape(rank, 1);
      auto meta = std::make_unique<jw_tensor_meta>(
          t.strides.empty()
              ? make_tensor_meta(t.dtype, shape, t.aligned_16)
              : make_tensor_meta(t.dtype, shape, t.strides, t.aligned_16));
      a = warmup_arg(*meta);
      in.tensors.push_back(std::move(meta));
    } else if (const auto* i = std::get_if<__int128>(&v)) {
      a.kind = JW_VALUE_SCALAR;
      a.value.scalar = scalar_from(*i);
    } else if (const auto* d = std::get_if<double>(&v)) {
      a = arg_float(*d);
    } else if (const auto* b = std::get_if<bool>(&v)) {
      a = arg_bool(*b);
    }
    in.args.push_back(a);
  }
  return in;
}

bool excluded(const WarmupRequest& request,
              const WarmupAssignment& assignment) {
  for (const auto& rule : request.exclude) {
    bool all = !rule.empty();
    for (const auto& [name, value] : rule) {
      const WarmupValue* actual = assignment.find(name);
      if (actual == nullptr) {
        all = false;
        break;
      }
      if (const auto* t = std::get_if<TensorChoice>(&value)) {
        // A tensor is matched by its dtype (see docs/warmup.md).
        const auto* a = std::get_if<TensorChoice>(actual);
        if (a == nullptr || a->dtype != t->dtype) all = false;
      } else if (value.index() != actual->index() ||
                 value_text(value) != value_text(*actual)) {
        all = false;
      }
      if (!all) break;
    }
    if (all) return true;
  }
  return false;
}

}  // namespace

const WarmupValue* WarmupAssignment::find(std::string_view name) const {
  for (const auto& [n, v] : values) {
    if (n == name) return &v;
  }
  return nullptr;
}

namespace {

// enumerate_warmup_keys without the origin in its messages; `where` follows
// the part of the request being expanded.
std::vector<CompileKey> enumerate_keys(const KernelSchema& schema,
                                       const WarmupRequest& request,
                                       std::string_view target,
                                       std::string_view impl_name,
                                       const std::string*& where) {
  const auto& params = schema.params();
  std::vector<bool> covered(params.size(), false);
  const auto index_of = [&](const std::string& name) {
    const int i = schema.index_of(name);
    if (i < 0) {
      std::string names;
      for (const auto& p : params)
        names += (names.empty() ? "" : ", ") + p.name;
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup of {}: unknown parameter '{}' (parameters: {})",
           schema.name(), name, names);
    }
    if (covered[i]) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup of {}: parameter '{}' is given twice", schema.name(), name);
    }
    covered[i] = true;
    return static_cast<std::size_t>(i);
  };

  std::vector<std::vector<Choice>> dimensions;
  for (const auto& group : request.zipped) {
    std::vector<std::size_t> indices;
    std::size_t length = 0;
    for (const auto& [name, axis] : group) {
      where = &axis.origin;
      indices.push_back(index_of(name));
      if (!axis.ranges.empty()) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "warmup of {}: zipped parameter '{}' cannot use a range",
             schema.name(), name);
      }
      if (indices.size() == 1) length = axis.values.size();
      if (axis.values.size() != length) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "warmup of {}: zipped parameters need lists of one length; '{}' "
             "has {}, '{}' has {}",
             schema.name(), group.front().first, length, name,
             axis.values.size());
      }
    }
    std::vector<Choice> choices;
    std::set<std::string> seen;
    for (std::size_t k = 0; k < length; ++k) {
      Choice c;
      std::string sig;
      for (std::size_t g = 0; g < group.size(); ++g) {
        const WarmupValue& v = group[g].second.values[k];
        const ParamDesc& p = params[indices[g]];
        const auto* t = std::get_if<TensorChoice>(&v);
        if (t != nullptr && t->dtype == JW_DTYPE_INVALID &&
            p.same_dtype_as.empty()) {
          // Outside a zip such a tensor takes every dtype the schema
          // allows; in lockstep that would change the group's length.
          fail(JW_ERROR_INVALID_ARGUMENT,
               "warmup of {}: zipped tensor '{}' needs a dtype in each entry "
               "(e.g. {{ dtype = \"float16\", aligned = true }})",
               schema.name(), p.name);
        }
        sig += signature(schema, p, v) + "|";
        c.values.emplace_back(indices[g], v);
      }
      if (seen.insert(sig).second) choices.push_back(std::move(c));
    }
    if (!choices.empty()) dimensions.push_back(std::move(choices));
  }
  for (const auto& [name, axis] : request.axes) {
    where = &axis.origin;
    const std::size_t i = index_of(name);
    std::vector<Choice> choices;
    for (auto& v : collapsed_axis(schema, params[i], axis))
      choices.push_back(Choice{{{i, v}}});
    dimensions.push_back(std::move(choices));
  }
  where = &request.origin;
  std::vector<std::size_t> deferred_scalars;  // follow their tensor's dtype
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (covered[i]) continue;
    if (params[i].kind == JW_PARAM_SCALAR) {
      deferred_scalars.push_back(i);
      continue;
    }
    std::vector<Choice> choices;
    for (auto& v : default_axis(schema, params[i]))
      choices.push_back(Choice{{{i, v}}});
    if (choices.empty()) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup of {}: parameter '{}' has no default to warm; give it a "
           "value",
           schema.name(), params[i].name);
    }
    dimensions.push_back(std::move(choices));
  }
  __int128 combinations = 1;
  for (const auto& d : dimensions) {
    combinations *= static_cast<__int128>(d.size());
    if (combinations > kMaxCombinations) {
      std::string sizes;
      for (const auto& e : dimensions)
        sizes += fmt::format("{}{}", sizes.empty() ? "" : " x ", e.size());
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup of {}: the request combines {} values, more than the {} "
           "one request may combine; split it or list fewer values",
           schema.name(), sizes, int128_to_string(kMaxCombinations));
    }
  }

  std::vector<CompileKey> keys;
  std::set<std::string> seen_keys;
  std::vector<std::size_t> odometer(dimensions.size(), 0);
  while (true) {
    std::vector<WarmupValue> values(params.size());
    for (std::size_t d = 0; d < dimensions.size(); ++d) {
      for (const auto& [i, v] : dimensions[d][odometer[d]].values)
        values[i] = v;
    }
    // Tensors that follow another's dtype (and, when not mentioned, its
    // alignment: an output is usually allocated like its input), then
    // scalars of a tensor's kind.
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto* t = std::get_if<TensorChoice>(&values[i]);
      if (t != nullptr && t->dtype == JW_DTYPE_INVALID) {
        const int followed = schema.index_of(params[i].same_dtype_as);
        const auto* other = followed < 0
                                ? nullptr
                                : std::get_if<TensorChoice>(&values[followed]);
        if (other == nullptr) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "warmup of {}: tensor '{}' needs a dtype (it follows no other "
               "tensor's)",
               schema.name(), params[i].name);
        }
        t->dtype = other->dtype;
        if (!covered[i]) t->aligned_16 = other->aligned_16;
      }
    }
    for (std::size_t i : deferred_scalars) {
      const ParamDesc& p = params[i];
      bool is_float = false;
      if (const int followed = schema.index_of(p.same_dtype_as);
          followed >= 0) {
        const auto* t = std::get_if<TensorChoice>(&values[followed]);
        is_float = t != nullptr && is_floating_dtype(t->dtype);
      }
      values[i] = is_float ? WarmupValue{0.0} : WarmupValue{__int128{0}};
    }
    WarmupAssignment assignment;
    for (std::size_t i = 0; i < params.size(); ++i) {
      assignment.values.emplace_back(params[i].name, values[i]);
    }
    if (!excluded(request, assignment) &&
        (!request.filter || request.filter(assignment))) {
      WarmupInputs in = inputs_from(schema, values);
      CompileKey key = derive_key(schema, in.args, target, impl_name);
      if (seen_keys.insert(key.encoding()).second)
        keys.push_back(std::move(key));
    }
    std::size_t d = 0;
    while (d < dimensions.size() && ++odometer[d] == dimensions[d].size())
      odometer[d++] = 0;
    if (d == dimensions.size()) break;
  }
  return keys;
}

}  // namespace

std::vector<CompileKey> enumerate_warmup_keys(const KernelSchema& schema,
                                              const WarmupRequest& request,
                                              std::string_view target,
                                              std::string_view impl_name) {
  const std::string* where = &request.origin;
  try {
    return enumerate_keys(schema, request, target, impl_name, where);
  } catch (const Error& e) {
    // A manifest's error names its file and line, like a parse error.
    const std::string& origin = where->empty() ? request.origin : *where;
    if (origin.empty()) throw;
    throw Error(e.status(), fmt::format("{}: {}", origin, e.what()));
  }
}

WarmupInputs warmup_inputs_for(const KernelSchema& schema,
                               const CompileKey& key) {
  const auto& params = schema.params();
  if (key.kernel_name() != schema.name() ||
      key.params().size() != params.size()) {
    fail(JW_ERROR_INVALID_ARGUMENT, "key {} does not belong to kernel {}",
         key.text(), schema.name());
  }
  std::vector<WarmupValue> values;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& s = key.params()[i];
    if (s.name != params[i].name || s.kind != params[i].kind) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "key {}: parameter {} is '{}', the schema says '{}'", key.text(), i,
           s.name, params[i].name);
    }
    switch (s.kind) {
      case JW_PARAM_TENSOR: {
        TensorChoice t{s.dtype, s.alignment != JW_ALIGN_NONE, {}};
        for (const IntSpec& stride : s.stride_specs) {
          t.strides.push_back(
              static_cast<int64_t>(scalar_specialization_rep(stride)));
        }
        values.emplace_back(t);
        break;
      }
      case JW_PARAM_INT:
        values.emplace_back(scalar_specialization_rep(s.int_spec));
        break;
      case JW_PARAM_FLOAT: values.emplace_back(0.0); break;
      case JW_PARAM_SCALAR:
        if (s.scalar_kind == JW_SCALAR_FLOAT) {
          values.emplace_back(0.0);
        } else {
          values.emplace_back(scalar_specialization_rep(s.int_spec));
        }
        break;
      case JW_PARAM_CONSTEXPR:
        switch (s.constexpr_value.kind) {
          case JW_SCALAR_INT:
            values.emplace_back(__int128{s.constexpr_value.value.i});
            break;
          case JW_SCALAR_UINT:
            values.emplace_back(
                static_cast<__int128>(s.constexpr_value.value.u));
            break;
          case JW_SCALAR_FLOAT:
            values.emplace_back(s.constexpr_value.value.f);
            break;
          default: values.emplace_back(s.constexpr_value.value.i != 0); break;
        }
        break;
    }
  }
  WarmupInputs in = inputs_from(schema, values);
  // A tuned key's config is chosen, not derived from the arguments: the
  // inputs reproduce the rest of the key.
  const CompileKey produced =
      derive_key(schema, in.args, key.target(), key.impl_name())
          .with_config(key.config());
  if (!(produced == key)) {
    fail(JW_ERROR_INTERNAL,
         "warmup inputs do not reproduce their key: expected {}, produced {}",
         key.text(), produced.text());
  }
  return in;
}

}  // namespace jitwarm
