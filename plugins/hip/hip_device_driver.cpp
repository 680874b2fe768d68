// HipDeviceDriver: lazy device discovery, a module cache keyed by
// (artifact, device), and launches and memory operations that check every
// hipError_t. The launch path takes no mutex once a kernel is loaded and
// builds error text only when a call fails.
//
// NOT RUN ON HARDWARE (docs/hip.md): compiled, and exercised here only on
// a machine without an AMD GPU, where every path ends in "no device".
#include "hip_device_driver.hpp"

#include <jitwarm/plugin.hpp>

#include "hip_libraries.hpp"
#include "hip_target.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <limits>

namespace jitwarm::hip {
namespace {

// The symbol a hip_runtime_api.h name selects, as a string (the argument is
// macro-expanded before it is stringified).
#define JW_STRINGIFY_EXPANDED(name) #name
#define JW_SYMBOL_NAME(name) JW_STRINGIFY_EXPANDED(name)

std::string on_device(int32_t device) {
  return "on device " + std::to_string(device);
}

}  // namespace

// Makes `device` the calling thread's current HIP device for the scope and
// restores the previous one afterwards (the caller may rely on its own).
class HipDeviceDriver::CurrentDevice {
 public:
  // `context` (a callable giving a string) only runs when a call fails.
  template <typename Context>
  CurrentDevice(const HipDeviceDriver& driver, int32_t device,
                Context&& context)
      : api_(*driver.api_) {
    driver.check(api_.hipGetDevice(&previous_), "hipGetDevice",
                 JW_ERROR_INTERNAL, context);
    if (previous_ != device) {
      driver.check(api_.hipSetDevice(device), "hipSetDevice",
                   JW_ERROR_NO_DEVICE, context);
      restore_ = true;
    }
  }
  ~CurrentDevice() {
    // Nothing useful to do if it fails.
    if (restore_) static_cast<void>(api_.hipSetDevice(previous_));
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  const HipRuntimeApi& api_;
  int previous_ = 0;
  bool restore_ = false;
};

HipRuntimeApi::HipRuntimeApi(const gpu::DynamicLibrary& library) {
#define JW_RESOLVE_HIP_FUNCTION(name) \
  name = gpu::LibraryFunction<decltype(&::name)>(library, JW_SYMBOL_NAME(name));
  JW_HIP_RUNTIME_FUNCTIONS(JW_RESOLVE_HIP_FUNCTION)
#undef JW_RESOLVE_HIP_FUNCTION
  hipMalloc = gpu::LibraryFunction<hipError_t (*)(void**, std::size_t)>(
      library, "hipMalloc");
}

std::vector<std::string> HipRuntimeApi::missing() const {
  std::vector<std::string> names;
#define JW_NOTE_MISSING(name) \
  if (!name.available()) names.emplace_back(name.symbol());
  JW_HIP_RUNTIME_FUNCTIONS(JW_NOTE_MISSING)
  JW_NOTE_MISSING(hipMalloc)
#undef JW_NOTE_MISSING
  return names;
}

HipDeviceDriver::HipDeviceDriver(std::string kfd_path)
    : kfd_path_(std::move(kfd_path)) {
  std::string why_not;
  library_ = open_library_with(
      library_candidates({"libamdhip64.so.7", "libamdhip64.so.6",
                          "libamdhip64.so.5", "libamdhip64.so"}),
      [](const gpu::DynamicLibrary& candidate) {
        return HipRuntimeApi(candidate).missing();
      },
      why_not);
  if (!library_.is_open()) {
    unavailable_ = "no HIP runtime: " + why_not;
    return;
  }
  api_ = std::make_unique<HipRuntimeApi>(library_);
}

HipDeviceDriver::~HipDeviceDriver() = default;

std::string HipDeviceDriver::error_text(hipError_t result) const {
  const char* name = api_ != nullptr ? api_->hipGetErrorName(result) : nullptr;
  const char* text =
      api_ != nullptr ? api_->hipGetErrorString(result) : nullptr;
  std::string out =
      name != nullptr
          ? name
          : "hipError_t " + std::to_string(static_cast<int>(result));
  // Older runtimes answer the name for both.
  if (text != nullptr && (name == nullptr || std::string_view(text) != name)) {
    out += std::string(": ") + text;
  }
  return out;
}

void HipDeviceDriver::fail(hipError_t result, const char* call,
                           const std::string& context, jw_status status) const {
  if (result == hipErrorOutOfMemory) status = JW_ERROR_OUT_OF_MEMORY;
  std::string message = std::string(call) + " failed";
  if (!context.empty()) message += " " + context;
  throw plugin::PluginError(status, message + ": " + error_text(result));
}

void HipDeviceDriver::require_initialized() {
  // Every launch asks: once the driver is up, one acquire load answers
  // (std::call_once costs a launch about 90 instructions).
  if (initialized_.load(std::memory_order_acquire) &&
      init_result_ == hipSuccess) {
    return;
  }
  if (api_ == nullptr) {
    throw plugin::PluginError(JW_ERROR_NO_DEVICE, unavailable_);
  }
  std::call_once(init_once_, [&] {
    // The first call into the runtime initializes it; without /dev/kfd it
    // answers hipErrorNoDevice (checked with Debian's libamdhip64 5.2).
    int count = 0;
    init_result_ = api_->hipGetDeviceCount(&count);
    device_count_ = init_result_ == hipSuccess ? std::max(count, 0) : 0;
    if (init_result_ == hipSuccess) {
      static_cast<void>(api_->hipRuntimeGetVersion(&runtime_version_));
    }
    limits_.resize(device_count_);
    initialized_.store(true, std::memory_order_release);
  });
  if (init_result_ != hipSuccess) {
    throw plugin::PluginError(JW_ERROR_NO_DEVICE,
                              "no AMD GPU / ROCm driver: hipGetDeviceCount: " +
                                  error_text(init_result_));
  }
}

void HipDeviceDriver::require_device(int32_t device) {
  require_initialized();
  if (device < 0 || device >= device_count_) {
    throw plugin::PluginError(
        device_count_ == 0 ? JW_ERROR_NO_DEVICE : JW_ERROR_INVALID_ARGUMENT,
        "HIP device " + std::to_string(device) + " does not exist (" +
            std::to_string(device_count_) + " devices)");
  }
}

gpu::DriverStatus HipDeviceDriver::status() {
  gpu::DriverStatus status;
  if (api_ == nullptr) {
    status.detail = unavailable_;
    return status;
  }
  // Never call the runtime here: a capability query must leave the process
  // fork-safe. Before first use, the ROCm kernel driver's device node says
  // whether there can be a device at all.
  if (!initialized_.load(std::memory_order_acquire)) {
    struct stat node {};
    if (stat(kfd_path_.c_str(), &node) != 0) {
      status.detail = "no AMD GPU / ROCm driver: " + kfd_path_ +
                      " not found (HIP runtime " + library_.name() + ")";
      return status;
    }
    status.can_launch = true;
    status.detail = "HIP runtime " + library_.name() + " and " + kfd_path_ +
                    " found; devices are probed on first use";
    return status;
  }
  if (init_result_ != hipSuccess) {
    status.detail = "no AMD GPU / ROCm driver: hipGetDeviceCount: " +
                    error_text(init_result_);
    return status;
  }
  if (device_count_ == 0) {
    status.detail = "no AMD GPU";
    return status;
  }
  status.can_launch = true;
  // HIP_VERSION encoding: major * 10^7 + minor * 10^5 + patch.
  status.detail = "HIP runtime " + std::to_string(runtime_version_ / 10000000) +
                  "." + std::to_string(runtime_version_ / 100000 % 100) + ", " +
                  std::to_string(device_count_) + " device(s)";
  return status;
}

int32_t HipDeviceDriver::device_count() {
  if (api_ == nullptr) return 0;
  try {
    require_initialized();
  } catch (const plugin::PluginError&) {
    return 0;  // no usable runtime or device; status() says why
  }
  return device_count_;
}

const gpu::DeviceLimits& HipDeviceDriver::limits(int32_t device) {
  require_device(device);
  return limits_.get(device, [&] {
    const auto where = [&] { return "for device " + std::to_string(device); };
    auto attribute = [&](hipDeviceAttribute_t which) {
      int value = 0;
      check(api_->hipDeviceGetAttribute(&value, which, device),
            "hipDeviceGetAttribute", JW_ERROR_INTERNAL, where);
      return static_cast<uint32_t>(std::max(value, 1));
    };
    gpu::DeviceLimits limits;
    limits.multiprocessor_count =
        attribute(hipDeviceAttributeMultiprocessorCount);
    limits.warp_size = attribute(hipDeviceAttributeWarpSize);
    limits.max_threads_per_block =
        attribute(hipDeviceAttributeMaxThreadsPerBlock);
    limits.max_grid.x = attribute(hipDeviceAttributeMaxGridDimX);
    limits.max_grid.y = attribute(hipDeviceAttributeMaxGridDimY);
    limits.max_grid.z = attribute(hipDeviceAttributeMaxGridDimZ);
    return limits;
  });
}

std::string HipDeviceDriver::device_arch(int32_t device) {
  require_device(device);
  hipDeviceProp_t properties{};
  check(api_->hipGetDeviceProperties(&properties, device),
        "hipGetDeviceProperties", JW_ERROR_INTERNAL,
        [&] { return "for device " + std::to_string(device); });
  properties.gcnArchName[sizeof(properties.gcnArchName) - 1] = '\0';
  return hip_arch_for(properties.gcnArchName);
}

gpu::LoadedKernel HipDeviceDriver::load_kernel(
    int32_t device, void* stream, const gpu::ArtifactRef& artifact) {
  // The module is loaded on the tensors' device; HIP 5 cannot ask a stream
  // for its device, so a stream of another device is the caller's error.
  static_cast<void>(stream);
  if (artifact.format != "hsaco") {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(artifact.what) +
            ": the HIP runtime cannot load an artifact of format '" +
            std::string(artifact.format) + "'");
  }
  gpu::LoadedKernel loaded;
  loaded.limits = limits(device);  // checks the device
  const ModuleKey key{artifact.artifact_id, device};
  // A dispatch packet holds each grid dimension in work-items as a 32-bit
  // number, so blocks per dimension are capped by the block size the
  // function allows (the kernels stride over a capped grid).
  auto finish = [&](const LoadedModule& module) {
    loaded.function = module.function;
    loaded.limits.max_threads_per_block = std::min(
        loaded.limits.max_threads_per_block, module.max_threads_per_block);
    const uint32_t blocks_per_dimension = std::numeric_limits<uint32_t>::max() /
                                          loaded.limits.max_threads_per_block;
    loaded.limits.max_grid.x =
        std::min(loaded.limits.max_grid.x, blocks_per_dimension);
    loaded.limits.max_grid.y =
        std::min(loaded.limits.max_grid.y, blocks_per_dimension);
    loaded.limits.max_grid.z =
        std::min(loaded.limits.max_grid.z, blocks_per_dimension);
    return loaded;
  };
  return finish(modules_.find_or_load(key, [&] {
    const std::string loading = "loading " + std::string(artifact.what) +
                                " (hsaco) " + on_device(device);
    const CurrentDevice current(*this, device, [&] { return loading; });
    LoadedModule module;
    check(api_->hipModuleLoadData(&module.module, artifact.binary),
          "hipModuleLoadData", JW_ERROR_LAUNCH_FAILED, [&] { return loading; });
    const std::string entry(artifact.entry_point);
    const hipError_t got = api_->hipModuleGetFunction(
        &module.function, module.module, entry.c_str());
    int max_threads = 0;
    const hipError_t attribute =
        got == hipSuccess
            ? api_->hipFuncGetAttribute(
                  &max_threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                  module.function)
            : got;
    if (attribute != hipSuccess) {
      static_cast<void>(api_->hipModuleUnload(module.module));
      check(got, "hipModuleGetFunction", JW_ERROR_LAUNCH_FAILED,
            [&] { return "(" + entry + ") " + loading; });
      check(attribute, "hipFuncGetAttribute", JW_ERROR_LAUNCH_FAILED,
            [&] { return loading; });
    }
    module.max_threads_per_block =
        static_cast<uint32_t>(std::max(max_threads, 1));
    return module;
  }));
}

gpu::LaunchContext HipDeviceDriver::launch_context(int32_t device,
                                                   void* /*stream*/) {
  // Modules are loaded per device (HIP 5 cannot ask a stream for its
  // device or context; load_kernel says so).
  return {nullptr, static_cast<uint64_t>(device)};
}

bool HipDeviceDriver::launch(const gpu::ConfiguredLaunch& launch, void* stream,
                             gpu::StreamContext /*stream_context*/) {
  // Always known: HIP's kernels are loaded per device, never with
  // context_retained, so no context is assumed.
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
  const int32_t device = launch.arguments->device();
  if (device < 0) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(launch.what) + ": a HIP launch needs device tensors");
  }
  const CurrentDevice current(*this, device, for_launch);
  check(api_->hipModuleLaunchKernel(
            static_cast<hipFunction_t>(launch.kernel->function), g.grid.x,
            g.grid.y, g.grid.z, g.block.x, g.block.y, g.block.z,
            g.shared_memory_bytes, static_cast<hipStream_t>(stream),
            launch.arguments->parameters(), nullptr),
        "hipModuleLaunchKernel", JW_ERROR_LAUNCH_FAILED, for_launch);
  return true;
}

