// The plugin glue of the CUDA and HIP plugins: everything of a GpuBackend
// (gpu_backend.hpp) that crosses the C ABI. Installing a backend for a
// host table registers an implementation of each built-in kernel (a
// jw_kernel_impl whose callbacks call the backend's compiler and launcher)
// and the platform (a jw_platform_desc over its driver); kernels from
// source get the same table. Every callback goes through plugin::guarded,
// so no exception escapes.
//
// The plugin keeps one backend per runtime registered with it, from that
// runtime's register_all to its unregister_all. Deliberately not static
// objects with destructors: at process exit the vendor driver may already
// be torn down, and unloading modules then could crash.
#pragma once

#include <jitwarm/jitwarm.h>

#include "gpu_backend.hpp"

#include <memory>
#include <string>

namespace jitwarm::gpu {

// What a GPU plugin's register_all opened, for install_backend.
struct OpenedBackend {
  GpuBackendDescription description;
  // Null when the compiler's library is missing: `compiler_missing` says
  // why, and cached artifacts still launch.
  std::unique_ptr<RtcCompiler> compiler;
  std::string compiler_missing;
  // What the load's log line says of the compiler.
  std::string compiler_summary;
  std::unique_ptr<DeviceDriver> driver;
};

// The end of a GPU plugin's register_all. A plugin that can neither
// compile nor launch is refused (JW_ERROR_UNSUPPORTED, with both reasons);
// otherwise its backend is registered with `host` and kept until that
// runtime's unregister_all or the plugin's shutdown, and the load logs
// "<plugin>: <compiler_summary>; <driver status>". A second install for one
// table is an error. Throws PluginError when the host refuses a
// registration.
void install_backend(OpenedBackend opened, const jw_host_api& host);
// jw_plugin_api.implement_source_kernel of a GPU plugin: the installed
// backend of `host` implements the kernel from source on its platform (the
// implementation's destroy frees what it holds), and *out_schema is the
// schema its descriptor defines, if any. Fails naming the descriptor's
// file:line; JW_ERROR_UNSUPPORTED when the kernel is not written for this
// platform.
jw_status implement_source_kernel(const jw_host_api* host,
                                  const jw_source_kernel* kernel,
                                  const jw_kernel_schema** out_schema,
                                  jw_kernel_impl* out);
// The jw_plugin_api of a GPU plugin whose `register_all` ends in
// install_backend: unregister_all shuts that runtime's backend down and
// destroys it, shutdown every backend, and kernels from source go to
// implement_source_kernel. Fields appended to the ABI later stay zero.
jw_plugin_api gpu_plugin_api(const char* name, const char* version,
                             jw_status (*register_all)(const jw_host_api*));

}  // namespace jitwarm::gpu
