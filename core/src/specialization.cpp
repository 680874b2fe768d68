// The specialization rules (docs/compile-keys.md), argument
// validation, argument signatures (argument_signature.hpp) and derive_key,
// the one function that maps arguments to a compile key for both the launch
// path and warmup.
#include <jitwarm/plugin/names.hpp>

#include "argument_fields.hpp"
#include "argument_signature.hpp"
#include "errors.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace jitwarm {
namespace {

constexpr __int128 kOne = 1;
constexpr __int128 kI64Min = -(kOne << 63);
constexpr __int128 kI64End = kOne << 63;
constexpr __int128 kU64End = kOne << 64;

// Of an argument's kind and, for a scalar, its scalar (ArgumentFields).
std::string describe_value_kind(int kind, const jw_scalar& scalar) {
  switch (kind) {
    case JW_VALUE_TENSOR: return "a tensor";
    case JW_VALUE_WARMUP_TENSOR: return "a warmup tensor";
    case JW_VALUE_SCALAR:
      switch (scalar.kind) {
        case JW_SCALAR_INT:
        case JW_SCALAR_UINT: return "an integer";
        case JW_SCALAR_FLOAT: return "a float";
        case JW_SCALAR_BOOL: return "a bool";
        default: return "an empty scalar";
      }
    default: return "nothing";
  }
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

namespace {

// The specialization of an integer that fits in 64 bits signed: inlined into
// the launch path (every integer argument and stride of every launch), which
// would otherwise pay 128-bit compares and a call. specialize_integer below
// is the one definition; this is its common case.
inline IntSpec specialize_int64(int64_t value, bool do_not_specialize) {
  IntSpec spec;
  spec.type =
      value >= INT32_MIN && value <= INT32_MAX ? JW_INT_I32 : JW_INT_I64;
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

}  // namespace

IntSpec specialize_integer(__int128 value, bool do_not_specialize) {
  if (value >= kI64Min && value < kI64End) {
    return specialize_int64(static_cast<int64_t>(value), do_not_specialize);
  }
  IntSpec spec;
  if (value >= 0 && value < kU64End) {
    spec.type = JW_INT_U64;
  } else {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "integer {} overflows: it is outside [-2^63, 2^64)",
                 int128_to_string(value));
  }
  if (do_not_specialize || value % 16 != 0) {
    spec.value_class = JW_INT_CLASS_NONE;
  } else {
    spec.value_class = JW_INT_CLASS_DIV16;  // above 2^63, so never 1
  }
  return spec;
}

namespace {

// The key's view of an integer argument: specialize_integer, its common case
// (a signed 64-bit value) inlined.
IntSpec integer_spec(const jw_scalar& s, const KernelSchema& schema,
                     const ParamDesc& p, bool do_not_specialize) {
  if (s.kind == JW_SCALAR_INT) {
    return specialize_int64(s.value.i, do_not_specialize);
  }
  return specialize_integer(integer_of(s, schema, p), do_not_specialize);
}

}  // namespace

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

}  // namespace jitwarm

// ===========================================================================
// Argument signatures and derive_key
// ===========================================================================
namespace jitwarm::detail {
namespace {

// Word packing (argument_signature.hpp has the layout).
constexpr uint64_t pack_int_spec(IntSpec spec) {
  return static_cast<uint64_t>(spec.type) |
         static_cast<uint64_t>(spec.value_class) << 8;
}
IntSpec unpack_int_spec(uint64_t word) {
  return IntSpec{static_cast<jw_int_type>(word & 0xFF),
                 static_cast<jw_int_class>((word >> 8) & 0xFF)};
}
constexpr uint64_t pack_stride_spec(IntSpec spec) {
  return static_cast<uint64_t>(spec.type) |
         static_cast<uint64_t>(spec.value_class) << 2;
}
IntSpec unpack_stride_spec(uint64_t nibble) {
  return IntSpec{static_cast<jw_int_type>(nibble & 0x3),
                 static_cast<jw_int_class>((nibble >> 2) & 0x3)};
}
// JW_PARAM_SCALAR: how it was passed, and its int or float specialization.
uint64_t pack_scalar(jw_scalar_kind kind, IntSpec spec, jw_float_type type) {
  return static_cast<uint64_t>(kind) | pack_int_spec(spec) << 8 |
         static_cast<uint64_t>(type) << 24;
}
uint64_t value_bits(const jw_scalar& s) {
  uint64_t bits = 0;
  std::memcpy(&bits, &s.value, sizeof bits);
  return s.kind == JW_SCALAR_BOOL ? (s.value.i != 0 ? 1 : 0) : bits;
}
jw_float_type float_type_of(const ParamDesc& p) {
  return p.has_flag(JW_PARAM_FLOAT64) ? JW_FLOAT_F64 : JW_FLOAT_F32;
}
bool has_elements(const ArgumentFields& t) {
  return std::ranges::none_of(t.shape(),
                              [](int64_t extent) { return extent == 0; });
}

// Validates one tensor argument (with the guards its fields stopped at, in
// reading order) and returns the 16-byte alignment a key sees (from the
// pointer for a runtime tensor).
bool checked_alignment(const ArgumentFields& t, const KernelSchema& schema,
                       const ParamDesc& p, int32_t* device) {
  if (t.kind() == JW_VALUE_TENSOR) {
    if (t.stopped_at() == FieldGuard::tensor_null) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}': tensor pointer is null", schema.name(), p.name);
    }
    if (t.stopped_at() == FieldGuard::tensor_struct) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}': jw_tensor struct_size {} is too small",
           schema.name(), p.name, t.refused_struct_size());
    }
    if (*device != ArgumentSignature::kNoDevice &&
        t.device_index() != *device) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}' is on device {}; earlier tensors are on device "
           "{}",
           schema.name(), p.name, t.device_index(), *device);
    }
    *device = t.device_index();
  } else if (t.kind() == JW_VALUE_WARMUP_TENSOR) {
    if (t.stopped_at() == FieldGuard::warmup_launched) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: warmup tensors (metadata without storage) cannot be launched",
           schema.name());
    }
    if (t.stopped_at() == FieldGuard::meta_null) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}': tensor metadata pointer is null", schema.name(),
           p.name);
    }
  } else {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}: parameter '{}' takes a tensor, got {}",
         schema.name(), p.name, describe_value_kind(t.kind(), t.scalar()));
  }
  const int raw_dtype = t.dtype();
  if (raw_dtype <= JW_DTYPE_INVALID || raw_dtype >= JW_DTYPE_COUNT) {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}: parameter '{}': invalid dtype {}",
         schema.name(), p.name, raw_dtype);
  }
  const auto dtype = static_cast<jw_dtype>(raw_dtype);
  if (t.stopped_at() == FieldGuard::meta_struct) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: parameter '{}': jw_tensor_meta struct_size {} is too small",
         schema.name(), p.name, t.refused_struct_size());
  }
  if (p.allowed_dtypes != 0 && (p.allowed_dtypes & JW_DTYPE_BIT(dtype)) == 0) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: parameter '{}' does not take {} (allowed: {})", schema.name(),
         p.name, dtype_name(dtype), plugin::dtype_set_names(p.allowed_dtypes));
  }
  const uint32_t rank = t.rank();
  if (t.stopped_at() == FieldGuard::rank) {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}: parameter '{}': rank {} > {}",
         schema.name(), p.name, rank, JW_MAX_RANK);
  }
  if (p.rank >= 0 && rank != static_cast<uint32_t>(p.rank)) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: parameter '{}' must have rank {}, got rank {}", schema.name(),
         p.name, p.rank, rank);
  }
  const std::span<const int64_t> shape = t.shape();
  const std::span<const int64_t> strides = t.strides();  // none without
  for (uint32_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}': dimension {} has negative extent {}",
           schema.name(), p.name, i, shape[i]);
    }
    if (!strides.empty() && strides[i] < 0) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}': dimension {} has negative stride {}",
           schema.name(), p.name, i, strides[i]);
    }
  }
  // Without strides a tensor is compact row-major: no call for it.
  if (p.has_flag(JW_PARAM_CONTIGUOUS) && t.has_strides() &&
      !t.compact_row_major()) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: parameter '{}' must be contiguous (compact row-major)",
         schema.name(), p.name);
  }
  if (p.has_flag(JW_PARAM_INNER_CONTIGUOUS) && !strides.empty() &&
      shape.back() > 1 && strides.back() != 1) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: parameter '{}' must have a unit stride in its last "
         "dimension, got {}",
         schema.name(), p.name, strides.back());
  }
  if (t.kind() == JW_VALUE_TENSOR) {
    if (t.data_null() && has_elements(t)) {
      __int128 count = 1;
      for (const int64_t extent : shape) {
        count = std::min<__int128>(count * extent, INT64_MAX);
      }
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}': null data for a tensor of {} elements",
           schema.name(), p.name, int128_to_string(count));
    }
    // The specialization of a runtime tensor comes from its pointer, so a
    // warmup tensor with the same metadata and the flag set matches it.
    return t.data_aligned_16();
  }
  return (t.flags() & JW_TENSOR_ALIGNED_16) != 0;
}

