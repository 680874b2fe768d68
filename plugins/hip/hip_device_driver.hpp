// HipDeviceDriver: the DeviceDriver of the HIP plugin, on the HIP runtime's
// module API (hipModuleLoadData, hipModuleGetFunction,
// hipModuleLaunchKernel) and its memory calls. libamdhip64 is opened with
// dlopen when the plugin loads, but nothing in it is called until a device
// is needed: status() never calls the runtime (it looks for /dev/kfd, the
// ROCm kernel driver's node), so loading the plugin leaves the process
// fork-safe and works on a machine with no AMD GPU and no ROCm driver.
//
// HIP has no contexts to push: a device is made current for the duration
// of each call (and the caller's current device restored), modules are
// loaded once per (artifact, device) and reused.
//
// NOT RUN ON HARDWARE: no AMD GPU was available while this was written.
// docs/hip.md lists what has and has not been verified.
#pragma once

#include "device_driver.hpp"
#include "driver_caches.hpp"
#include "dynamic_library.hpp"

#include <hip/hip_runtime_api.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace jitwarm::hip {

// The HIP runtime entry points the plugin uses. Members are named after
// the hip_runtime_api.h names, which ROCm 6 maps to versioned symbols
// (hipGetDeviceProperties -> hipGetDevicePropertiesR0600, whose struct
// layout changed); each resolves the symbol its header name selects, so
// structs and symbols always come from the same release.
struct HipRuntimeApi {
  explicit HipRuntimeApi(const gpu::DynamicLibrary& library);
  std::vector<std::string> missing() const;

#define JW_HIP_RUNTIME_FUNCTIONS(X) \
  X(hipGetErrorName)                \
  X(hipGetErrorString)              \
  X(hipRuntimeGetVersion)           \
  X(hipGetDeviceCount)              \
  X(hipGetDevice)                   \
  X(hipSetDevice)                   \
  X(hipDeviceGetAttribute)          \
  X(hipGetDeviceProperties)         \
  X(hipDeviceSynchronize)           \
  X(hipStreamSynchronize)           \
  X(hipModuleLoadData)              \
  X(hipModuleUnload)                \
  X(hipModuleGetFunction)           \
  X(hipFuncGetAttribute)            \
  X(hipModuleLaunchKernel)          \
  X(hipFree)                        \
  X(hipMemcpyAsync)

#define JW_DECLARE_HIP_FUNCTION(name) \
  gpu::LibraryFunction<decltype(&::name)> name;
  JW_HIP_RUNTIME_FUNCTIONS(JW_DECLARE_HIP_FUNCTION)
#undef JW_DECLARE_HIP_FUNCTION
  // Overloaded in C++ (a template for typed pointers): the C entry point.
  gpu::LibraryFunction<hipError_t (*)(void**, std::size_t)> hipMalloc;
};

class HipDeviceDriver final : public gpu::DeviceDriver {
 public:
  // Opens libamdhip64; never calls into it. `kfd_path` is the node whose
  // absence means "no ROCm kernel driver" (tests point it elsewhere).
  explicit HipDeviceDriver(std::string kfd_path = "/dev/kfd");
  ~HipDeviceDriver() override;

  bool library_available() const override { return api_ != nullptr; }

  gpu::DriverStatus status() override;
  int32_t device_count() override;
  std::string device_arch(int32_t device) override;
  gpu::LoadedKernel load_kernel(int32_t device, void* stream,
                                const gpu::ArtifactRef& artifact) override;
  gpu::LaunchContext launch_context(int32_t device, void* stream) override;
  bool launch(const gpu::ConfiguredLaunch& launch, void* stream,
              gpu::StreamContext stream_context) override;
  void* allocate(int32_t device, std::size_t bytes) override;
  void free_memory(int32_t device, void* pointer) override;
  void copy(int32_t device, void* dst, const void* src, std::size_t bytes,
            jw_copy_direction direction, void* stream) override;
  void synchronize(int32_t device, void* stream) override;
  void release_all() override;

 private:
  struct LoadedModule {
    hipModule_t module = nullptr;
    hipFunction_t function = nullptr;
    uint32_t max_threads_per_block = 0;
  };
  struct ModuleKey {
    uint64_t artifact_id;
    int32_t device;
    bool operator==(const ModuleKey&) const = default;
  };
  struct ModuleKeyHash {
    std::size_t operator()(const ModuleKey& key) const {
      return std::hash<uint64_t>()(key.artifact_id) ^
             (std::hash<int32_t>()(key.device) << 1);
    }
  };
  class CurrentDevice;

  // Asks the runtime for its devices once; throws JW_ERROR_NO_DEVICE when
  // there is no usable runtime or device.
  void require_initialized();
  void require_device(int32_t device);
  const gpu::DeviceLimits& limits(int32_t device);
  // "hipErrorNoDevice" (and the runtime's description when it adds one).
  std::string error_text(hipError_t result) const;
  [[noreturn]] void fail(hipError_t result, const char* call,
                         const std::string& context, jw_status status) const;
  // Throws (through fail) unless hipSuccess; `context` runs only then.
  template <typename Context>
  void check(hipError_t result, const char* call, jw_status status,
             Context&& context) const {
    if (result != hipSuccess) fail(result, call, context(), status);
  }

  std::string kfd_path_;
  gpu::DynamicLibrary library_;
  std::unique_ptr<HipRuntimeApi> api_;
  std::string unavailable_;  // why api_ is null

  std::once_flag init_once_;
  std::atomic<bool> initialized_{false};
  hipError_t init_result_ = hipSuccess;
  int device_count_ = 0;
  int runtime_version_ = 0;

  // Per device, made on first use (sized by the first call's call_once).
  gpu::PerDevice<gpu::DeviceLimits> limits_;
  gpu::ModuleCache<ModuleKey, LoadedModule, ModuleKeyHash> modules_;
};

}  // namespace jitwarm::hip
