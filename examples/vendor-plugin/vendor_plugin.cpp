// vendor_plugin.cpp — libjitwarm-example-vendor.so: what a vendor who is not
// part of this project writes, and tests with nothing but `jitwarm
// conformance --plugin libjitwarm-example-vendor.so` (docs/conformance.md).
//
// It registers a platform "example" whose "device" is host memory (so the
// runner can launch it on any machine) and implements three kernels of the
// portable set on it:
//   silu_and_mul  correct
//   expand        correct
//   rms_norm      DELIBERATELY WRONG: it forgets to multiply by `weight`.
//                 The conformance tests use it to check that the runner
//                 reports the failure with the case and the worst error.
//                 (Every case with rows fails, whatever its size or dtype,
//                 so expected-failures.toml stays stable.)
//
// It defines no schema (the CPU reference plugin defines the ten), reads
// its arguments in schema order (docs/kernels.md), and includes only the
// installed headers: jitwarm.h and the plugin SDK, jitwarm/plugin.hpp
// (docs/plugin-sdk.md). It builds out of this tree with Meson or CMake.
#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace example_vendor {
namespace {

using jitwarm::plugin::guarded;
using jitwarm::plugin::PluginError;
namespace numeric = jitwarm::numeric;

constexpr const char* kPlatform = "example";
constexpr const char* kTarget = "example:host";
constexpr const char* kImplName = "example-vendor";

[[noreturn]] void invalid(const std::string& message) {
  throw PluginError(JW_ERROR_INVALID_ARGUMENT, "example-vendor: " + message);
}

// --- argument access (schema order, checked) -------------------------------

const jw_tensor& tensor_at(const jw_arg_value* args, uint32_t count,
                           uint32_t index, const char* name) {
  if (index >= count || args[index].kind != JW_VALUE_TENSOR ||
      args[index].value.tensor == nullptr) {
    invalid(std::string(name) + " must be a tensor");
  }
  return *args[index].value.tensor;
}

const jw_scalar& scalar_at(const jw_arg_value* args, uint32_t count,
                           uint32_t index, const char* name) {
  if (index >= count || args[index].kind != JW_VALUE_SCALAR) {
    invalid(std::string(name) + " must be a scalar");
  }
  return args[index].value.scalar;
}

int64_t integer_at(const jw_arg_value* args, uint32_t count, uint32_t index,
                   const char* name) {
  const jw_scalar& s = scalar_at(args, count, index, name);
  if (s.kind == JW_SCALAR_INT) return s.value.i;
  if (s.kind == JW_SCALAR_UINT) return static_cast<int64_t>(s.value.u);
  invalid(std::string(name) + " must be an integer");
}

double float_at(const jw_arg_value* args, uint32_t count, uint32_t index,
                const char* name) {
  const jw_scalar& s = scalar_at(args, count, index, name);
  if (s.kind == JW_SCALAR_FLOAT) return s.value.f;
  if (s.kind == JW_SCALAR_INT) return static_cast<double>(s.value.i);
  invalid(std::string(name) + " must be a number");
}

// The row stride of a rank-2 tensor, in elements.
int64_t row_stride(const jw_tensor& t) {
  if ((t.meta.flags & JW_TENSOR_HAS_STRIDES) != 0) return t.meta.strides[0];
  return t.meta.shape[1];
}

// --- element access by dtype -----------------------------------------------

float load(jw_dtype dtype, const void* base, int64_t index) {
  switch (dtype) {
    case JW_DTYPE_FLOAT32: return static_cast<const float*>(base)[index];
    case JW_DTYPE_FLOAT16:
      return numeric::float16_bits_to_float(
          static_cast<const uint16_t*>(base)[index]);
    case JW_DTYPE_BFLOAT16:
      return numeric::bfloat16_bits_to_float(
          static_cast<const uint16_t*>(base)[index]);
    default: invalid("unsupported float dtype");
  }
}

void store(jw_dtype dtype, void* base, int64_t index, float value) {
  switch (dtype) {
    case JW_DTYPE_FLOAT32: static_cast<float*>(base)[index] = value; return;
    case JW_DTYPE_FLOAT16:
      static_cast<uint16_t*>(base)[index] =
          numeric::float16_bits_from_float(value);
      return;
    case JW_DTYPE_BFLOAT16:
      static_cast<uint16_t*>(base)[index] =
          numeric::bfloat16_bits_from_float(value);
      return;
    default: invalid("unsupported float dtype");
  }
}

// --- the kernels -------------------------------------------------------------

// silu_and_mul(out, x, T, H): out[t, h] = silu(x[t, h]) * x[t, H + h].
void silu_and_mul(const jw_arg_value* args, uint32_t count) {
  const jw_tensor& out = tensor_at(args, count, 0, "out");
  const jw_tensor& x = tensor_at(args, count, 1, "x");
  const int64_t rows = integer_at(args, count, 2, "T");
  const int64_t width = integer_at(args, count, 3, "H");
  const jw_dtype dtype = x.meta.dtype;
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t h = 0; h < width; ++h) {
      const float gate = load(dtype, x.data, t * 2 * width + h);
      const float up = load(dtype, x.data, t * 2 * width + width + h);
      const float silu = gate / (1.0f + std::exp(-gate));
      store(dtype, out.data, t * width + h, silu * up);
    }
  }
}