// Strides in elements as the key sees them (compact row-major when absent),
// packed 4 bits each.
uint64_t stride_word(const ArgumentFields& t) {
  uint64_t word = 0;
  int64_t running = 1;
  const bool has_strides = t.has_strides();
  const std::span<const int64_t> shape = t.shape();
  const std::span<const int64_t> strides = t.strides();
  for (uint32_t i = t.rank(); i-- > 0;) {
    const int64_t stride = has_strides ? strides[i] : running;
    if (!has_strides) running *= std::max<int64_t>(shape[i], 1);
    word |= pack_stride_spec(specialize_int64(stride, false)) << (4 * i);
  }
  return word;
}

}  // namespace

void ArgumentSignature::resize(uint32_t num_params) {
  size_ = kWordsPerParam * num_params;
  if (num_params > kInlineParams) {
    heap_ = std::make_unique_for_overwrite<uint64_t[]>(size_);
  } else {
    heap_.reset();
  }
  tensor_device = kNoDevice;
}

uint64_t ArgumentSignature::hash() const {
  return XXH3_64bits(data(), size_ * sizeof(uint64_t));
}

void specialize_arguments(const KernelSchema& schema,
                          std::span<const jw_arg_value> args, ArgumentUse use,
                          ArgumentSignature& out) {
  const auto& params = schema.params();
  // Sizes read once: the stores into `out` below could alias the vector,
  // so the compiler would reload (and divide) them on every iteration.
  const std::size_t num_params = params.size();
  const std::size_t num_args = args.size();
  if (num_args > num_params) {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}: takes {} arguments, got {}",
         schema.name(), num_params, num_args);
  }
  out.resize(static_cast<uint32_t>(num_params));
  for (std::size_t i = 0; i < num_params; ++i) {
    const ParamDesc& p = params[i];
    uint64_t* words = out.param(static_cast<uint32_t>(i));
    // Zero unless the parameter's kind writes them (the layout's "unused
    // words are zero"); no memset of the whole signature first.
    words[0] = 0;
    words[1] = 0;

    jw_arg_value defaulted;  // filled only when the default is used
    const jw_arg_value* value = nullptr;
    if (i < num_args) {
      value = &args[i];
    } else if (p.has_flag(JW_PARAM_HAS_DEFAULT)) {
      defaulted = jw_arg_value{};
      defaulted.struct_size = sizeof(jw_arg_value);
      defaulted.kind = JW_VALUE_SCALAR;
      defaulted.value.scalar = p.default_value;
      value = &defaulted;
    } else {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: missing argument '{}' (position {}; {} given)", schema.name(),
           p.name, i, num_args);
    }
    // Read only through its fields, so that arguments with the image of
    // arguments that passed pass too (argument_fields.hpp).
    ArgumentFields a(*value, use);
    if (a.stopped_at() == FieldGuard::argument_struct) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: argument '{}': jw_arg_value struct_size {} is too small",
           schema.name(), p.name, a.refused_struct_size());
    }

    // Enums from a C caller are range-checked before use (errors.hpp).
    if (a.stopped_at() == FieldGuard::unknown_kind) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: argument '{}' has unknown value kind {}", schema.name(), p.name,
           a.kind());
    }
    if (a.kind() == JW_VALUE_SCALAR) {
      const int scalar_kind = raw_enum(a.scalar().kind);
      if (scalar_kind < JW_SCALAR_NONE || scalar_kind > JW_SCALAR_BOOL) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "{}: argument '{}' has unknown scalar kind {}", schema.name(),
             p.name, scalar_kind);
      }
    }
    if (p.kind == JW_PARAM_TENSOR) {
      const bool aligned = checked_alignment(a, schema, p, &out.tensor_device);
      const jw_alignment alignment =
          p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT)
              ? JW_ALIGN_NOT_SPECIALIZED
              : (aligned ? JW_ALIGN_16 : JW_ALIGN_NONE);
      words[0] = static_cast<uint64_t>(a.dtype()) |
                 static_cast<uint64_t>(alignment) << 8;
      if (p.has_flag(JW_PARAM_SPECIALIZE_STRIDES)) {
        words[0] |= static_cast<uint64_t>(a.rank()) << 16;
        words[1] = stride_word(a);
      }
      continue;
    }
    if (a.kind() != JW_VALUE_SCALAR) {
      fail(JW_ERROR_INVALID_ARGUMENT, "{}: parameter '{}' takes {}, got {}",
           schema.name(), p.name,
           p.kind == JW_PARAM_FLOAT ? "a float" : "a scalar",
           describe_value_kind(a.kind(), a.scalar()));
    }
    const jw_scalar& s = a.scalar();
    const bool dns = p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE);
    const bool numeric = s.kind == JW_SCALAR_FLOAT || s.kind == JW_SCALAR_INT ||
                         s.kind == JW_SCALAR_UINT;
    switch (p.kind) {
      case JW_PARAM_INT:
        words[0] = pack_int_spec(integer_spec(s, schema, p, dns));
        break;
      case JW_PARAM_FLOAT:
        if (!numeric) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "{}: parameter '{}' takes a float, got {}", schema.name(),
               p.name, describe_value_kind(a.kind(), a.scalar()));
        }
        words[0] = static_cast<uint64_t>(float_type_of(p));
        break;
      case JW_PARAM_SCALAR:
        if (!numeric) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "{}: parameter '{}' takes an integer or a float, got {}",
               schema.name(), p.name,
               describe_value_kind(a.kind(), a.scalar()));
        }
        words[0] =
            s.kind == JW_SCALAR_FLOAT
                ? pack_scalar(JW_SCALAR_FLOAT, IntSpec{}, float_type_of(p))
                : pack_scalar(JW_SCALAR_INT, integer_spec(s, schema, p, dns),
                              JW_FLOAT_F32);
        break;
      case JW_PARAM_CONSTEXPR: {
        if (s.kind < JW_SCALAR_INT || s.kind > JW_SCALAR_BOOL) {
          fail(JW_ERROR_INVALID_ARGUMENT, "{}: constexpr '{}' needs a value",
               schema.name(), p.name);
        }
        const jw_scalar c = canonical_constexpr(s);
        words[0] = static_cast<uint64_t>(c.kind);
        words[1] = value_bits(c);
        break;
      }
      case JW_PARAM_TENSOR: break;
    }
  }
  // Cross-parameter dtype rules, once every tensor is known.
  for (const uint32_t i : schema.dtype_followers()) {
    const ParamDesc& p = params[i];
    const int other = schema.same_dtype_index(i);
    const auto tensor_dtype = [&](std::size_t index) {
      return static_cast<jw_dtype>(out.param(static_cast<uint32_t>(index))[0] &
                                   0xFF);
    };
    const jw_dtype dtype = tensor_dtype(static_cast<std::size_t>(other));
    uint64_t* words = out.param(static_cast<uint32_t>(i));
    if (p.kind == JW_PARAM_SCALAR) {
      // "A scalar of x's kind": a float tensor makes it a float whatever
      // was passed (so 0 and 0.0 give one key); an integer tensor refuses
      // a float.
      const bool passed_float = (words[0] & 0xFF) == JW_SCALAR_FLOAT;
      if (is_floating_dtype(dtype)) {
        words[0] = pack_scalar(JW_SCALAR_FLOAT, IntSpec{}, float_type_of(p));
      } else if (passed_float) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "{}: parameter '{}' must be an integer, like '{}' ({}); "
             "got a float",
             schema.name(), p.name, p.same_dtype_as, dtype_name(dtype));
      }
      continue;
    }
    if (p.kind == JW_PARAM_TENSOR && tensor_dtype(i) != dtype) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: parameter '{}' must have the dtype of '{}' ({}), got {}",
           schema.name(), p.name, p.same_dtype_as, dtype_name(dtype),
           dtype_name(tensor_dtype(i)));
    }
  }
}