void* HipDeviceDriver::allocate(int32_t device, std::size_t bytes) {
  require_device(device);
  if (bytes == 0) return nullptr;
  const auto of_bytes = [&] {
    return "of " + std::to_string(bytes) + " bytes " + on_device(device);
  };
  const CurrentDevice current(*this, device, of_bytes);
  void* pointer = nullptr;
  check(api_->hipMalloc(&pointer, bytes), "hipMalloc", JW_ERROR_OUT_OF_MEMORY,
        of_bytes);
  return pointer;
}

void HipDeviceDriver::free_memory(int32_t device, void* pointer) {
  require_device(device);
  if (pointer == nullptr) return;
  const auto where = [&] { return on_device(device); };
  const CurrentDevice current(*this, device, where);
  check(api_->hipFree(pointer), "hipFree", JW_ERROR_INVALID_ARGUMENT, where);
}

void HipDeviceDriver::copy(int32_t device, void* dst, const void* src,
                           std::size_t bytes, jw_copy_direction direction,
                           void* stream) {
  require_device(device);
  hipMemcpyKind kind = hipMemcpyDefault;
  switch (direction) {
    case JW_COPY_HOST_TO_DEVICE: kind = hipMemcpyHostToDevice; break;
    case JW_COPY_DEVICE_TO_HOST: kind = hipMemcpyDeviceToHost; break;
    case JW_COPY_DEVICE_TO_DEVICE: kind = hipMemcpyDeviceToDevice; break;
    default:
      throw plugin::PluginError(
          JW_ERROR_INVALID_ARGUMENT,
          "unknown copy direction " +
              std::to_string(static_cast<int>(direction)));
  }
  if (bytes == 0) return;
  const auto of_bytes = [&] {
    return "of " + std::to_string(bytes) + " bytes " + on_device(device);
  };
  const CurrentDevice current(*this, device, of_bytes);
  check(api_->hipMemcpyAsync(dst, src, bytes, kind,
                             static_cast<hipStream_t>(stream)),
        "hipMemcpyAsync", JW_ERROR_INVALID_ARGUMENT, of_bytes);
}

