// checked_pack: the checked packing of checked_argument_packing.hpp.
#include "checked_argument_packing.hpp"

#include <jitwarm/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace jitwarm::gpu_test {
namespace {

using gpu::KernelArguments;
using gpu::KeyParams;

constexpr __int128 kOne = 1;

// --- reading launch arguments -----------------------------------------

const jw_arg_value& arg_at(const KeyParams& key,
                           std::span<const jw_arg_value> args, uint32_t i) {
  const jw_arg_value& arg = args[i];
  if (arg.struct_size < offsetof(jw_arg_value, value) + sizeof(arg.value)) {
    key.fail(i, "was passed a jw_arg_value of unknown size " +
                    std::to_string(arg.struct_size));
  }
  return arg;
}

const jw_tensor& runtime_tensor(const KeyParams& key,
                                std::span<const jw_arg_value> args,
                                uint32_t i) {
  const jw_arg_value& arg = arg_at(key, args, i);
  if (arg.kind == JW_VALUE_WARMUP_TENSOR) {
    key.fail(i, "is a warmup tensor (metadata only): a launch needs storage");
  }
  if (arg.kind != JW_VALUE_TENSOR || arg.value.tensor == nullptr) {
    key.fail(i, "needs a tensor");
  }
  const jw_tensor& tensor = *arg.value.tensor;
  if (tensor.struct_size <
      offsetof(jw_tensor, device_index) + sizeof(int32_t)) {
    key.fail(i, "was passed a jw_tensor of unknown size " +
                    std::to_string(tensor.struct_size));
  }
  return tensor;
}

std::string int128_text(__int128 value) {
  const bool negative = value < 0;
  unsigned __int128 magnitude =
      negative ? static_cast<unsigned __int128>(-(value + 1)) + 1
               : static_cast<unsigned __int128>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + magnitude % 10));
    magnitude /= 10;
  } while (magnitude != 0);
  return negative ? "-" + digits : digits;
}

// An integer argument as a mathematical value.
__int128 integer_value(const KeyParams& key, std::span<const jw_arg_value> args,
                       uint32_t i) {
  const jw_arg_value& arg = arg_at(key, args, i);
  if (arg.kind != JW_VALUE_SCALAR) key.fail(i, "needs an integer");
  switch (arg.value.scalar.kind) {
    case JW_SCALAR_INT:
    case JW_SCALAR_BOOL: return arg.value.scalar.value.i;
    case JW_SCALAR_UINT: return static_cast<__int128>(arg.value.scalar.value.u);
    default: key.fail(i, "needs an integer");
  }
}

double float_value(const KeyParams& key, std::span<const jw_arg_value> args,
                   uint32_t i) {
  const jw_arg_value& arg = arg_at(key, args, i);
  if (arg.kind != JW_VALUE_SCALAR) key.fail(i, "needs a float");
  switch (arg.value.scalar.kind) {
    case JW_SCALAR_FLOAT: return arg.value.scalar.value.f;
    case JW_SCALAR_INT:
    case JW_SCALAR_BOOL: return static_cast<double>(arg.value.scalar.value.i);
    case JW_SCALAR_UINT: return static_cast<double>(arg.value.scalar.value.u);
    default: key.fail(i, "needs a float");
  }
}

std::string int_type_name(jw_int_type type) {
  return std::string(plugin::int_type_name(type).value_or("u64"));
}

}  // namespace

KernelArguments checked_pack(const KeyParams& params,
                             std::span<const jw_arg_value> args) {
  const jw_compile_key_view& key = params.key();
  if (args.size() != key.num_params) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": launched with " +
            std::to_string(args.size()) + " arguments; the key has " +
            std::to_string(key.num_params) + " parameters");
  }
  KernelArguments packed;
  auto push_integer = [&](uint32_t i, jw_int_spec spec) {
    const __int128 value = integer_value(params, args, i);
    const bool fits = spec.type == JW_INT_I32
                          ? value >= -(kOne << 31) && value < (kOne << 31)
                      : spec.type == JW_INT_I64
                          ? value >= -(kOne << 63) && value < (kOne << 63)
                          : value >= 0 && value < (kOne << 64);
    if (!fits) {
      params.fail(i, "= " + int128_text(value) +
                         " does not fit the key's type " +
                         int_type_name(spec.type));
    }
    if (spec.value_class == JW_INT_CLASS_ONE && value != 1) {
      params.fail(i, "is not 1, which the key specialized on");
    }
    if (spec.value_class == JW_INT_CLASS_DIV16 && value % 16 != 0) {
      params.fail(i, "is not divisible by 16, which the key specialized on");
    }
    switch (spec.type) {
      case JW_INT_I32: packed.push(static_cast<int32_t>(value)); break;
      case JW_INT_I64: packed.push(static_cast<int64_t>(value)); break;
      case JW_INT_U64: packed.push(static_cast<uint64_t>(value)); break;
    }
  };
  auto push_float = [&](uint32_t i, jw_float_type type) {
    const double value = float_value(params, args, i);
    if (type == JW_FLOAT_F64) {
      packed.push(value);
    } else {
      packed.push(static_cast<float>(value));
    }
  };

  for (uint32_t i = 0; i < key.num_params; ++i) {
    const jw_param_spec& spec = key.params[i];
    switch (spec.kind) {
      case JW_PARAM_TENSOR: {
        const jw_tensor& tensor = runtime_tensor(params, args, i);
        if (tensor.meta.dtype != spec.dtype) {
          params.fail(i,
                      "has dtype " +
                          std::to_string(static_cast<int>(tensor.meta.dtype)) +
                          "; the key was compiled for dtype " +
                          std::to_string(static_cast<int>(spec.dtype)));
        }
        if (spec.alignment == JW_ALIGN_16 &&
            reinterpret_cast<uintptr_t>(tensor.data) % 16 != 0) {
          params.fail(i,
                      "is not 16-byte aligned, which the key specialized on");
        }
        if (tensor.device_index < 0) {
          params.fail(i, "is in host memory; a GPU launch needs device memory");
        }
        if (packed.device() >= 0 && packed.device() != tensor.device_index) {
          params.fail(i, "is on device " + std::to_string(tensor.device_index) +
                             "; earlier tensors are on device " +
                             std::to_string(packed.device()));
        }
        packed.set_device(tensor.device_index);
        packed.push(tensor.data);
        break;
      }
      case JW_PARAM_INT: push_integer(i, params.int_spec(i)); break;
      case JW_PARAM_FLOAT: push_float(i, params.float_type(i)); break;
      case JW_PARAM_SCALAR:
        if (params.scalar_kind(i) == JW_SCALAR_FLOAT) {
          push_float(i, params.float_type(i));
        } else {
          push_integer(i, params.int_spec(i));
        }
        break;
      case JW_PARAM_CONSTEXPR: {
        // Baked into the binary: the launch must agree with the key.
        const jw_scalar& compiled = spec.constexpr_value;
        const bool floating = compiled.kind == JW_SCALAR_FLOAT;
        const bool same =
            floating ? float_value(params, args, i) == compiled.value.f
                     : integer_value(params, args, i) ==
                           (compiled.kind == JW_SCALAR_UINT
                                ? static_cast<__int128>(compiled.value.u)
                                : static_cast<__int128>(compiled.value.i));
        if (!same) params.fail(i, "differs from the value the key compiled in");
        break;
      }
    }
  }
  if (packed.device() < 0) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": no tensor argument names a device");
  }
  return packed;
}

}  // namespace jitwarm::gpu_test