CompileKey key_from_signature(const KernelSchema& schema,
                              const ArgumentSignature& signature,
                              std::string_view target,
                              std::string_view impl_name) {
  const auto& params = schema.params();
  std::vector<ParamSpec> specs(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamDesc& p = params[i];
    const uint64_t* words = signature.param(static_cast<uint32_t>(i));
    ParamSpec& spec = specs[i];
    spec.name = p.name;
    spec.kind = p.kind;
    switch (p.kind) {
      case JW_PARAM_TENSOR: {
        spec.dtype = static_cast<jw_dtype>(words[0] & 0xFF);
        spec.alignment = static_cast<jw_alignment>((words[0] >> 8) & 0xFF);
        const auto strides = static_cast<uint32_t>((words[0] >> 16) & 0xFF);
        for (uint32_t s = 0; s < strides; ++s) {
          spec.stride_specs.push_back(
              unpack_stride_spec((words[1] >> (4 * s)) & 0xF));
        }
        break;
      }
      case JW_PARAM_INT: spec.int_spec = unpack_int_spec(words[0]); break;
      case JW_PARAM_FLOAT:
        spec.float_type = static_cast<jw_float_type>(words[0] & 0xFF);
        break;
      case JW_PARAM_SCALAR:
        spec.scalar_kind = static_cast<jw_scalar_kind>(words[0] & 0xFF);
        if (spec.scalar_kind == JW_SCALAR_FLOAT) {
          spec.float_type = static_cast<jw_float_type>((words[0] >> 24) & 0xFF);
        } else {
          spec.int_spec = unpack_int_spec(words[0] >> 8);
        }
        break;
      case JW_PARAM_CONSTEXPR:
        spec.constexpr_value.kind = static_cast<jw_scalar_kind>(words[0]);
        std::memcpy(&spec.constexpr_value.value, &words[1], sizeof(uint64_t));
        break;
    }
  }
  return CompileKey(schema.name(), std::string(impl_name), std::string(target),
                    std::move(specs));
}

}  // namespace jitwarm::detail

namespace jitwarm {

CompileKey derive_key(const KernelSchema& schema,
                      std::span<const jw_arg_value> args,
                      std::string_view target, std::string_view impl_name) {
  detail::ArgumentSignature signature;
  detail::specialize_arguments(schema, args, detail::ArgumentUse::key,
                               signature);
  return detail::key_from_signature(schema, signature, target, impl_name);
}

}  // namespace jitwarm
