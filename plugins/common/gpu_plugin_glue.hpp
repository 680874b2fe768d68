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

namespace jitwarm::gpu {

// Registers `backend` with `host` (register_all) and keeps it until
// uninstall_backend(host) or shutdown_installed_backends. A second install
// for one table is an error. Throws PluginError when the host refuses a
// registration.
void install_backend(std::unique_ptr<GpuBackend> backend,
                     const jw_host_api& host);
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
// Shuts the backend of `host` down and destroys it (unregister_all).
void uninstall_backend(const jw_host_api& host);
// Shuts every installed backend down and destroys it (plugin shutdown).
void shutdown_installed_backends();

}  // namespace jitwarm::gpu