// rms_norm(out, x, x_stride, weight, eps, T, H). Deliberately wrong: the
// weight is never applied (see the file header).
void rms_norm_without_weight(const jw_arg_value* args, uint32_t count) {
  const jw_tensor& out = tensor_at(args, count, 0, "out");
  const jw_tensor& x = tensor_at(args, count, 1, "x");
  const int64_t x_stride = integer_at(args, count, 2, "x_stride");
  static_cast<void>(tensor_at(args, count, 3, "weight"));
  const auto eps = static_cast<float>(float_at(args, count, 4, "eps"));
  const int64_t rows = integer_at(args, count, 5, "T");
  const int64_t width = integer_at(args, count, 6, "H");
  if (x.meta.shape[0] > 1 && x_stride != row_stride(x)) {
    invalid("x_stride does not match x's row stride");
  }
  const jw_dtype dtype = x.meta.dtype;
  for (int64_t t = 0; t < rows && width > 0; ++t) {
    float sum = 0;
    for (int64_t h = 0; h < width; ++h) {
      const float v = load(dtype, x.data, t * x_stride + h);
      sum += v * v;
    }
    const float inverse_rms =
        1.0f / std::sqrt(sum / static_cast<float>(width) + eps);
    for (int64_t h = 0; h < width; ++h) {
      store(dtype, out.data, t * width + h,
            load(dtype, x.data, t * x_stride + h) * inverse_rms);
    }
  }
}

// expand(output, x, cu_num_tokens, replace_from, replace_to, MAX_NUM_TOKENS).
template <typename T>
void expand_typed(const jw_tensor& output, const jw_tensor& x,
                  const int32_t* ends, T from, T to) {
  const auto* values = static_cast<const T*>(x.data);
  auto* out = static_cast<T*>(output.data);
  int64_t start = 0;
  for (int64_t b = 0; b < x.meta.shape[0]; ++b) {
    const T value = values[b] == from ? to : values[b];
    for (int64_t i = start; i < ends[b]; ++i) out[i] = value;
    start = ends[b];
  }
}

void expand(const jw_arg_value* args, uint32_t count) {
  const jw_tensor& output = tensor_at(args, count, 0, "output");
  const jw_tensor& x = tensor_at(args, count, 1, "x");
  const jw_tensor& cu = tensor_at(args, count, 2, "cu_num_tokens");
  const auto* ends = static_cast<const int32_t*>(cu.data);
  switch (x.meta.dtype) {
    case JW_DTYPE_INT32:
      expand_typed<int32_t>(
          output, x, ends,
          static_cast<int32_t>(integer_at(args, count, 3, "replace_from")),
          static_cast<int32_t>(integer_at(args, count, 4, "replace_to")));
      return;
    case JW_DTYPE_INT64:
      expand_typed<int64_t>(output, x, ends,
                            integer_at(args, count, 3, "replace_from"),
                            integer_at(args, count, 4, "replace_to"));
      return;
    case JW_DTYPE_FLOAT32:
      expand_typed<float>(
          output, x, ends,
          static_cast<float>(float_at(args, count, 3, "replace_from")),
          static_cast<float>(float_at(args, count, 4, "replace_to")));
      return;
    default: invalid("expand: x must be int32, int64 or float32");
  }
}

// --- the C ABI ---------------------------------------------------------------

struct KernelEntry {
  const char* kernel_name;
  void (*run)(const jw_arg_value* args, uint32_t count);
};

const KernelEntry kKernels[] = {
    {"vllm.model_executor.layers.activation.silu_and_mul", &silu_and_mul},
    {"vllm.model_executor.layers.layernorm.rms_norm", &rms_norm_without_weight},
    {"vllm.v1.sample.rejection_sampler.expand", &expand},
};

// There is nothing to compile for the host: the artifact names the kernel
// and the dtype its key selected, which launch checks.
jw_status compile(void* user_data, const jw_compile_key_view* key,
                  const jw_artifact_sink* out) {
  return guarded([&] {
    const auto& entry = *static_cast<const KernelEntry*>(user_data);
    if (key == nullptr || out == nullptr || out->emit == nullptr ||
        key->num_params < 2) {
      invalid("compile: null key or sink, or a key without parameters");
    }
    if (std::string_view(key->target) != kTarget) {
      throw PluginError(JW_ERROR_UNSUPPORTED,
                        std::string("example-vendor compiles for ") + kTarget +
                            " only, not " + key->target);
    }
    const std::string record = std::string(entry.kernel_name) + " dtype " +
                               std::to_string(key->params[1].dtype);
    jw_artifact_desc artifact{};
    artifact.struct_size = sizeof artifact;
    artifact.binary = record.data();
    artifact.binary_size = record.size();
    artifact.format = "example-host";
    artifact.entry_point = entry.kernel_name;
    const jw_status status = out->emit(out->ctx, &artifact);
    if (status != JW_OK) throw PluginError(status, "emit failed");
  });
}

