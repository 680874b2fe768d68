// CudaDeviceDriver: lazy cuInit, retained primary contexts, a module cache
// keyed by (artifact, context), and launches/memory operations that check
// every CUresult.
#include "cuda_device_driver.hpp"

#include "cuda_target.hpp"
#include "plugin_support.hpp"

#include <algorithm>
#include <cstring>

namespace jitwarm::cuda {
namespace {

// The symbol a cuda.h macro selects, as a string: JW_SYMBOL_NAME(cuMemAlloc)
// is "cuMemAlloc_v2" (the argument is expanded before it is stringified).
#define JW_STRINGIFY_EXPANDED(name) #name
#define JW_SYMBOL_NAME(name) JW_STRINGIFY_EXPANDED(name)

constexpr const char* kDriverLibrary = "libcuda.so.1";

// Makes `context` current for the scope and restores the caller's current
// context afterwards (the caller may be using the runtime API).
class ScopedContext {
 public:
  ScopedContext(const CudaDriverApi& api, CUcontext context,
                const std::function<void(CUresult, const char*)>& check)
      : api_(api) {
    check(api_.cuCtxPushCurrent(context), "cuCtxPushCurrent");
  }
  ~ScopedContext() {
    CUcontext popped = nullptr;
    api_.cuCtxPopCurrent(&popped);  // nothing useful to do if it fails
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const CudaDriverApi& api_;
};

bool is_default_stream(void* stream) {
  return stream == nullptr || stream == static_cast<void*>(CU_STREAM_LEGACY) ||
         stream == static_cast<void*>(CU_STREAM_PER_THREAD);
}

}  // namespace

CudaDriverApi::CudaDriverApi(const gpu::DynamicLibrary& library) {
#define JW_RESOLVE_DRIVER_FUNCTION(name) \
  name = gpu::LibraryFunction<decltype(&::name)>(library, JW_SYMBOL_NAME(name));
  JW_CUDA_DRIVER_FUNCTIONS(JW_RESOLVE_DRIVER_FUNCTION)
#undef JW_RESOLVE_DRIVER_FUNCTION
}

std::vector<std::string> CudaDriverApi::missing() const {
  std::vector<std::string> names;
#define JW_NOTE_MISSING(name) \
  if (!name.available()) names.emplace_back(name.symbol());
  JW_CUDA_DRIVER_FUNCTIONS(JW_NOTE_MISSING)
#undef JW_NOTE_MISSING
  return names;
}

CudaDeviceDriver::CudaDeviceDriver()
    : library_(gpu::DynamicLibrary::open_first({kDriverLibrary})) {
  if (!library_.is_open()) {
    unavailable_ = "no CUDA driver: compile-only (" + library_.error() + ")";
    return;
  }
  auto api = std::make_unique<CudaDriverApi>(library_);
  const std::vector<std::string> missing = api->missing();
  if (!missing.empty()) {
    unavailable_ =
        "CUDA driver too old: compile-only (" + library_.name() + " lacks";
    for (const std::string& name : missing) unavailable_ += " " + name;
    unavailable_ += ")";
    return;
  }
  api_ = std::move(api);
}

CudaDeviceDriver::~CudaDeviceDriver() = default;

std::string CudaDeviceDriver::error_text(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_ == nullptr || api_->cuGetErrorName(result, &name) != CUDA_SUCCESS) {
    name = nullptr;
  }
  if (api_ == nullptr ||
      api_->cuGetErrorString(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string out =
      name != nullptr ? name
                      : "CUresult " + std::to_string(static_cast<int>(result));
  if (text != nullptr) out += std::string(": ") + text;
  return out;
}

void CudaDeviceDriver::check(CUresult result, const char* call,
                             const std::string& context,
                             jw_status status) const {
  if (result == CUDA_SUCCESS) return;
  if (result == CUDA_ERROR_OUT_OF_MEMORY) status = JW_ERROR_OUT_OF_MEMORY;
  std::string message = std::string(call) + " failed";
  if (!context.empty()) message += " " + context;
  throw plugin::PluginError(status, message + ": " + error_text(result));
}

void CudaDeviceDriver::require_initialized() {
  if (api_ == nullptr) {
    throw plugin::PluginError(JW_ERROR_NO_DEVICE, unavailable_);
  }
  std::call_once(init_once_, [&] {
    init_result_ = api_->cuInit(0);
    if (init_result_ == CUDA_SUCCESS) {
      int count = 0;
      init_result_ = api_->cuDeviceGetCount(&count);
      device_count_ = count;
      api_->cuDriverGetVersion(&driver_version_);
      std::lock_guard<std::mutex> lock(devices_mutex_);
      primary_contexts_.assign(static_cast<std::size_t>(count), nullptr);
      limits_.resize(static_cast<std::size_t>(count));
    }
    initialized_.store(true, std::memory_order_release);
  });
  if (init_result_ != CUDA_SUCCESS) {
    throw plugin::PluginError(
        JW_ERROR_NO_DEVICE,
        "CUDA driver initialization failed: " + error_text(init_result_));
  }
}

void CudaDeviceDriver::require_device(int32_t device) {
  require_initialized();
  if (device < 0 || device >= device_count_) {
    throw plugin::PluginError(
        device_count_ == 0 ? JW_ERROR_NO_DEVICE : JW_ERROR_INVALID_ARGUMENT,
        "CUDA device " + std::to_string(device) + " does not exist (" +
            std::to_string(device_count_) + " devices)");
  }
}

gpu::DriverStatus CudaDeviceDriver::status() {
  gpu::DriverStatus status;
  if (api_ == nullptr) {
    status.detail = unavailable_;
    return status;
  }
  // Never initialize here: a capability query must leave the process
  // fork-safe. Report what earlier use found, if any.
  if (!initialized_.load(std::memory_order_acquire)) {
    status.can_launch = true;
    status.detail = "CUDA driver " + library_.name() +
                    " found; devices are probed on first use";
    return status;
  }
  if (init_result_ != CUDA_SUCCESS) {
    status.detail = "CUDA driver present but unusable: compile-only (" +
                    error_text(init_result_) + ")";
    return status;
  }
  if (device_count_ == 0) {
    status.detail = "no CUDA device: compile-only";
    return status;
  }
  status.can_launch = true;
  status.detail = "CUDA driver " + std::to_string(driver_version_ / 1000) +
                  "." + std::to_string(driver_version_ % 1000 / 10) + ", " +
                  std::to_string(device_count_) + " device(s)";
  return status;
}

int32_t CudaDeviceDriver::device_count() {
  if (api_ == nullptr) return 0;
  try {
    require_initialized();
  } catch (const plugin::PluginError&) {
    return 0;  // no usable driver: no devices; status() says why
  }
  return device_count_;
}

CUcontext CudaDeviceDriver::primary_context(int32_t device) {
  require_device(device);
  std::lock_guard<std::mutex> lock(devices_mutex_);
  CUcontext& context = primary_contexts_[static_cast<std::size_t>(device)];
  if (context == nullptr) {
    CUdevice handle = 0;
    const std::string where = "for device " + std::to_string(device);
    check(api_->cuDeviceGet(&handle, device), "cuDeviceGet", where,
          JW_ERROR_NO_DEVICE);
    check(api_->cuDevicePrimaryCtxRetain(&context, handle),
          "cuDevicePrimaryCtxRetain", where, JW_ERROR_NO_DEVICE);
  }
  return context;
}

const gpu::DeviceLimits& CudaDeviceDriver::limits(int32_t device) {
  require_device(device);
  std::lock_guard<std::mutex> lock(devices_mutex_);
  std::unique_ptr<gpu::DeviceLimits>& slot =
      limits_[static_cast<std::size_t>(device)];
  if (slot == nullptr) {
    CUdevice handle = 0;
    const std::string where = "for device " + std::to_string(device);
    check(api_->cuDeviceGet(&handle, device), "cuDeviceGet", where,
          JW_ERROR_NO_DEVICE);
    auto attribute = [&](CUdevice_attribute which) {
      int value = 0;
      check(api_->cuDeviceGetAttribute(&value, which, handle),
            "cuDeviceGetAttribute", where, JW_ERROR_INTERNAL);
      return static_cast<uint32_t>(std::max(value, 1));
    };
    auto limits = std::make_unique<gpu::DeviceLimits>();
    limits->multiprocessor_count =
        attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    limits->warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    limits->max_threads_per_block =
        attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    limits->max_grid.x = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    limits->max_grid.y = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    limits->max_grid.z = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    slot = std::move(limits);
  }
  return *slot;
}

std::string CudaDeviceDriver::device_arch(int32_t device) {
  require_device(device);
  CUdevice handle = 0;
  const std::string where = "for device " + std::to_string(device);
  check(api_->cuDeviceGet(&handle, device), "cuDeviceGet", where,
        JW_ERROR_NO_DEVICE);
  int major = 0;
  int minor = 0;
  check(api_->cuDeviceGetAttribute(
            &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle),
        "cuDeviceGetAttribute", where, JW_ERROR_INTERNAL);
  check(api_->cuDeviceGetAttribute(
            &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle),
        "cuDeviceGetAttribute", where, JW_ERROR_INTERNAL);
  return cuda_arch_for(major, minor);
}

gpu::LoadedKernel CudaDeviceDriver::load_kernel(
    int32_t device, void* stream, const gpu::ArtifactRef& artifact) {
  const std::string what(artifact.what);
  if (artifact.format != "cubin" && artifact.format != "ptx") {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              what +
                                  ": the CUDA driver cannot load an artifact "
                                  "of format '" +
                                  std::string(artifact.format) + "'");
  }
  require_device(device);
  auto checker = [&](CUresult result, const char* call) {
    check(result, call, "for " + what, JW_ERROR_LAUNCH_FAILED);
  };

  // The launch runs in the stream's context; the default stream means the
  // device's primary context (what the runtime API uses).
  CUcontext context = nullptr;
  if (is_default_stream(stream)) {
    context = primary_context(device);
  } else {
    checker(api_->cuStreamGetCtx(static_cast<CUstream>(stream), &context),
            "cuStreamGetCtx");
  }
  gpu::LoadedKernel loaded;
  loaded.context = context;
  loaded.limits = limits(device);

  {
    std::shared_lock<std::shared_mutex> lock(modules_mutex_);
    const auto found = modules_.find(ModuleKey{artifact.artifact_id, context});
    if (found != modules_.end()) {
      loaded.function = found->second.function;
      loaded.limits.max_threads_per_block =
          std::min(loaded.limits.max_threads_per_block,
                   found->second.max_threads_per_block);
      return loaded;
    }
  }

  std::unique_lock<std::shared_mutex> lock(modules_mutex_);
  auto found = modules_.find(ModuleKey{artifact.artifact_id, context});
  if (found == modules_.end()) {
    const ScopedContext scope(*api_, context, checker);
    if (!is_default_stream(stream)) {
      // A stream of another device's context would launch elsewhere than
      // the tensors live.
      CUdevice stream_device = 0;
      CUdevice tensor_device = 0;
      checker(api_->cuCtxGetDevice(&stream_device), "cuCtxGetDevice");
      checker(api_->cuDeviceGet(&tensor_device, device), "cuDeviceGet");
      if (stream_device != tensor_device) {
        throw plugin::PluginError(
            JW_ERROR_INVALID_ARGUMENT,
            what +
                ": the stream belongs to another device than the tensors "
                "(device " +
                std::to_string(device) + ")");
      }
    }
    // PTX must reach the driver as a C string.
    std::string ptx;
    const void* image = artifact.binary;
    if (artifact.format == "ptx") {
      ptx.assign(static_cast<const char*>(artifact.binary),
                 artifact.binary_size);
      if (ptx.empty() || ptx.back() != '\0') ptx.push_back('\0');
      image = ptx.data();
    }
    LoadedModule module;
    const std::string where = "loading " + what + " (" +
                              std::string(artifact.format) + ") on device " +
                              std::to_string(device);
    check(api_->cuModuleLoadData(&module.module, image), "cuModuleLoadData",
          where, JW_ERROR_LAUNCH_FAILED);
    const std::string entry(artifact.entry_point);
    const CUresult got = api_->cuModuleGetFunction(
        &module.function, module.module, entry.c_str());
    int max_threads = 0;
    const CUresult attribute =
        got == CUDA_SUCCESS
            ? api_->cuFuncGetAttribute(&max_threads,
                                       CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                       module.function)
            : got;
    if (attribute != CUDA_SUCCESS) {
      api_->cuModuleUnload(module.module);
      check(got, "cuModuleGetFunction", "(" + entry + ") " + where,
            JW_ERROR_LAUNCH_FAILED);
      check(attribute, "cuFuncGetAttribute", where, JW_ERROR_LAUNCH_FAILED);
    }
    module.max_threads_per_block =
        static_cast<uint32_t>(std::max(max_threads, 1));
    found = modules_.emplace(ModuleKey{artifact.artifact_id, context}, module)
                .first;
  }
  loaded.function = found->second.function;
  loaded.limits.max_threads_per_block = std::min(
      loaded.limits.max_threads_per_block, found->second.max_threads_per_block);
  return loaded;
}

void CudaDeviceDriver::launch(const gpu::ConfiguredLaunch& launch,
                              void* stream) {
  require_initialized();
  const std::string what(launch.what);
  if (launch.kernel == nullptr || launch.kernel->function == nullptr ||
      launch.arguments == nullptr) {
    throw plugin::PluginError(JW_ERROR_INTERNAL,
                              what + ": incomplete configured launch");
  }
  auto checker = [&](CUresult result, const char* call) {
    check(result, call, "for " + what, JW_ERROR_LAUNCH_FAILED);
  };
  const ScopedContext scope(
      *api_, static_cast<CUcontext>(launch.kernel->context), checker);
  const gpu::LaunchGeometry& g = launch.geometry;
  check(api_->cuLaunchKernel(static_cast<CUfunction>(launch.kernel->function),
                             g.grid.x, g.grid.y, g.grid.z, g.block.x, g.block.y,
                             g.block.z, g.shared_memory_bytes,
                             static_cast<CUstream>(stream),
                             launch.arguments->parameters(), nullptr),
        "cuLaunchKernel", "for " + what + " (" + g.text() + ")",
        JW_ERROR_LAUNCH_FAILED);
}

void* CudaDeviceDriver::allocate(int32_t device, std::size_t bytes) {
  const CUcontext context = primary_context(device);
  if (bytes == 0) return nullptr;
  const std::string where =
      std::to_string(bytes) + " bytes on device " + std::to_string(device);
  auto checker = [&](CUresult result, const char* call) {
    check(result, call, where, JW_ERROR_INTERNAL);
  };
  const ScopedContext scope(*api_, context, checker);
  CUdeviceptr pointer = 0;
  check(api_->cuMemAlloc(&pointer, bytes), "cuMemAlloc", "of " + where,
        JW_ERROR_OUT_OF_MEMORY);
  return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
}

void CudaDeviceDriver::free_memory(int32_t device, void* pointer) {
  const CUcontext context = primary_context(device);
  if (pointer == nullptr) return;
  const std::string where = "on device " + std::to_string(device);
  auto checker = [&](CUresult result, const char* call) {
    check(result, call, where, JW_ERROR_INTERNAL);
  };
  const ScopedContext scope(*api_, context, checker);
  check(api_->cuMemFree(reinterpret_cast<CUdeviceptr>(pointer)), "cuMemFree",
        where, JW_ERROR_INVALID_ARGUMENT);
}

void CudaDeviceDriver::copy(int32_t device, void* dst, const void* src,
                            std::size_t bytes, jw_copy_direction direction,
                            void* stream) {
  const CUcontext context = primary_context(device);
  if (bytes == 0) return;
  const std::string where = "of " + std::to_string(bytes) +
                            " bytes on device " + std::to_string(device);
  auto checker = [&](CUresult result, const char* call) {
    check(result, call, where, JW_ERROR_INTERNAL);
  };
  const ScopedContext scope(*api_, context, checker);
  const CUstream cu_stream = static_cast<CUstream>(stream);
  switch (direction) {
    case JW_COPY_HOST_TO_DEVICE:
      check(api_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                    bytes, cu_stream),
            "cuMemcpyHtoDAsync", where, JW_ERROR_INVALID_ARGUMENT);
      return;
    case JW_COPY_DEVICE_TO_HOST:
      check(api_->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                    bytes, cu_stream),
            "cuMemcpyDtoHAsync", where, JW_ERROR_INVALID_ARGUMENT);
      return;
    case JW_COPY_DEVICE_TO_DEVICE:
      check(api_->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                    reinterpret_cast<CUdeviceptr>(src), bytes,
                                    cu_stream),
            "cuMemcpyDtoDAsync", where, JW_ERROR_INVALID_ARGUMENT);
      return;
  }
  throw plugin::PluginError(
      JW_ERROR_INVALID_ARGUMENT,
      "unknown copy direction " + std::to_string(static_cast<int>(direction)));
}

