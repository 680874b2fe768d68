// GpuBackend: the shared GPU layer of the CUDA and HIP plugins for one
// runtime, as the owner of its two parts:
//
//   GpuCompiler (gpu_compiler.hpp): compile key -> KernelInstantiation
//     -> RtcProgram -> CompiledKernel (memoized per program) -> artifact;
//     batches, describe, fingerprint, options
//   GpuLauncher (gpu_launcher.hpp): artifact -> GpuPreparedLaunch
//     -> LoadedKernel (per context) -> LaunchPlan -> KernelArguments
//     -> driver launch
//
// and of the platform's capabilities, which need both. What crosses the C
// ABI (the implementation and platform tables, one backend per host table,
// kernels from source) is gpu_plugin_glue.hpp's. The compiler and driver
// libraries a backend opens are shared process-wide by the dynamic loader.
#pragma once

#include "device_driver.hpp"
#include "embedded_kernel_sources.hpp"
#include "gpu_backend_description.hpp"
#include "gpu_compiler.hpp"
#include "gpu_launcher.hpp"
#include "rtc_compiler.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace jitwarm::gpu {

class GpuBackend {
 public:
  // `compiler` may be null (its library is missing): compile, describe's
  // options and fingerprint then fail with `compiler_unavailable`, while
  // launches of cached artifacts still work. `sources` must outlive the
  // backend (the embedded set is static).
  GpuBackend(
      GpuBackendDescription description, std::unique_ptr<RtcCompiler> compiler,
      std::string compiler_unavailable, std::unique_ptr<DeviceDriver> driver,
      std::span<const EmbeddedSource> sources = embedded_kernel_sources());
  ~GpuBackend();
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  const GpuBackendDescription& description() const { return description_; }
  GpuCompiler& compiler() { return compiler_; }
  const GpuCompiler& compiler() const { return compiler_; }
  GpuLauncher& launcher() { return launcher_; }
  DeviceDriver& driver() const { return launcher_.driver(); }

  // JW_PLATFORM_* bits; `detail` says why a bit is missing. Never
  // initializes the driver.
  uint32_t capabilities(std::string& detail) const;

  // Releases device resources (modules, contexts). For plugin shutdown.
  void shutdown();

 private:
  GpuBackendDescription description_;  // read by both parts
  GpuCompiler compiler_;
  GpuLauncher launcher_;  // instantiates keys with compiler_
};

}  // namespace jitwarm::gpu
