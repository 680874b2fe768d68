// The specialization rules (DESIGN.md "Specialization") and derive_key, the
// one function that maps arguments to a compile key for both the launch
// path and warmup.
#include "errors.hpp"

#include <cstring>

namespace jitwarm {
namespace {

constexpr __int128 kOne = 1;
constexpr __int128 kI32Min = -(kOne << 31);
constexpr __int128 kI32End = kOne << 31;
constexpr __int128 kI64Min = -(kOne << 63);
constexpr __int128 kI64End = kOne << 63;
constexpr __int128 kU64End = kOne << 64;

std::string describe_value_kind(const jw_arg_value& a) {
  switch (a.kind) {
    case JW_VALUE_TENSOR: return "a tensor";
    case JW_VALUE_WARMUP_TENSOR: return "a warmup tensor";
    case JW_VALUE_SCALAR:
      switch (a.value.scalar.kind) {
        case JW_SCALAR_INT:
        case JW_SCALAR_UINT: return "an integer";
        case JW_SCALAR_FLOAT: return "a float";
        case JW_SCALAR_BOOL: return "a bool";
        default: return "an empty scalar";
      }
    default: return "nothing";
  }
}

std::string dtype_list(jw_dtype_set set) {
  std::string out;
  for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
    if ((set & JW_DTYPE_BIT(d)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += dtype_name(static_cast<jw_dtype>(d));
  }
  return out;
}

// The integer value of a scalar argument, or throws.
__int128 integer_of(const jw_scalar& s, const KernelSchema& schema,
                    const ParamDesc& p) {
  if (s.kind == JW_SCALAR_INT) return s.value.i;
  if (s.kind == JW_SCALAR_UINT) return static_cast<__int128>(s.value.u);
  detail::fail(JW_ERROR_INVALID_ARGUMENT, "{}: parameter '{}' takes an integer",
               schema.name(), p.name);
}

// Normalizes a constexpr so the same value passed as int or uint gives the
// same key.
jw_scalar canonical_constexpr(jw_scalar s) {
  if (s.kind == JW_SCALAR_UINT &&
      s.value.u <= static_cast<uint64_t>(INT64_MAX)) {
    return scalar_int(static_cast<int64_t>(s.value.u));
  }
  if (s.kind == JW_SCALAR_BOOL) return scalar_bool(s.value.i != 0);
  return s;
}

struct TensorView {
  const jw_tensor_meta* meta = nullptr;
  bool aligned = false;
  bool runtime = false;
  const void* data = nullptr;
};

TensorView tensor_of(const jw_arg_value& a, const KernelSchema& schema,
                     const ParamDesc& p) {
  TensorView v;
  if (a.kind == JW_VALUE_TENSOR) {
    if (a.value.tensor == nullptr) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: parameter '{}': tensor pointer is null", schema.name(),
                   p.name);
    }
    const jw_tensor& t = *a.value.tensor;
    if (t.struct_size < offsetof(jw_tensor, device_index) + sizeof(int32_t)) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: parameter '{}': jw_tensor struct_size {} is too small",
                   schema.name(), p.name, t.struct_size);
    }
    v.meta = &t.meta;
    v.runtime = true;
    v.data = t.data;
    // The specialization of a runtime tensor comes from its pointer, so a
    // warmup tensor with the same metadata and the flag set matches it.
    v.aligned = reinterpret_cast<uintptr_t>(t.data) % 16 == 0;
  } else if (a.kind == JW_VALUE_WARMUP_TENSOR) {
    if (a.value.meta == nullptr) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: parameter '{}': tensor metadata pointer is null",
                   schema.name(), p.name);
    }
    v.meta = a.value.meta;
    v.aligned = (v.meta->flags & JW_TENSOR_ALIGNED_16) != 0;
  } else {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "{}: parameter '{}' takes a tensor, got {}", schema.name(),
                 p.name, describe_value_kind(a));
  }
  const jw_tensor_meta& m = *v.meta;
  const int dtype = detail::raw_enum(m.dtype);
  if (dtype <= JW_DTYPE_INVALID || dtype >= JW_DTYPE_COUNT) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "{}: parameter '{}': invalid dtype {}", schema.name(), p.name,
                 dtype);
  }
  if (m.struct_size < sizeof(jw_tensor_meta)) {
    detail::fail(
        JW_ERROR_INVALID_ARGUMENT,
        "{}: parameter '{}': jw_tensor_meta struct_size {} is too small",
        schema.name(), p.name, m.struct_size);
  }
  if (p.allowed_dtypes != 0 &&
      (p.allowed_dtypes & JW_DTYPE_BIT(m.dtype)) == 0) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "{}: parameter '{}' does not take {} (allowed: {})",
                 schema.name(), p.name, dtype_name(m.dtype),
                 dtype_list(p.allowed_dtypes));
  }
  if (m.rank > JW_MAX_RANK) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "{}: parameter '{}': rank {} > {}",
                 schema.name(), p.name, m.rank, JW_MAX_RANK);
  }
  if (p.rank >= 0 && m.rank != static_cast<uint32_t>(p.rank)) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "{}: parameter '{}' must have rank {}, got rank {}",
                 schema.name(), p.name, p.rank, m.rank);
  }
  for (uint32_t i = 0; i < m.rank; ++i) {
    if (m.shape[i] < 0) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: parameter '{}': dimension {} has negative extent {}",
                   schema.name(), p.name, i, m.shape[i]);
    }
    if ((m.flags & JW_TENSOR_HAS_STRIDES) != 0 && m.strides[i] < 0) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: parameter '{}': dimension {} has negative stride {}",
                   schema.name(), p.name, i, m.strides[i]);
    }
  }
  if (p.has_flag(JW_PARAM_CONTIGUOUS) && !is_compact_row_major(m)) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "{}: parameter '{}' must be contiguous (compact row-major)",
                 schema.name(), p.name);
  }
  if (p.has_flag(JW_PARAM_INNER_CONTIGUOUS) && m.rank > 0 &&
      (m.flags & JW_TENSOR_HAS_STRIDES) != 0 && m.shape[m.rank - 1] > 1 &&
      m.strides[m.rank - 1] != 1) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "{}: parameter '{}' must have a unit stride in its last "
                 "dimension, got {}",
                 schema.name(), p.name, m.strides[m.rank - 1]);
  }
  if (v.runtime && v.data == nullptr && element_count(m) != 0) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "{}: parameter '{}': null data for a tensor of {} elements",
                 schema.name(), p.name, element_count(m));
  }
  return v;
}

}  // namespace

