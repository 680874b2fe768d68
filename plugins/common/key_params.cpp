// KeyParams: validation of a compile key against its schema.
#include "key_params.hpp"

#include <jitwarm/plugin.hpp>

namespace jitwarm::gpu {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT, message);
}

std::string_view kind_name(jw_param_kind kind) {
  switch (kind) {
    case JW_PARAM_TENSOR: return "a tensor";
    case JW_PARAM_INT: return "an integer";
    case JW_PARAM_FLOAT: return "a float";
    case JW_PARAM_CONSTEXPR: return "a constexpr";
    case JW_PARAM_SCALAR: return "a scalar";
  }
  return "an unknown kind";
}

}  // namespace

KeyParams::KeyParams(const jw_compile_key_view& key,
                     std::string_view schema_name)
    : KeyParams(key, [&]() -> const KernelDescriptor& {
        const KernelDescriptor* d = find_builtin_descriptor(schema_name);
        if (d == nullptr) {
          throw plugin::PluginError(JW_ERROR_NOT_FOUND,
                                    "kernel '" + std::string(schema_name) +
                                        "' is not in the kernel set");
        }
        return *d;
      }()) {}

KeyParams::KeyParams(const jw_compile_key_view& key,
                     const KernelDescriptor& kernel)
    : key_(key) {
  if (key.kernel_name == nullptr || kernel.kernel_name != key.kernel_name) {
    invalid("compile key " + std::string(text()) + " is for kernel '" +
            (key.kernel_name != nullptr ? key.kernel_name : "(null)") +
            "', not '" + kernel.kernel_name + "'");
  }
  if (key.params == nullptr || key.num_params != kernel.params.size()) {
    invalid("compile key " + std::string(text()) + " has " +
            std::to_string(key.num_params) + " parameters; " +
            kernel.kernel_name + " takes " +
            std::to_string(kernel.params.size()));
  }
  for (uint32_t i = 0; i < key.num_params; ++i) {
    const jw_param_spec& spec = key.params[i];
    const ExprParam& param = kernel.params[i];
    if (spec.name == nullptr || param.name != spec.name) {
      invalid("compile key " + std::string(text()) + ": parameter " +
              std::to_string(i) + " is '" +
              (spec.name != nullptr ? spec.name : "(null)") +
              "', the schema says '" + param.name + "'");
    }
    if (spec.kind != param.kind) {
      fail(i, "is " + std::string(kind_name(spec.kind)) + " in the key but " +
                  std::string(kind_name(param.kind)) + " in the schema");
    }
  }
}

std::string_view KeyParams::text() const {
  if (key_.text != nullptr) return key_.text;
  if (key_.kernel_name != nullptr) return key_.kernel_name;
  return "(unnamed key)";
}

const jw_param_spec& KeyParams::param(uint32_t index) const {
  return key_.params[index];
}

std::string_view KeyParams::name(uint32_t index) const {
  return key_.params[index].name;
}

void KeyParams::fail(uint32_t index, const std::string& problem) const {
  invalid("compile key " + std::string(text()) + ": parameter '" +
          std::string(name(index)) + "' " + problem);
}

const jw_param_spec& KeyParams::checked(uint32_t index,
                                        jw_param_kind kind) const {
  const jw_param_spec& spec = param(index);
  if (spec.kind != kind) {
    fail(index, "is " + std::string(kind_name(spec.kind)) + ", expected " +
                    std::string(kind_name(kind)));
  }
  return spec;
}

jw_dtype KeyParams::dtype(uint32_t index) const {
  const jw_param_spec& spec = checked(index, JW_PARAM_TENSOR);
  if (spec.dtype <= JW_DTYPE_INVALID || spec.dtype >= JW_DTYPE_COUNT) {
    fail(index, "has an invalid dtype (" +
                    std::to_string(static_cast<int>(spec.dtype)) + ")");
  }
  return spec.dtype;
}

bool KeyParams::aligned16(uint32_t index) const {
  return checked(index, JW_PARAM_TENSOR).alignment == JW_ALIGN_16;
}

jw_int_spec KeyParams::int_spec(uint32_t index) const {
  const jw_param_spec& spec = param(index);
  const bool integer =
      spec.kind == JW_PARAM_INT ||
      (spec.kind == JW_PARAM_SCALAR && spec.scalar_kind == JW_SCALAR_INT);
  if (!integer) fail(index, "is not an integer in this key");
  const jw_int_spec s = spec.int_spec;
  if (s.type != JW_INT_I32 && s.type != JW_INT_I64 && s.type != JW_INT_U64) {
    fail(index, "has an invalid integer type (" +
                    std::to_string(static_cast<int>(s.type)) + ")");
  }
  if (s.value_class != JW_INT_CLASS_NONE && s.value_class != JW_INT_CLASS_ONE &&
      s.value_class != JW_INT_CLASS_DIV16) {
    fail(index, "has an invalid integer class (" +
                    std::to_string(static_cast<int>(s.value_class)) + ")");
  }
  return s;
}

jw_float_type KeyParams::float_type(uint32_t index) const {
  const jw_param_spec& spec = param(index);
  const bool floating =
      spec.kind == JW_PARAM_FLOAT ||
      (spec.kind == JW_PARAM_SCALAR && spec.scalar_kind == JW_SCALAR_FLOAT);
  if (!floating) fail(index, "is not a float in this key");
  if (spec.float_type != JW_FLOAT_F32 && spec.float_type != JW_FLOAT_F64) {
    fail(index, "has an invalid float type (" +
                    std::to_string(static_cast<int>(spec.float_type)) + ")");
  }
  return spec.float_type;
}

jw_scalar_kind KeyParams::scalar_kind(uint32_t index) const {
  const jw_param_spec& spec = checked(index, JW_PARAM_SCALAR);
  if (spec.scalar_kind != JW_SCALAR_INT &&
      spec.scalar_kind != JW_SCALAR_FLOAT) {
    fail(index, "is a scalar of neither integer nor float kind");
  }
  return spec.scalar_kind;
}

int64_t KeyParams::constexpr_int(uint32_t index, int64_t min,
                                 int64_t max) const {
  const jw_scalar& value = checked(index, JW_PARAM_CONSTEXPR).constexpr_value;
  int64_t v = 0;
  switch (value.kind) {
    case JW_SCALAR_INT:
    case JW_SCALAR_BOOL: v = value.value.i; break;
    case JW_SCALAR_UINT:
      if (value.value.u > static_cast<uint64_t>(max)) {
        fail(index, "= " + std::to_string(value.value.u) + " is above " +
                        std::to_string(max));
      }
      v = static_cast<int64_t>(value.value.u);
      break;
    default: fail(index, "must be an integer constexpr");
  }
  if (v < min || v > max) {
    fail(index, "= " + std::to_string(v) + " is outside [" +
                    std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

}  // namespace jitwarm::gpu
