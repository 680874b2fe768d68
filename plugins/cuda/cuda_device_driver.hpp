// CudaDeviceDriver: the DeviceDriver of the CUDA plugin, on the CUDA driver
// API. libcuda.so.1 is opened with dlopen when the plugin loads (so the load
// report can say "no CUDA driver: compile-only"), but cuInit runs only on
// first use: a process that loads the plugin may still fork (the
// conformance runner does). Each device's primary context is retained once;
// modules are loaded once per (artifact, context) and reused.
#pragma once

#include "device_driver.hpp"
#include "driver_caches.hpp"
#include "dynamic_library.hpp"

#include <cuda.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace jitwarm::cuda {

// The driver entry points the plugin uses. Members are named after the
// cuda.h macros, which select the versioned ABI symbols (cuMemAlloc ->
// cuMemAlloc_v2, ...); each resolves the symbol the macro names.
struct CudaDriverApi {
  explicit CudaDriverApi(const gpu::DynamicLibrary& library);
  std::vector<std::string> missing() const;

// One entry point per line: the only layout clang-format keeps as it is.
#define JW_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                         \
  X(cuDriverGetVersion)             \
  X(cuGetErrorName)                 \
  X(cuGetErrorString)               \
  X(cuDeviceGetCount)               \
  X(cuDeviceGet)                    \
  X(cuDeviceGetAttribute)           \
  X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease)      \
  X(cuDevicePrimaryCtxGetState)     \
  X(cuCtxPushCurrent)               \
  X(cuCtxPopCurrent)                \
  X(cuCtxGetCurrent)                \
  X(cuCtxGetDevice)                 \
  X(cuCtxSynchronize)               \
  X(cuStreamGetCtx)                 \
  X(cuStreamSynchronize)            \
  X(cuStreamCreate)                 \
  X(cuStreamDestroy)                \
  X(cuModuleLoadData)               \
  X(cuModuleUnload)                 \
  X(cuModuleGetFunction)            \
  X(cuFuncGetAttribute)             \
  X(cuLaunchKernel)                 \
  X(cuMemAlloc)                     \
  X(cuMemFree)                      \
  X(cuMemcpyHtoDAsync)              \
  X(cuMemcpyDtoHAsync)              \
  X(cuMemcpyDtoDAsync)

#define JW_DECLARE_DRIVER_FUNCTION(name) \
  gpu::LibraryFunction<decltype(&::name)> name;
  JW_CUDA_DRIVER_FUNCTIONS(JW_DECLARE_DRIVER_FUNCTION)
#undef JW_DECLARE_DRIVER_FUNCTION

  // Optional (drivers of CUDA 12.0 and later): a context's process-unique
  // id. Without it modules are keyed by the context handle alone.
  gpu::LibraryFunction<decltype(&::cuCtxGetId)> cuCtxGetId;
  // Optional: a device's model name (tuning results are kept per model;
  // without it the device's target stands for it).
  gpu::LibraryFunction<decltype(&::cuDeviceGetName)> cuDeviceGetName;
};

class CudaDeviceDriver final : public gpu::DeviceDriver {
 public:
  // Opens libcuda.so.1; never initializes it.
  CudaDeviceDriver();
  ~CudaDeviceDriver() override;

  bool library_available() const override { return api_ != nullptr; }

  gpu::DriverStatus status() override;
  int32_t device_count() override;
  std::string device_arch(int32_t device) override;
  std::string device_name(int32_t device) override;
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
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    uint32_t max_threads_per_block = 0;
  };
  // A handle of a destroyed context may come back for a new one; the id
  // (cuCtxGetId) never does, so a module of the old context is not taken
  // for the new one's.
  struct ModuleKey {
    uint64_t artifact_id;
    CUcontext context;
    uint64_t context_id;
    bool operator==(const ModuleKey&) const = default;
  };
  struct ModuleKeyHash {
    std::size_t operator()(const ModuleKey& key) const {
      return std::hash<uint64_t>()(key.artifact_id) ^
             (std::hash<const void*>()(key.context) << 1) ^
             (std::hash<uint64_t>()(key.context_id) << 2);
    }
  };

  // cuInit once; throws JW_ERROR_NO_DEVICE when there is no usable driver.
  void require_initialized();
  void require_device(int32_t device);
  // The device's primary context, retained by this driver until
  // release_all() (so its handle and modules stay valid while it lives,
  // unless the host resets it: cuDevicePrimaryCtxReset leaves that to the
  // caller).
  CUcontext primary_context(int32_t device);
  // Whether `context` is the device's primary context, active already; if
  // so, this driver retains it too.
  bool is_active_primary_context(int32_t device, CUcontext context);
  const gpu::DeviceLimits& limits(int32_t device);
  // "CUDA_ERROR_X: text".
  std::string error_text(CUresult result) const;
  // Throws PluginError(status, "<call> failed <context>: <error>");
  // out-of-memory is always JW_ERROR_OUT_OF_MEMORY.
  [[noreturn]] void fail(CUresult result, const char* call,
                         const std::string& context, jw_status status) const;
  // Throws (through fail) unless CUDA_SUCCESS. `context` (a callable giving
  // a string) only runs on failure, so the launch path builds no message
  // when all is well.
  template <typename Context>
  void check(CUresult result, const char* call, jw_status status,
             Context&& context) const {
    if (result != CUDA_SUCCESS) fail(result, call, context(), status);
  }

  gpu::DynamicLibrary library_;
  std::unique_ptr<CudaDriverApi> api_;
  std::string unavailable_;  // why api_ is null

  std::once_flag init_once_;
  std::atomic<bool> initialized_{false};
  CUresult init_result_ = CUDA_SUCCESS;
  int device_count_ = 0;
  int driver_version_ = 0;

  // Per device, made on first use (sized by cuInit's call_once).
  gpu::PerDevice<CUcontext> primary_contexts_;
  gpu::PerDevice<gpu::DeviceLimits> limits_;
  gpu::ModuleCache<ModuleKey, LoadedModule, ModuleKeyHash> modules_;
};

}  // namespace jitwarm::cuda
