// The CUDA plugin's entry point: the ABI handshake (jitwarm_plugin_negotiate,
// the one exported symbol) and register_all, which opens NVRTC and the CUDA
// driver and registers the ten kernels and the "cuda" platform through the
// shared GPU layer (plugins/common/gpu_backend.hpp).
//
// The plugin loads and compiles on a machine with no GPU and no driver; it
// is rejected only when neither NVRTC nor the driver can be opened, since it
// could then neither compile nor launch.
#include <jitwarm/jitwarm.h>

#include "cuda_device_driver.hpp"
#include "cuda_target.hpp"
#include "gpu_backend.hpp"
#include "nvrtc_compiler.hpp"
#include "plugin_support.hpp"

#include <cstddef>
#include <memory>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace jitwarm::cuda {
namespace {

constexpr const char* kPluginName = "jitwarm-cuda";
constexpr const char* kPluginVersion = "0.1.0";

// Created by register_all, destroyed by shutdown. Deliberately not a static
// object with a destructor: at process exit the CUDA driver may already be
// torn down, and unloading modules then could crash.
gpu::GpuBackend* g_backend = nullptr;

jw_status register_all(const jw_host_api* host) {
  return plugin::guarded([&] {
    if (host == nullptr ||
        host->struct_size < offsetof(jw_host_api, register_platform) +
                                sizeof(host->register_platform) ||
        host->register_impl == nullptr || host->register_platform == nullptr) {
      throw plugin::PluginError(JW_ERROR_ABI_MISMATCH,
                                "jitwarm-cuda: the host table lacks "
                                "register_impl/register_platform");
    }
    plugin::host_api() = host;
    if (g_backend != nullptr) {
      throw plugin::PluginError(JW_ERROR_ALREADY_EXISTS,
                                "jitwarm-cuda: register_all called twice");
    }
    std::string nvrtc_missing;
    std::unique_ptr<NvrtcCompiler> nvrtc = NvrtcCompiler::open(nvrtc_missing);
    auto driver = std::make_unique<CudaDeviceDriver>();
    if (nvrtc == nullptr && !driver->library_available()) {
      throw plugin::PluginError(
          JW_ERROR_UNSUPPORTED,
          "jitwarm-cuda can neither compile nor launch: " + nvrtc_missing +
              "; " + driver->status().detail);
    }
    std::string summary = std::string(kPluginName) + ": ";
    summary += nvrtc != nullptr
                   ? nvrtc->identity() + " (" + nvrtc->library_name() + ")"
                   : "no compiler: " + nvrtc_missing;
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
    backend->register_with(*host);
    g_backend = backend.release();
    plugin::log(JW_LOG_INFO, summary);
  });
}

void shutdown() {
  if (g_backend == nullptr) return;
  g_backend->shutdown();
  delete g_backend;
  g_backend = nullptr;
}

const jw_plugin_api kPluginApi = {
    sizeof(jw_plugin_api), nullptr,       kPluginName,
    kPluginVersion,        &register_all, &shutdown,
};

}  // namespace
}  // namespace jitwarm::cuda

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  if (negotiation == nullptr ||
      negotiation->struct_size < offsetof(jw_plugin_negotiation, plugin) +
                                     sizeof(negotiation->plugin)) {
    return JW_ERROR_INVALID_ARGUMENT;
  }
  // This build speaks [JITWARM_ABI_VERSION_MIN, JITWARM_ABI_VERSION]: pick
  // the newest version both sides speak.
  const uint32_t version = negotiation->core_max_version < JITWARM_ABI_VERSION
                               ? negotiation->core_max_version
                               : JITWARM_ABI_VERSION;
  if (version < JITWARM_ABI_VERSION_MIN ||
      version < negotiation->core_min_version) {
    return JW_ERROR_ABI_MISMATCH;
  }
  negotiation->plugin_version = version;
  negotiation->plugin = &jitwarm::cuda::kPluginApi;
  return JW_OK;
}
