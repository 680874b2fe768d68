// CudaDeviceDriver: lazy cuInit, retained primary contexts, a module cache
// keyed by (artifact, context), and launches and memory operations that
// check every CUresult. The launch path takes no mutex once a kernel is
// loaded and builds error text only when a call fails.
#include "cuda_device_driver.hpp"

#include <jitwarm/plugin.hpp>

#include "cuda_target.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

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
  // `on_failure(result, call)` must throw.
  template <typename OnFailure>
  ScopedContext(const CudaDriverApi& api, CUcontext context,
                OnFailure&& on_failure)
      : api_(api) {
    const CUresult pushed = api_.cuCtxPushCurrent(context);
    if (pushed != CUDA_SUCCESS) on_failure(pushed, "cuCtxPushCurrent");
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

std::string on_device(int32_t device) {
  return "on device " + std::to_string(device);
}

}  // namespace

CudaDriverApi::CudaDriverApi(const gpu::DynamicLibrary& library) {
#define JW_RESOLVE_DRIVER_FUNCTION(name) \
  name = gpu::LibraryFunction<decltype(&::name)>(library, JW_SYMBOL_NAME(name));
  JW_CUDA_DRIVER_FUNCTIONS(JW_RESOLVE_DRIVER_FUNCTION)
#undef JW_RESOLVE_DRIVER_FUNCTION
  cuCtxGetId = gpu::LibraryFunction<decltype(&::cuCtxGetId)>(
      library, JW_SYMBOL_NAME(cuCtxGetId));
  cuDeviceGetName = gpu::LibraryFunction<decltype(&::cuDeviceGetName)>(
      library, JW_SYMBOL_NAME(cuDeviceGetName));
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
    unavailable_ = "no CUDA driver: " + library_.error();
    return;
  }
  auto api = std::make_unique<CudaDriverApi>(library_);
  const std::vector<std::string> missing = api->missing();
  if (!missing.empty()) {
    unavailable_ =
        "CUDA driver too old: " + gpu::lacks(library_.name(), missing);
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

void CudaDeviceDriver::fail(CUresult result, const char* call,
                            const std::string& context,
                            jw_status status) const {
  if (result == CUDA_ERROR_OUT_OF_MEMORY) status = JW_ERROR_OUT_OF_MEMORY;
  std::string message = std::string(call) + " failed";
  if (!context.empty()) message += " " + context;
  throw plugin::PluginError(status, message + ": " + error_text(result));
}

void CudaDeviceDriver::require_initialized() {
  // Every launch asks: once the driver is up, one acquire load answers
  // (std::call_once costs a launch about 90 instructions).
  if (initialized_.load(std::memory_order_acquire) &&
      init_result_ == CUDA_SUCCESS) {
    return;
  }
  if (api_ == nullptr) {
    throw plugin::PluginError(JW_ERROR_NO_DEVICE, unavailable_);
  }
  std::call_once(init_once_, [&] {
    init_result_ = api_->cuInit(0);
    if (init_result_ == CUDA_SUCCESS) {
      int count = 0;
      init_result_ = api_->cuDeviceGetCount(&count);
      device_count_ = std::max(count, 0);
      api_->cuDriverGetVersion(&driver_version_);
      primary_contexts_.resize(device_count_);
      limits_.resize(device_count_);
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
    status.detail =
        "CUDA driver present but unusable: " + error_text(init_result_);
    return status;
  }
  if (device_count_ == 0) {
    status.detail = "no CUDA device";
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
  return primary_contexts_.get(device, [&] {
    const auto where = [&] { return "for device " + std::to_string(device); };
    CUdevice handle = 0;
    check(api_->cuDeviceGet(&handle, device), "cuDeviceGet", JW_ERROR_NO_DEVICE,
          where);
    CUcontext context = nullptr;
    check(api_->cuDevicePrimaryCtxRetain(&context, handle),
          "cuDevicePrimaryCtxRetain", JW_ERROR_NO_DEVICE, where);
    return context;
  });
}

bool CudaDeviceDriver::is_active_primary_context(int32_t device,
                                                 CUcontext context) {
  // Retaining an inactive primary context would create it (and take device
  // memory) for a host that never used it: only an active one is compared.
  CUdevice handle = 0;
  unsigned int flags = 0;
  int active = 0;
  if (api_->cuDeviceGet(&handle, device) != CUDA_SUCCESS ||
      api_->cuDevicePrimaryCtxGetState(handle, &flags, &active) !=
          CUDA_SUCCESS ||
      active == 0) {
    return false;
  }
  return primary_context(device) == context;
}

const gpu::DeviceLimits& CudaDeviceDriver::limits(int32_t device) {
  require_device(device);
  return limits_.get(device, [&] {
    const auto where = [&] { return "for device " + std::to_string(device); };
    CUdevice handle = 0;
    check(api_->cuDeviceGet(&handle, device), "cuDeviceGet", JW_ERROR_NO_DEVICE,
          where);
    auto attribute = [&](CUdevice_attribute which) {
      int value = 0;
      check(api_->cuDeviceGetAttribute(&value, which, handle),
            "cuDeviceGetAttribute", JW_ERROR_INTERNAL, where);
      return static_cast<uint32_t>(std::max(value, 1));
    };
    gpu::DeviceLimits limits;
    limits.multiprocessor_count =
        attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    limits.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    limits.max_threads_per_block =
        attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    limits.max_grid.x = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    limits.max_grid.y = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    limits.max_grid.z = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    return limits;
  });
}

std::string CudaDeviceDriver::device_arch(int32_t device) {
  require_device(device);
  const auto where = [&] { return "for device " + std::to_string(device); };
  CUdevice handle = 0;
  check(api_->cuDeviceGet(&handle, device), "cuDeviceGet", JW_ERROR_NO_DEVICE,
        where);
  int major = 0;
  int minor = 0;
  check(api_->cuDeviceGetAttribute(
            &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle),
        "cuDeviceGetAttribute", JW_ERROR_INTERNAL, where);
  check(api_->cuDeviceGetAttribute(
            &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle),
        "cuDeviceGetAttribute", JW_ERROR_INTERNAL, where);
  return cuda_arch_for(major, minor);
}

std::string CudaDeviceDriver::device_name(int32_t device) {
  require_device(device);
  if (!api_->cuDeviceGetName.available()) return {};
  const auto where = [&] { return "for device " + std::to_string(device); };
  CUdevice handle = 0;
  check(api_->cuDeviceGet(&handle, device), "cuDeviceGet", JW_ERROR_NO_DEVICE,
        where);
  std::array<char, 256> name{};
  check(api_->cuDeviceGetName(name.data(), static_cast<int>(name.size()) - 1,
                              handle),
        "cuDeviceGetName", JW_ERROR_INTERNAL, where);
  return name.data();
}

gpu::LoadedKernel CudaDeviceDriver::load_kernel(
    int32_t device, void* stream, const gpu::ArtifactRef& artifact) {
  if (artifact.format != "cubin" && artifact.format != "ptx") {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(artifact.what) +
            ": the CUDA driver cannot load an artifact of format '" +
            std::string(artifact.format) + "'");
  }
  require_device(device);
  const auto for_key = [&] { return "for " + std::string(artifact.what); };

  const gpu::LaunchContext launch = launch_context(device, stream);
  const auto context = static_cast<CUcontext>(launch.context);
  const ModuleKey module_key{artifact.artifact_id, context, launch.id};
  gpu::LoadedKernel loaded;
  loaded.context = context;
  loaded.limits = limits(device);
  loaded.context_retained =
      is_default_stream(stream) || is_active_primary_context(device, context);
  const LoadedModule module = modules_.find_or_load(module_key, [&] {
    const ScopedContext scope(
        *api_, context, [&](CUresult result, const char* call) {
          fail(result, call, for_key(), JW_ERROR_LAUNCH_FAILED);
        });
    if (!is_default_stream(stream)) {
      // A stream of another device's context would launch elsewhere than
      // the tensors live.
      CUdevice stream_device = 0;
      CUdevice tensor_device = 0;
      check(api_->cuCtxGetDevice(&stream_device), "cuCtxGetDevice",
            JW_ERROR_LAUNCH_FAILED, for_key);
      check(api_->cuDeviceGet(&tensor_device, device), "cuDeviceGet",
            JW_ERROR_LAUNCH_FAILED, for_key);
      if (stream_device != tensor_device) {
        throw plugin::PluginError(
            JW_ERROR_INVALID_ARGUMENT,
            std::string(artifact.what) +
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
    const auto loading = [&] {
      return "loading " + std::string(artifact.what) + " (" +
             std::string(artifact.format) + ") " + on_device(device);
    };
    LoadedModule loaded_module;
    check(api_->cuModuleLoadData(&loaded_module.module, image),
          "cuModuleLoadData", JW_ERROR_LAUNCH_FAILED, loading);
    const std::string entry(artifact.entry_point);
    const CUresult got = api_->cuModuleGetFunction(
        &loaded_module.function, loaded_module.module, entry.c_str());
    int max_threads = 0;
    const CUresult attribute =
        got == CUDA_SUCCESS
            ? api_->cuFuncGetAttribute(&max_threads,
                                       CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                       loaded_module.function)
            : got;
    if (attribute != CUDA_SUCCESS) {
      api_->cuModuleUnload(loaded_module.module);
      check(got, "cuModuleGetFunction", JW_ERROR_LAUNCH_FAILED,
            [&] { return "(" + entry + ") " + loading(); });
      check(attribute, "cuFuncGetAttribute", JW_ERROR_LAUNCH_FAILED, loading);
    }
    loaded_module.max_threads_per_block =
        static_cast<uint32_t>(std::max(max_threads, 1));
    return loaded_module;
  });
  loaded.function = module.function;
  loaded.limits.max_threads_per_block = std::min(
      loaded.limits.max_threads_per_block, module.max_threads_per_block);
  return loaded;
}

gpu::LaunchContext CudaDeviceDriver::launch_context(int32_t device,
                                                    void* stream) {
  // The launch runs in the stream's context; the default stream means the
  // device's primary context (what the runtime API uses), which this driver
  // retains, so its handle cannot be reused while the driver lives.
  if (is_default_stream(stream)) {
    require_device(device);
    return {primary_context(device), 0};
  }
  // Every launch asks: a memo of the stream's context keyed by
  // cuStreamGetId (one query instead of two) is out, since cuStreamGetId
  // during a stream capture fails and invalidates the capture (CUDA 13.0's
  // driver; test_cuda_launch.cpp, "captured into a CUDA graph"), and these
  // two queries are safe there.
  const auto for_stream = [] { return std::string("for a launch's stream"); };
  CUcontext context = nullptr;
  check(api_->cuStreamGetCtx(static_cast<CUstream>(stream), &context),
        "cuStreamGetCtx", JW_ERROR_LAUNCH_FAILED, for_stream);
  unsigned long long id = 0;
  if (api_->cuCtxGetId.available()) {
    check(api_->cuCtxGetId(context, &id), "cuCtxGetId", JW_ERROR_LAUNCH_FAILED,
          for_stream);
  }
  return {context, id};
}

bool CudaDeviceDriver::launch(const gpu::ConfiguredLaunch& launch, void* stream,
                              gpu::StreamContext stream_context) {
  require_initialized();
  if (launch.kernel == nullptr || launch.kernel->function == nullptr ||
      launch.arguments == nullptr) {
    throw plugin::PluginError(
        JW_ERROR_INTERNAL,
        std::string(launch.what) + ": incomplete configured launch");
  }
  const gpu::LaunchGeometry& g = launch.geometry;
  const auto for_launch = [&] {
    return "for " + std::string(launch.what) + " (" + g.text() + ")";
  };
  // A launch on a stream runs in the stream's context whatever context is
  // current (test_cuda_launch.cpp, "a stream of a context that is not
  // current"), so only the default stream, which is the current context's,
  // may need the kernel's context pushed; an assumed context is tried as
  // it is and refused by the driver when it is not the stream's.
  std::optional<ScopedContext> scope;
  if (stream_context == gpu::StreamContext::known &&
      is_default_stream(stream)) {
    const auto context = static_cast<CUcontext>(launch.kernel->context);
    CUcontext current = nullptr;
    if (api_->cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != context) {
      scope.emplace(*api_, context, [&](CUresult result, const char* call) {
        fail(result, call, for_launch(), JW_ERROR_LAUNCH_FAILED);
      });
    }
  }
  const CUresult result = api_->cuLaunchKernel(
      static_cast<CUfunction>(launch.kernel->function), g.grid.x, g.grid.y,
      g.grid.z, g.block.x, g.block.y, g.block.z, g.shared_memory_bytes,
      static_cast<CUstream>(stream), launch.arguments->parameters(), nullptr);
  if (result == CUDA_SUCCESS) return true;
  // The driver's answer to a function of another context than the
  // stream's (or, on the default stream, than the current one, or none):
  // nothing was launched, and the error does not stick.
  if (stream_context == gpu::StreamContext::assumed &&
      (result == CUDA_ERROR_INVALID_HANDLE ||
       result == CUDA_ERROR_INVALID_CONTEXT)) {
    return false;
  }
  fail(result, "cuLaunchKernel", for_launch(), JW_ERROR_LAUNCH_FAILED);
}

void* CudaDeviceDriver::allocate(int32_t device, std::size_t bytes) {
  const CUcontext context = primary_context(device);
  if (bytes == 0) return nullptr;
  const auto of_bytes = [&] {
    return "of " + std::to_string(bytes) + " bytes " + on_device(device);
  };
  const ScopedContext scope(*api_, context,
                            [&](CUresult result, const char* call) {
                              fail(result, call, of_bytes(), JW_ERROR_INTERNAL);
                            });
  CUdeviceptr pointer = 0;
  check(api_->cuMemAlloc(&pointer, bytes), "cuMemAlloc", JW_ERROR_OUT_OF_MEMORY,
        of_bytes);
  return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
}

void CudaDeviceDriver::free_memory(int32_t device, void* pointer) {
  const CUcontext context = primary_context(device);
  if (pointer == nullptr) return;
  const auto where = [&] { return on_device(device); };
  const ScopedContext scope(*api_, context,
                            [&](CUresult result, const char* call) {
                              fail(result, call, where(), JW_ERROR_INTERNAL);
                            });
  check(api_->cuMemFree(reinterpret_cast<CUdeviceptr>(pointer)), "cuMemFree",
        JW_ERROR_INVALID_ARGUMENT, where);
}

void CudaDeviceDriver::copy(int32_t device, void* dst, const void* src,
                            std::size_t bytes, jw_copy_direction direction,
                            void* stream) {
  const CUcontext context = primary_context(device);
  if (bytes == 0) return;
  const auto of_bytes = [&] {
    return "of " + std::to_string(bytes) + " bytes " + on_device(device);
  };
  const ScopedContext scope(*api_, context,
                            [&](CUresult result, const char* call) {
                              fail(result, call, of_bytes(), JW_ERROR_INTERNAL);
                            });
  const CUstream cu_stream = static_cast<CUstream>(stream);
  switch (direction) {
    case JW_COPY_HOST_TO_DEVICE:
      check(api_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                    bytes, cu_stream),
            "cuMemcpyHtoDAsync", JW_ERROR_INVALID_ARGUMENT, of_bytes);
      return;
    case JW_COPY_DEVICE_TO_HOST:
      check(api_->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                    bytes, cu_stream),
            "cuMemcpyDtoHAsync", JW_ERROR_INVALID_ARGUMENT, of_bytes);
      return;
    case JW_COPY_DEVICE_TO_DEVICE:
      check(api_->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                    reinterpret_cast<CUdeviceptr>(src), bytes,
                                    cu_stream),
            "cuMemcpyDtoDAsync", JW_ERROR_INVALID_ARGUMENT, of_bytes);
      return;
  }
  throw plugin::PluginError(
      JW_ERROR_INVALID_ARGUMENT,
      "unknown copy direction " + std::to_string(static_cast<int>(direction)));
}

void CudaDeviceDriver::synchronize(int32_t device, void* stream) {
  const CUcontext context = primary_context(device);
  const auto where = [&] { return on_device(device); };
  if (!is_default_stream(stream)) {
    check(api_->cuStreamSynchronize(static_cast<CUstream>(stream)),
          "cuStreamSynchronize", JW_ERROR_LAUNCH_FAILED, where);
    return;
  }
  const ScopedContext scope(*api_, context,
                            [&](CUresult result, const char* call) {
                              fail(result, call, where(), JW_ERROR_INTERNAL);
                            });
  check(api_->cuCtxSynchronize(), "cuCtxSynchronize", JW_ERROR_LAUNCH_FAILED,
        where);
}

void CudaDeviceDriver::release_all() {
  if (api_ == nullptr || !initialized_.load(std::memory_order_acquire) ||
      init_result_ != CUDA_SUCCESS) {
    return;
  }
  modules_.clear([&](const ModuleKey& key, const LoadedModule& module) {
    // A module of a destroyed context went with it, and its handle may now
    // name another context. Errors are ignored: the context may already be
    // gone at shutdown.
    unsigned long long id = 0;
    if (api_->cuCtxGetId.available() &&
        (api_->cuCtxGetId(key.context, &id) != CUDA_SUCCESS ||
         id != key.context_id)) {
      return;
    }
    if (api_->cuCtxPushCurrent(key.context) == CUDA_SUCCESS) {
      api_->cuModuleUnload(module.module);
      CUcontext popped = nullptr;
      api_->cuCtxPopCurrent(&popped);
    }
  });
  primary_contexts_.clear([&](int32_t device, CUcontext) {
    CUdevice handle = 0;
    if (api_->cuDeviceGet(&handle, device) == CUDA_SUCCESS) {
      api_->cuDevicePrimaryCtxRelease(handle);
    }
  });
}

}  // namespace jitwarm::cuda
