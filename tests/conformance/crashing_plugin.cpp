// crashing_plugin.cpp — libjitwarm-test-crashing.so, a test-only plugin for
// the runner's isolation: platform "crashy" (host memory) with one kernel,
// expand, that
//   - for int32 x raises SIGSEGV (a crashing kernel),
//   - for int64 x never returns (a hanging kernel),
//   - for float32 x is correct (so the run visibly goes on).
#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin.hpp>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace {

using jitwarm::plugin::guarded;
using jitwarm::plugin::PluginError;

constexpr const char* kExpand = "vllm.v1.sample.rejection_sampler.expand";

jw_status compile(void*, const jw_compile_key_view* key,
                  const jw_artifact_sink* out) {
  return guarded([&] {
    if (std::string_view(key->target) != "crashy:host") {
      throw PluginError(JW_ERROR_UNSUPPORTED,
                        "crashy compiles for crashy:host");
    }
    jw_artifact_desc artifact{};
    artifact.struct_size = sizeof artifact;
    artifact.binary = "expand";
    artifact.binary_size = 6;
    artifact.format = "crashy";
    artifact.entry_point = "expand";
    if (out->emit(out->ctx, &artifact) != JW_OK) {
      throw PluginError(JW_ERROR_INTERNAL, "emit failed");
    }
  });
}

jw_status launch(void*, const jw_artifact_view*, const jw_arg_value* args,
                 uint32_t, void*) {
  const jw_tensor& output = *args[0].value.tensor;
  const jw_tensor& x = *args[1].value.tensor;
  const auto* ends = static_cast<const int32_t*>(args[2].value.tensor->data);
  switch (x.meta.dtype) {
    case JW_DTYPE_INT32: ::raise(SIGSEGV); break;
    case JW_DTYPE_INT64:
      for (;;) ::pause();
    default: break;
  }
  const float from = static_cast<float>(args[3].value.scalar.value.f);
  const float to = static_cast<float>(args[4].value.scalar.value.f);
  const auto* values = static_cast<const float*>(x.data);
  auto* out = static_cast<float*>(output.data);
  int64_t start = 0;
  for (int64_t b = 0; b < x.meta.shape[0]; ++b) {
    for (int64_t i = start; i < ends[b]; ++i) {
      out[i] = values[b] == from ? to : values[b];
    }
    start = ends[b];
  }
  return JW_OK;
}

jw_status capabilities(void*, uint32_t* flags, const jw_text_sink*) {
  *flags = JW_PLATFORM_CAN_COMPILE | JW_PLATFORM_CAN_LAUNCH;
  return JW_OK;
}
jw_status device_count(void*, int32_t* count) {
  *count = 1;
  return JW_OK;
}
jw_status device_target(void*, int32_t, const jw_text_sink* out) {
  jitwarm::plugin::append(out, "crashy:host");
  return JW_OK;
}
jw_status allocate(void*, int32_t, size_t bytes, void** out) {
  *out = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  return *out != nullptr ? JW_OK : JW_ERROR_OUT_OF_MEMORY;
}
jw_status free_memory(void*, int32_t, void* pointer) {
  std::free(pointer);
  return JW_OK;
}
jw_status copy(void*, int32_t, void* dst, const void* src, size_t bytes,
               jw_copy_direction, void*) {
  if (bytes != 0) std::memmove(dst, src, bytes);
  return JW_OK;
}
jw_status synchronize(void*, int32_t, void*) {
  return JW_OK;
}

jw_status register_all(const jw_host_api* host) {
  jitwarm::plugin::host_api() = host;
  jw_kernel_impl impl{};
  impl.struct_size = sizeof impl;
  impl.kernel_name = kExpand;
  impl.platform = "crashy";
  impl.impl_name = "crashy";
  impl.compile = &compile;
  impl.launch = &launch;
  if (jw_status s = host->register_impl(host->host_ctx, &impl); s != JW_OK) {
    return s;
  }
  jw_platform_desc platform{};
  platform.struct_size = sizeof platform;
  platform.name = "crashy";
  platform.capabilities = &capabilities;
  platform.device_count = &device_count;
  platform.device_target = &device_target;
  platform.allocate = &allocate;
  platform.free_memory = &free_memory;
  platform.copy = &copy;
  platform.synchronize = &synchronize;
  return host->register_platform(host->host_ctx, &platform);
}

// Zero first, then the fields this plugin sets: fields appended to the ABI
// later stay zero (and compilers do not warn about missing initializers).
const jw_plugin_api kPlugin = [] {
  jw_plugin_api api{};
  api.struct_size = sizeof(jw_plugin_api);
  api.name = "jitwarm-test-crashing";
  api.version = "0.1.0";
  api.register_all = &register_all;
  return api;
}();

}  // namespace

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  negotiation->plugin_version = 1;
  negotiation->plugin = &kPlugin;
  return JW_OK;
}