void HipDeviceDriver::synchronize(int32_t device, void* stream) {
  require_device(device);
  const auto where = [&] { return on_device(device); };
  const CurrentDevice current(*this, device, where);
  if (stream != nullptr) {
    check(api_->hipStreamSynchronize(static_cast<hipStream_t>(stream)),
          "hipStreamSynchronize", JW_ERROR_LAUNCH_FAILED, where);
    return;
  }
  // The default stream: everything on the device, as the CUDA plugin's
  // context synchronize does.
  check(api_->hipDeviceSynchronize(), "hipDeviceSynchronize",
        JW_ERROR_LAUNCH_FAILED, where);
}

void HipDeviceDriver::release_all() {
  if (api_ == nullptr || !initialized_.load(std::memory_order_acquire) ||
      init_result_ != hipSuccess) {
    return;
  }
  int previous = 0;
  const bool known = api_->hipGetDevice(&previous) == hipSuccess;
  modules_.clear([&](const ModuleKey& key, const LoadedModule& module) {
    // Errors are ignored: the runtime may already be shutting down.
    if (api_->hipSetDevice(key.device) == hipSuccess) {
      static_cast<void>(api_->hipModuleUnload(module.module));
    }
  });
  if (known) static_cast<void>(api_->hipSetDevice(previous));
}

}  // namespace jitwarm::hip
