// The C API of kernels (jitwarm.h: kernel handles, launches, host
// overrides, kernels from source): forwards to jitwarm::Runtime and
// jitwarm::KernelHandle.
#include <span>

#include "c_api_support.hpp"
#include "runtime_impl.hpp"

namespace jitwarm::detail::c_api {
namespace {

// overrides[0, count), checked (the array may be null when empty).
std::vector<KernelOverride> overrides_of(const jw_kernel_override* overrides,
                                         uint32_t count) {
  if (count > 0) require(overrides, "overrides");
  std::vector<KernelOverride> list;
  for (uint32_t i = 0; i < count; ++i) {
    const jw_kernel_override& o = overrides[i];
    if (o.struct_size < sizeof(jw_kernel_override) ||
        o.kernel_name == nullptr) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "override {}: bad struct_size or no kernel name", i);
    }
    KernelOverride k;
    k.kernel_name = o.kernel_name;
    k.impl = o.impl;
    list.push_back(std::move(k));
  }
  return list;
}

// A copy of the caller's kernel, checked.
SourceKernel source_kernel_of(const jw_source_kernel& kernel) {
  if (kernel.struct_size < sizeof(jw_source_kernel) ||
      (kernel.descriptor == nullptr && kernel.descriptor_size > 0) ||
      (kernel.files == nullptr && kernel.num_files > 0)) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "jw_source_kernel: bad struct_size, descriptor or files");
  }
  SourceKernel source;
  source.origin = kernel.origin != nullptr ? kernel.origin : "host";
  source.descriptor.assign(
      kernel.descriptor != nullptr ? kernel.descriptor : "",
      kernel.descriptor_size);
  for (uint32_t i = 0; i < kernel.num_files; ++i) {
    const jw_source_file& f = kernel.files[i];
    if (f.name == nullptr || (f.text == nullptr && f.size > 0)) {
      fail(JW_ERROR_INVALID_ARGUMENT, "jw_source_kernel: file {} is null", i);
    }
    source.files.emplace_back(
        f.name, std::string(f.text != nullptr ? f.text : "", f.size));
  }
  return source;
}

}  // namespace
}  // namespace jitwarm::detail::c_api

namespace c_api = jitwarm::detail::c_api;

extern "C" {

JITWARM_EXPORT jw_status jw_kernel_find(jw_runtime* runtime, const char* name,
                                        jw_kernel_handle** out) {
  return c_api::answer({{runtime, "runtime"}, {name, "name"}}, out, "out", [&] {
    return new jw_kernel_handle{runtime->runtime.kernel(name)};
  });
}

JITWARM_EXPORT void jw_kernel_release(jw_kernel_handle* kernel) {
  delete kernel;
}

JITWARM_EXPORT jw_status jw_kernel_launch(jw_kernel_handle* kernel,
                                          const char* platform, int32_t device,
                                          const jw_arg_value* args,
                                          uint32_t num_args, void* stream) {
  // The launch path: c_guard and two checks, no list of checks to walk.
  return jitwarm::detail::c_guard([&] {
    c_api::require(kernel, "kernel");
    if (num_args > 0) c_api::require(args, "args");
    // Straight to the launch path: no LaunchOptions (and no string) per call.
    jitwarm::detail::RuntimeImpl::launch(
        kernel->handle, std::span<const jw_arg_value>(args, num_args),
        platform != nullptr ? std::string_view(platform) : std::string_view(),
        device, stream);
  });
}

JITWARM_EXPORT jw_status jw_kernel_key_for(jw_kernel_handle* kernel,
                                           const char* platform, int32_t device,
                                           const jw_arg_value* args,
                                           uint32_t num_args,
                                           jw_compile_key** out_key) {
  return c_api::answer({{kernel, "kernel"}}, out_key, "out_key", [&] {
    if (num_args > 0) c_api::require(args, "args");
    jitwarm::LaunchOptions options;
    if (platform != nullptr) options.platform = platform;
    options.device = device;
    return kernel->handle.key_for(std::span<const jw_arg_value>(args, num_args),
                                  options);
  });
}

JITWARM_EXPORT jw_status jw_register_kernels(
    jw_runtime* runtime, const jw_kernel_override* overrides,
    uint32_t num_overrides, jw_registration** out_registration) {
  return c_api::answer(
      {{runtime, "runtime"}}, out_registration, "out_registration", [&] {
        return new jw_registration{runtime->runtime.register_kernels(
            c_api::overrides_of(overrides, num_overrides), "C API")};
      });
}

JITWARM_EXPORT void jw_registration_release(jw_registration* registration) {
  delete registration;
}

JITWARM_EXPORT jw_status
jw_register_source_kernel(jw_runtime* runtime, const jw_source_kernel* kernel,
                          jw_registration** out_registration) {
  return c_api::answer(
      {{runtime, "runtime"}, {kernel, "kernel"}}, out_registration,
      "out_registration", [&] {
        return new jw_registration{runtime->runtime.register_source_kernel(
            c_api::source_kernel_of(*kernel))};
      });
}

}  // extern "C"
