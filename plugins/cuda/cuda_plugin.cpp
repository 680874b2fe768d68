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
    std::string summary = nvrtc != nullptr ? nvrtc->identity() + " (" +
                                                 nvrtc->library_origin() + ")"
                                           : "no compiler: " + nvrtc_missing;
    if (nvrtc != nullptr) {
      summary +=
          nvrtc->linker_unavailable().empty()
              ? ", batches linked per kernel by " + nvrtc->linker_identity()
              : ", batches in one cubin (" + nvrtc->linker_unavailable() + ")";
    }
    gpu::OpenedBackend opened;
    opened.description = {.plugin_name = kPluginName,
                          .platform = "cuda",
                          .impl_name = "cuda-nvrtc",
                          .compiler_label = "NVRTC",
                          .parse_target = &parse_cuda_target};
    opened.compiler = std::move(nvrtc);
    opened.compiler_missing = std::move(nvrtc_missing);
    opened.compiler_summary = std::move(summary);
    opened.driver = std::make_unique<CudaDeviceDriver>();
    gpu::install_backend(std::move(opened), *host);
  });
}

const jw_plugin_api kPluginApi =
    gpu::gpu_plugin_api(kPluginName, kPluginVersion, &register_all);

}  // namespace
}  // namespace jitwarm::cuda

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  return jitwarm::plugin::answer_negotiation(negotiation,
                                             &jitwarm::cuda::kPluginApi);
}
