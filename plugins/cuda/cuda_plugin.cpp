// The CUDA plugin's entry point: the ABI handshake (jitwarm_plugin_negotiate,
// the one exported symbol) and register_all, which opens NVRTC and the CUDA
// driver and registers the ten kernels and the "cuda" platform through the
// shared GPU layer (plugins/common/gpu_plugin_glue.hpp).
//
// The plugin loads and compiles on a machine with no GPU and no driver; it
// is rejected only when neither NVRTC nor the driver can be opened, since it
// could then neither compile nor launch.
#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin.hpp>

#include "cuda_device_driver.hpp"
#include "cuda_target.hpp"
#include "gpu_plugin_glue.hpp"
#include "nvrtc_compiler.hpp"

#include <cstddef>
#include <memory>
#include <string>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace jitwarm::cuda {
namespace {

constexpr const char* kPluginName = "jitwarm-cuda";
constexpr const char* kPluginVersion = "0.1.0";

// Passes the host's value of setting `name`, if any, to `set`. A bad value
// keeps the plugin, with the setting's default (`current`), and says so.
template <typename Set, typename Current>
void apply_setting(const jw_host_api& host, const char* name, Set set,
                   Current current) {
  if (host.get_config == nullptr) return;
  const char* value = host.get_config(host.host_ctx, name);
  if (value == nullptr) return;
  try {
    set(value);
  } catch (const plugin::PluginError& e) {
    plugin::log(JW_LOG_WARNING, std::string(e.what()) + "; using " + current());
  }
}

jw_status register_all(const jw_host_api* host) {
  return plugin::register_with_host(host, kPluginName, [&] {
    std::string nvrtc_missing;
    std::unique_ptr<NvrtcCompiler> nvrtc = NvrtcCompiler::open(nvrtc_missing);
    if (nvrtc != nullptr) {
      apply_setting(
          *host, "cuda.fast_compile",
          [&](const char* level) { nvrtc->set_fast_compile(level); },
          [&] { return nvrtc->fast_compile(); });
      apply_setting(
          *host, "cuda.compile_threads",
          [&](const char* threads) { nvrtc->set_compile_threads(threads); },
          [&] { return std::to_string(nvrtc->compile_threads()); });
    }
    auto driver = std::make_unique<CudaDeviceDriver>();
    if (nvrtc == nullptr && !driver->library_available()) {
      throw plugin::PluginError(
          JW_ERROR_UNSUPPORTED,
          "jitwarm-cuda can neither compile nor launch: " + nvrtc_missing +
              "; " + driver->status().detail);
    }
    std::string summary = std::string(kPluginName) + ": ";
    summary += nvrtc != nullptr
                   ? nvrtc->identity() + " (" + nvrtc->library_origin() + ")"
                   : "no compiler: " + nvrtc_missing;
    if (nvrtc != nullptr) {
      summary +=
          nvrtc->linker_unavailable().empty()
              ? ", batches linked per kernel by " + nvrtc->linker_identity()
              : ", batches in one cubin (" + nvrtc->linker_unavailable() + ")";
    }
    summary += "; " + driver->status().detail;

    gpu::GpuBackendDescription description;
    description.plugin_name = kPluginName;
    description.platform = "cuda";
    description.impl_name = "cuda-nvrtc";
    description.compiler_label = "NVRTC";
    description.parse_target = &parse_cuda_target;
    auto backend = std::make_unique<gpu::GpuBackend>(
        std::move(description), std::move(nvrtc), nvrtc_missing,
        std::move(driver));
    gpu::install_backend(std::move(backend), *host);
    plugin::log(JW_LOG_INFO, summary);
  });
}

// One runtime is done with its backend (its own compiler, driver and
// modules); the others keep theirs.
void unregister_all(const jw_host_api* host) {
  static_cast<void>(plugin::guarded([&] {
    if (host != nullptr) gpu::uninstall_backend(*host);
  }));
  plugin::host_tables().detach(host);
}

void shutdown() {
  static_cast<void>(
      plugin::guarded([] { gpu::shutdown_installed_backends(); }));
  plugin::host_tables().detach_all();
}

// Zero first, then the fields this plugin sets: fields appended to the ABI
// later stay zero (and compilers do not warn about missing initializers).
const jw_plugin_api kPluginApi = [] {
  jw_plugin_api api{};
  api.struct_size = sizeof(jw_plugin_api);
  api.name = kPluginName;
  api.version = kPluginVersion;
  api.register_all = &register_all;
  api.shutdown = &shutdown;
  api.unregister_all = &unregister_all;
  api.implement_source_kernel = &gpu::implement_source_kernel;
  return api;
}();

}  // namespace
}  // namespace jitwarm::cuda

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  return jitwarm::plugin::answer_negotiation(negotiation,
                                             &jitwarm::cuda::kPluginApi);
}