std::string int128_to_string(__int128 value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  // Work on the magnitude as unsigned so the minimum value does not overflow.
  unsigned __int128 magnitude =
      negative ? static_cast<unsigned __int128>(-(value + 1)) + 1
               : static_cast<unsigned __int128>(value);
  std::string digits;
  while (magnitude != 0) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  }
  if (negative) digits.push_back('-');
  return std::string(digits.rbegin(), digits.rend());
}

IntSpec specialize_integer(__int128 value, bool do_not_specialize) {
  IntSpec spec;
  if (value >= kI32Min && value < kI32End) {
    spec.type = JW_INT_I32;
  } else if (value >= kI64Min && value < kI64End) {
    spec.type = JW_INT_I64;
  } else if (value >= 0 && value < kU64End) {
    spec.type = JW_INT_U64;
  } else {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "integer {} overflows: it is outside [-2^63, 2^64)",
                 int128_to_string(value));
  }
  if (do_not_specialize) {
    spec.value_class = JW_INT_CLASS_NONE;
  } else if (value == 1) {
    spec.value_class = JW_INT_CLASS_ONE;
  } else if (value % 16 == 0) {
    spec.value_class = JW_INT_CLASS_DIV16;
  } else {
    spec.value_class = JW_INT_CLASS_NONE;
  }
  return spec;
}