jw_status launch(void* user_data, const jw_artifact_view* artifact,
                 const jw_arg_value* args, uint32_t num_args, void*) {
  return guarded([&] {
    const auto& entry = *static_cast<const KernelEntry*>(user_data);
    if (artifact == nullptr ||
        std::string_view(artifact->entry_point) != entry.kernel_name) {
      invalid("launch: the artifact was not made for this kernel");
    }
    // The artifact's key is the core's to keep valid for the call (jitwarm.h:
    // borrowed for the call); a backend may read it here, as GPU backends do
    // to rebuild their launch plan, so check it names this kernel.
    if (artifact->key == nullptr || artifact->key->kernel_name == nullptr ||
        std::string_view(artifact->key->kernel_name) != entry.kernel_name) {
      invalid("launch: the artifact's key does not name this kernel");
    }
    entry.run(args, num_args);
  });
}

// --- the "example" platform: host memory
// --------------------------------------

jw_status capabilities(void*, uint32_t* flags, const jw_text_sink* detail) {
  return guarded([&] {
    *flags = JW_PLATFORM_CAN_COMPILE | JW_PLATFORM_CAN_LAUNCH;
    jitwarm::plugin::append(detail, "example vendor device: host memory");
  });
}
jw_status device_count(void*, int32_t* count) {
  return guarded([&] { *count = 1; });
}
jw_status device_target(void*, int32_t device, const jw_text_sink* out) {
  return guarded([&] {
    if (device != 0) invalid("only device 0 exists");
    jitwarm::plugin::append(out, kTarget);
  });
}
jw_status allocate(void*, int32_t, size_t bytes, void** out) {
  return guarded([&] {
    // 64-byte aligned, like a device allocator: tensors at the start of an
    // allocation are 16-byte aligned.
    *out = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (*out == nullptr) throw PluginError(JW_ERROR_OUT_OF_MEMORY, "allocate");
  });
}
jw_status free_memory(void*, int32_t, void* pointer) {
  return guarded([&] { std::free(pointer); });
}
jw_status copy(void*, int32_t, void* dst, const void* src, size_t bytes,
               jw_copy_direction, void*) {
  return guarded([&] {
    if (bytes != 0) std::memmove(dst, src, bytes);
  });
}
jw_status synchronize(void*, int32_t, void*) {
  return JW_OK;
}

jw_status register_all(const jw_host_api* host) {
  // Checks and attaches the host table (log and set_error go through it),
  // and detaches it again if anything below fails.
  return jitwarm::plugin::register_with_host(host, kImplName, [&] {
    for (const KernelEntry& entry : kKernels) {
      jw_kernel_impl impl{};
      impl.struct_size = sizeof impl;
      impl.kernel_name = entry.kernel_name;
      impl.platform = kPlatform;
      impl.impl_name = kImplName;
      impl.user_data = const_cast<KernelEntry*>(&entry);
      impl.compile = &compile;
      impl.launch = &launch;
      jitwarm::plugin::check_host(host->register_impl(host->host_ctx, &impl),
                                  "register_impl");
    }
    jw_platform_desc platform{};
    platform.struct_size = sizeof platform;
    platform.name = kPlatform;
    platform.capabilities = &capabilities;
    platform.device_count = &device_count;
    platform.device_target = &device_target;
    platform.allocate = &allocate;
    platform.free_memory = &free_memory;
    platform.copy = &copy;
    platform.synchronize = &synchronize;
    jitwarm::plugin::check_host(
        host->register_platform(host->host_ctx, &platform),
        "register_platform");
  });
}

// Everything registered is static: a runtime's end only detaches its table.
void unregister_all(const jw_host_api* host) {
  jitwarm::plugin::host_tables().detach(host);
}

// Zero first, then the fields this plugin sets: fields appended to the ABI
// later stay zero (and compilers do not warn about missing initializers).
const jw_plugin_api kPlugin = [] {
  jw_plugin_api api{};
  api.struct_size = sizeof(jw_plugin_api);
  api.name = "jitwarm-example-vendor";
  api.version = "0.1.0";
  api.register_all = &register_all;
  api.unregister_all = &unregister_all;
  return api;
}();

}  // namespace
}  // namespace example_vendor

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  return jitwarm::plugin::answer_negotiation(negotiation,
                                             &example_vendor::kPlugin);
}