void CudaDeviceDriver::synchronize(int32_t device, void* stream) {
  const CUcontext context = primary_context(device);
  const std::string where = "on device " + std::to_string(device);
  if (!is_default_stream(stream)) {
    check(api_->cuStreamSynchronize(static_cast<CUstream>(stream)),
          "cuStreamSynchronize", where, JW_ERROR_LAUNCH_FAILED);
    return;
  }
  auto checker = [&](CUresult result, const char* call) {
    check(result, call, where, JW_ERROR_INTERNAL);
  };
  const ScopedContext scope(*api_, context, checker);
  check(api_->cuCtxSynchronize(), "cuCtxSynchronize", where,
        JW_ERROR_LAUNCH_FAILED);
}

void CudaDeviceDriver::release_all() {
  if (api_ == nullptr || !initialized_.load(std::memory_order_acquire) ||
      init_result_ != CUDA_SUCCESS) {
    return;
  }
  {
    std::unique_lock<std::shared_mutex> lock(modules_mutex_);
    for (const auto& [key, module] : modules_) {
      // Errors are ignored: the context may already be gone at shutdown.
      if (api_->cuCtxPushCurrent(key.context) == CUDA_SUCCESS) {
        api_->cuModuleUnload(module.module);
        CUcontext popped = nullptr;
        api_->cuCtxPopCurrent(&popped);
      }
    }
    modules_.clear();
  }
  std::lock_guard<std::mutex> lock(devices_mutex_);
  for (std::size_t device = 0; device < primary_contexts_.size(); ++device) {
    if (primary_contexts_[device] == nullptr) continue;
    CUdevice handle = 0;
    if (api_->cuDeviceGet(&handle, static_cast<int>(device)) == CUDA_SUCCESS) {
      api_->cuDevicePrimaryCtxRelease(handle);
    }
    primary_contexts_[device] = nullptr;
  }
}

}  // namespace jitwarm::cuda