__int128 scalar_specialization_rep(IntSpec spec) {
  if (spec.value_class == JW_INT_CLASS_ONE) return 1;
  const bool divisible = spec.value_class == JW_INT_CLASS_DIV16;
  switch (spec.type) {
    case JW_INT_I32: return divisible ? 16 : 2;
    case JW_INT_I64: return divisible ? (kOne << 31) : (kOne << 31) + 1;
    case JW_INT_U64: return divisible ? (kOne << 63) : (kOne << 63) + 1;
  }
  detail::fail(JW_ERROR_INVALID_ARGUMENT, "unknown integer type {}",
               static_cast<int>(spec.type));
}

CompileKey derive_key(const KernelSchema& schema,
                      std::span<const jw_arg_value> args,
                      std::string_view target, std::string_view impl_name) {
  const auto& params = schema.params();
  if (args.size() > params.size()) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "{}: takes {} arguments, got {}",
                 schema.name(), params.size(), args.size());
  }
  std::vector<ParamSpec> specs(params.size());
  std::vector<jw_dtype> tensor_dtypes(params.size(), JW_DTYPE_INVALID);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamDesc& p = params[i];
    ParamSpec& spec = specs[i];
    spec.name = p.name;
    spec.kind = p.kind;

    jw_arg_value defaulted{};
    const jw_arg_value* a = nullptr;
    if (i < args.size()) {
      a = &args[i];
      if (a->struct_size < offsetof(jw_arg_value, value) + sizeof(a->value)) {
        detail::fail(
            JW_ERROR_INVALID_ARGUMENT,
            "{}: argument '{}': jw_arg_value struct_size {} is too small",
            schema.name(), p.name, a->struct_size);
      }
    } else if (p.has_flag(JW_PARAM_HAS_DEFAULT)) {
      defaulted.struct_size = sizeof(jw_arg_value);
      defaulted.kind = JW_VALUE_SCALAR;
      defaulted.value.scalar = p.default_value;
      a = &defaulted;
    } else {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: missing argument '{}' (position {}; {} given)",
                   schema.name(), p.name, i, args.size());
    }

    // Enums from a C caller are range-checked before use (errors.hpp).
    const int value_kind = detail::raw_enum(a->kind);
    if (value_kind < JW_VALUE_TENSOR || value_kind > JW_VALUE_SCALAR) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: argument '{}' has unknown value kind {}", schema.name(),
                   p.name, value_kind);
    }
    if (value_kind == JW_VALUE_SCALAR) {
      const int scalar_kind = detail::raw_enum(a->value.scalar.kind);
      if (scalar_kind < JW_SCALAR_NONE || scalar_kind > JW_SCALAR_BOOL) {
        detail::fail(JW_ERROR_INVALID_ARGUMENT,
                     "{}: argument '{}' has unknown scalar kind {}",
                     schema.name(), p.name, scalar_kind);
      }
    }
    if (p.kind == JW_PARAM_TENSOR) {
      const TensorView t = tensor_of(*a, schema, p);
      tensor_dtypes[i] = t.meta->dtype;
      spec.dtype = t.meta->dtype;
      spec.alignment = p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT)
                           ? JW_ALIGN_NOT_SPECIALIZED
                           : (t.aligned ? JW_ALIGN_16 : JW_ALIGN_NONE);
      if (p.has_flag(JW_PARAM_SPECIALIZE_STRIDES)) {
        for (int64_t stride : effective_strides(*t.meta)) {
          spec.stride_specs.push_back(specialize_integer(stride, false));
        }
      }
      continue;
    }
    if (a->kind != JW_VALUE_SCALAR) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "{}: parameter '{}' takes {}, got {}", schema.name(), p.name,
                   p.kind == JW_PARAM_FLOAT ? "a float" : "a scalar",
                   describe_value_kind(*a));
    }
    const jw_scalar& s = a->value.scalar;
    const bool dns = p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE);
    switch (p.kind) {
      case JW_PARAM_INT:
        spec.int_spec = specialize_integer(integer_of(s, schema, p), dns);
        break;
      case JW_PARAM_FLOAT:
        if (s.kind != JW_SCALAR_FLOAT && s.kind != JW_SCALAR_INT &&
            s.kind != JW_SCALAR_UINT) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "{}: parameter '{}' takes a float, got {}",
                       schema.name(), p.name, describe_value_kind(*a));
        }
        spec.float_type =
            p.has_flag(JW_PARAM_FLOAT64) ? JW_FLOAT_F64 : JW_FLOAT_F32;
        break;
      case JW_PARAM_SCALAR:
        if (s.kind != JW_SCALAR_FLOAT && s.kind != JW_SCALAR_INT &&
            s.kind != JW_SCALAR_UINT) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "{}: parameter '{}' takes an integer or a float, got {}",
                       schema.name(), p.name, describe_value_kind(*a));
        }
        if (s.kind == JW_SCALAR_FLOAT) {
          spec.scalar_kind = JW_SCALAR_FLOAT;
          spec.float_type =
              p.has_flag(JW_PARAM_FLOAT64) ? JW_FLOAT_F64 : JW_FLOAT_F32;
        } else {
          spec.scalar_kind = JW_SCALAR_INT;
          spec.int_spec = specialize_integer(integer_of(s, schema, p), dns);
        }
        break;
      case JW_PARAM_CONSTEXPR:
        if (s.kind < JW_SCALAR_INT || s.kind > JW_SCALAR_BOOL) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "{}: constexpr '{}' needs a value", schema.name(),
                       p.name);
        }
        spec.constexpr_value = canonical_constexpr(s);
        break;
      case JW_PARAM_TENSOR: break;
    }
  }
  // Cross-parameter dtype rules, once every tensor is known.
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamDesc& p = params[i];
    if (p.kind == JW_PARAM_SCALAR && !p.same_dtype_as.empty()) {
      // "A scalar of x's kind": a float tensor makes it a float whatever
      // was passed (so 0 and 0.0 give one key); an integer tensor refuses
      // a float.
      const int other = schema.index_of(p.same_dtype_as);
      const jw_dtype dtype =
          other >= 0 ? tensor_dtypes[other] : JW_DTYPE_INVALID;
      if (is_floating_dtype(dtype)) {
        specs[i].scalar_kind = JW_SCALAR_FLOAT;
        specs[i].int_spec = IntSpec{};
        specs[i].float_type =
            p.has_flag(JW_PARAM_FLOAT64) ? JW_FLOAT_F64 : JW_FLOAT_F32;
      } else if (dtype != JW_DTYPE_INVALID &&
                 specs[i].scalar_kind == JW_SCALAR_FLOAT) {
        detail::fail(JW_ERROR_INVALID_ARGUMENT,
                     "{}: parameter '{}' must be an integer, like '{}' ({}); "
                     "got a float",
                     schema.name(), p.name, p.same_dtype_as, dtype_name(dtype));
      }
      continue;
    }
    if (p.kind != JW_PARAM_TENSOR || p.same_dtype_as.empty()) continue;
    const int other = schema.index_of(p.same_dtype_as);
    if (other >= 0 && tensor_dtypes[other] != tensor_dtypes[i]) {
      detail::fail(
          JW_ERROR_INVALID_ARGUMENT,
          "{}: parameter '{}' must have the dtype of '{}' ({}), got {}",
          schema.name(), p.name, p.same_dtype_as,
          dtype_name(tensor_dtypes[other]), dtype_name(tensor_dtypes[i]));
    }
  }
  return CompileKey(schema.name(), std::string(impl_name), std::string(target),
                    std::move(specs));
}

}  // namespace jitwarm
