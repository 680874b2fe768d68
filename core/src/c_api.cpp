// The host-application half of the C ABI (jitwarm.h): thin wrappers over the
// C++ API, each behind c_guard so no exception crosses the boundary.
#include <jitwarm/jitwarm.h>
#include <jitwarm/jitwarm.hpp>

#include "errors.hpp"
#include "runtime_impl.hpp"

struct jw_runtime {
  jitwarm::Runtime runtime;
};
struct jw_kernel_handle {
  jitwarm::KernelHandle handle;
};
struct jw_registration {
  jitwarm::RegistrationHandle handle;
};

namespace {

using jitwarm::detail::c_guard;
using jitwarm::detail::fail;

template <typename T>
void require(const T* p, const char* what) {
  if (p == nullptr) fail(JW_ERROR_INVALID_ARGUMENT, "{} is null", what);
}

}  // namespace

extern "C" {

JITWARM_EXPORT jw_status jw_runtime_create(jw_runtime** out_runtime) {
  return c_guard([&] {
    require(out_runtime, "out_runtime");
    *out_runtime = new jw_runtime{jitwarm::Runtime{}};
  });
}

JITWARM_EXPORT void jw_runtime_destroy(jw_runtime* runtime) {
  delete runtime;
}

JITWARM_EXPORT jw_status jw_runtime_load_plugins(jw_runtime* runtime,
                                                 const char* search_path,
                                                 int strict) {
  return c_guard([&] {
    require(runtime, "runtime");
    jitwarm::PluginLoadOptions options;
    options.strict = strict != 0;
    if (search_path != nullptr) {
      std::string_view rest(search_path);
      while (!rest.empty()) {
        const auto colon = rest.find(':');
        if (colon != 0) options.search_path.emplace_back(rest.substr(0, colon));
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
      }
    }
    runtime->runtime.load_plugins(options);
  });
}

JITWARM_EXPORT jw_status jw_runtime_load_plugin(jw_runtime* runtime,
                                                const char* path) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(path, "path");
    runtime->runtime.load_plugin(path, /*strict=*/true);
  });
}

JITWARM_EXPORT jw_status jw_kernel_find(jw_runtime* runtime, const char* name,
                                        jw_kernel_handle** out) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(name, "name");
    require(out, "out");
    *out = new jw_kernel_handle{runtime->runtime.kernel(name)};
  });
}

JITWARM_EXPORT void jw_kernel_release(jw_kernel_handle* kernel) {
  delete kernel;
}

JITWARM_EXPORT jw_status jw_kernel_launch(jw_kernel_handle* kernel,
                                          const char* platform, int32_t device,
                                          const jw_arg_value* args,
                                          uint32_t num_args, void* stream) {
  return c_guard([&] {
    require(kernel, "kernel");
    if (num_args > 0) require(args, "args");
    // Straight to the launch path: no LaunchOptions (and no string) per call.
    jitwarm::detail::RuntimeImpl::launch(
        kernel->handle, std::span<const jw_arg_value>(args, num_args),
        platform != nullptr ? std::string_view(platform) : std::string_view(),
        device, stream);
  });
}

JITWARM_EXPORT jw_status jw_register_kernels(
    jw_runtime* runtime, const jw_kernel_override* overrides,
    uint32_t num_overrides, jw_registration** out_registration) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_registration, "out_registration");
    if (num_overrides > 0) require(overrides, "overrides");
    std::vector<jitwarm::KernelOverride> list;
    for (uint32_t i = 0; i < num_overrides; ++i) {
      const jw_kernel_override& o = overrides[i];
      if (o.struct_size < sizeof(jw_kernel_override) ||
          o.kernel_name == nullptr) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "override {}: bad struct_size or no kernel name", i);
      }
      jitwarm::KernelOverride k;
      k.kernel_name = o.kernel_name;
      k.impl = o.impl;
      list.push_back(std::move(k));
    }
    *out_registration = new jw_registration{
        runtime->runtime.register_kernels(std::move(list), "C API")};
  });
}

JITWARM_EXPORT void jw_registration_release(jw_registration* registration) {
  delete registration;
}

}  // extern "C"
