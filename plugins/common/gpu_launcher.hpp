// GpuLauncher: the launch half of a GpuBackend (gpu_backend.hpp). Every
// launch is a prepared one:
//
//   artifact -> GpuPreparedLaunch (once per artifact: the key checked and
//     instantiated, how arguments pack) -> LoadedKernel (once per device
//     context) -> LaunchPlan -> KernelArguments -> ConfiguredLaunch
//     -> driver launch
//
// The core prepares each artifact itself (jw_kernel_impl.prepare) and
// launches through launch_prepared; a launch of an artifact that was not
// prepared (jw_kernel_impl.launch) prepares it once here, keeps it with a
// copy of the artifact's borrowed views, and takes the same path. Arguments
// are trusted as the core validated them (docs/plugin-abi.md P12).
#pragma once

#include <jitwarm/jitwarm.h>

#include "device_driver.hpp"
#include "gpu_backend_description.hpp"
#include "gpu_compiler.hpp"

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <span>
#include <unordered_map>

namespace jitwarm::gpu {

// A launch prepared once per artifact; defined in gpu_launcher.cpp, which
// also frees it (jw_kernel_impl.release_prepared). Named apart from the
// core's PreparedLaunch (core/src/prepared_launch.hpp), the other side of the
// ABI, which keeps one of these as its opaque `plugin_prepared`.
class GpuPreparedLaunch;
struct GpuPreparedLaunchDeleter {
  void operator()(GpuPreparedLaunch* prepared) const;
};
using GpuPreparedLaunchPtr =
    std::unique_ptr<GpuPreparedLaunch, GpuPreparedLaunchDeleter>;

class GpuLauncher {
 public:
  using Descriptor = GpuCompiler::Descriptor;

  // `description` and `compiler` (which instantiates keys) must outlive
  // the launcher.
  GpuLauncher(const GpuBackendDescription& description,
              const GpuCompiler& compiler,
              std::unique_ptr<DeviceDriver> driver);
  ~GpuLauncher();
  GpuLauncher(const GpuLauncher&) = delete;
  GpuLauncher& operator=(const GpuLauncher&) = delete;

  // jw_kernel_impl.prepare: the key checked and instantiated, how
  // arguments pack, and (filled by launches) the loaded function per
  // device context, so each launch only plans its grid, packs values and
  // calls the driver. `artifact`, its key and binary must outlive it (the
  // core's do).
  GpuPreparedLaunchPtr prepare(const Descriptor& descriptor,
                               const jw_artifact_view& artifact);
  // Arguments as the core validated them against the artifact's key (P12).
  void launch_prepared(GpuPreparedLaunch& prepared,
                       std::span<const jw_arg_value> args, void* stream);

  // jw_kernel_impl.launch, for the kernel of `descriptor` (the overload
  // without one takes the built-in kernel the key names): the artifact's
  // prepared launch, made on its first launch, then launch_prepared.
  void launch(const Descriptor& descriptor, const jw_artifact_view& artifact,
              std::span<const jw_arg_value> args, void* stream);
  void launch(const jw_artifact_view& artifact,
              std::span<const jw_arg_value> args, void* stream);

  DeviceDriver& driver() const { return *driver_; }
  // Forgets the prepared launches of unprepared launches, then releases
  // the driver's device resources (modules, contexts). For plugin shutdown.
  void release_all();

 private:
  struct ArtifactLaunch;  // a prepared launch with its own artifact copy
  ArtifactLaunch& artifact_launch(const Descriptor& descriptor,
                                  const jw_artifact_view& artifact);

  const GpuBackendDescription& description_;
  const GpuCompiler& compiler_;
  std::unique_ptr<DeviceDriver> driver_;
  // The prepared launch of each artifact launched unprepared (artifact ids
  // are unique and stable for the process).
  std::shared_mutex artifact_launches_mutex_;
  std::unordered_map<uint64_t, std::unique_ptr<ArtifactLaunch>>
      artifact_launches_;
};

}  // namespace jitwarm::gpu
