// The HIP plugin's entry point: the ABI handshake (jitwarm_plugin_negotiate,
// the one exported symbol) and register_all, which opens hiprtc (with
// comgr's ISA list), looks for clang, opens the HIP runtime, and registers
// the ten kernels and the "hip" platform through the shared GPU layer
// (plugins/common/gpu_plugin_glue.hpp).
//
// The plugin loads and compiles on a machine with no AMD GPU and no ROCm
// driver (the load report then says "compile-only"); it is rejected only
// when it could neither compile nor launch.
#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin.hpp>

#include "gpu_plugin_glue.hpp"
#include "hip_compiler.hpp"
#include "hip_device_driver.hpp"
#include "hip_target.hpp"

#include <cstddef>
#include <memory>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace jitwarm::hip {
namespace {

constexpr const char* kPluginName = "jitwarm-hip";
constexpr const char* kPluginVersion = "0.1.0";

// hiprtc and clang, or nullptr with `why_not` when neither is here.
std::unique_ptr<HipCompiler> open_compilers(std::string& why_not,
                                            std::string& summary) {
  std::string hiprtc_missing;
  std::unique_ptr<HiprtcCompiler> hiprtc = HiprtcCompiler::open(hiprtc_missing);
  std::string searched;
  std::vector<std::string> candidates =
      ClangHipCompiler::find_candidates(searched);
  std::string clang_missing;
  std::unique_ptr<ClangHipCompiler> clang;
  if (candidates.empty()) {
    clang_missing = "no clang found (searched " + searched + ")";
  } else {
    clang = std::make_unique<ClangHipCompiler>(std::move(candidates),
                                               std::move(searched));
  }
  if (hiprtc == nullptr && clang == nullptr) {
    why_not = "hiprtc: " + hiprtc_missing + "; clang: " + clang_missing;
    summary = "no compiler (" + why_not + ")";
    return nullptr;
  }
  auto compiler = std::make_unique<HipCompiler>(
      std::move(hiprtc), std::move(hiprtc_missing), std::move(clang),
      std::move(clang_missing));
  summary = compiler->summary();
  return compiler;
}

jw_status register_all(const jw_host_api* host) {
  return plugin::register_with_host(host, kPluginName, [&] {
    gpu::OpenedBackend opened;
    opened.description = {.plugin_name = kPluginName,
                          .platform = "hip",
                          .impl_name = "hip-rtc",
                          .compiler_label = "hiprtc/clang",
                          .parse_target = &parse_hip_target};
    opened.compiler =
        open_compilers(opened.compiler_missing, opened.compiler_summary);
    opened.driver = std::make_unique<HipDeviceDriver>();
    gpu::install_backend(std::move(opened), *host);
  });
}

const jw_plugin_api kPluginApi =
    gpu::gpu_plugin_api(kPluginName, kPluginVersion, &register_all);

}  // namespace
}  // namespace jitwarm::hip

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  return jitwarm::plugin::answer_negotiation(negotiation,
                                             &jitwarm::hip::kPluginApi);
}
