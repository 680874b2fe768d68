// DeviceDriver: the device side of a GPU plugin (the CUDA driver API in
// plugins/cuda, the HIP runtime in plugins/hip). The shared layer asks it
// to load a compiled kernel once per (artifact, device context), to launch a
// configured launch on the caller's stream, and for the memory services of
// the platform. Implementations open their vendor library at run time and
// initialize it lazily, on first use, never when the plugin is loaded.
#pragma once

#include <jitwarm/jitwarm.h>

#include "launch_plan.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jitwarm::gpu {

// Whether launches are possible, without initializing the driver (so a
// process may still fork afterwards): `detail` says why not, or what is
// known so far.
struct DriverStatus {
  bool can_launch = false;
  std::string detail;
};

// A compiled artifact as the core hands it to launch: `binary` and
// `artifact_id` stay valid and unchanged for the life of the process.
struct ArtifactRef {
  uint64_t artifact_id = 0;
  const void* binary = nullptr;
  std::size_t binary_size = 0;
  std::string_view format;       // "cubin", "ptx", "hsaco"
  std::string_view entry_point;  // the lowered name
  std::string_view what;         // the key text, for messages
};

// source -> compiled -> LOADED: a kernel function resolved in one device
// context. Handles are the driver's (CUfunction, hipFunction_t, ...).
struct LoadedKernel {
  void* function = nullptr;
  void* context = nullptr;
  DeviceLimits limits;  // the device's, with the function's thread limit
  // The driver keeps `context` alive as long as itself (a device's primary
  // context, which it retains), so `function` stays valid and may be tried
  // on a stream without asking which context the stream is in
  // (StreamContext::assumed).
  bool context_retained = false;
};

// What a launch knows of its stream's context.
enum class StreamContext : uint8_t {
  // launch_context() named the kernel's context for this stream.
  known,
  // Not asked: the kernel's context is tried, and the driver refuses the
  // kernel for a stream of another context (then launch() returns false
  // and nothing was launched). Only for a kernel whose context_retained.
  assumed,
};

// The device context a launch on a stream runs in, named so that a
// context destroyed and another created at the same address differ (the
// CUDA driver's context id; HIP: the device).
struct LaunchContext {
  void* context = nullptr;
  uint64_t id = 0;
  friend bool operator==(const LaunchContext&, const LaunchContext&) = default;
};

// -> CONFIGURED LAUNCH: a loaded kernel with its geometry and arguments.
struct ConfiguredLaunch {
  const LoadedKernel* kernel = nullptr;
  LaunchGeometry geometry;
  KernelArguments* arguments = nullptr;
  std::string_view what;  // key text, for messages
};

class DeviceDriver {
 public:
  virtual ~DeviceDriver() = default;

  virtual DriverStatus status() = 0;
  // Whether the vendor's library opened with every symbol the driver needs
  // (else nothing launches, and status() says why).
  virtual bool library_available() const { return true; }
  // Devices visible to the driver (0 without a driver). Initializes it.
  virtual int32_t device_count() = 0;
  // The device's architecture as a target arch, e.g. "sm_90", "gfx942".
  virtual std::string device_arch(int32_t device) = 0;
  // The device's model ("NVIDIA H200"), or empty where the driver cannot
  // say: the platform then reports none (its target stands for it).
  virtual std::string device_name(int32_t device) {
    static_cast<void>(device);
    return {};
  }

  // The artifact's entry point in the context a launch on `stream` (NULL:
  // the device's default stream) for tensors on `device` runs in. Loaded
  // on first use, then reused for the same (artifact_id, context).
  virtual LoadedKernel load_kernel(int32_t device, void* stream,
                                   const ArtifactRef& artifact) = 0;
  // The context load_kernel would load into for this (device, stream),
  // without loading: prepared launches key their loaded functions on it.
  // No lock, no allocation.
  virtual LaunchContext launch_context(int32_t device, void* stream) = 0;
  // False only when the context was `assumed` and the driver refused the
  // kernel for the stream's context; every other failure throws.
  virtual bool launch(const ConfiguredLaunch& launch, void* stream,
                      StreamContext stream_context) = 0;

  // Platform services (jw_platform_desc).
  virtual void* allocate(int32_t device, std::size_t bytes) = 0;
  virtual void free_memory(int32_t device, void* pointer) = 0;
  virtual void copy(int32_t device, void* dst, const void* src,
                    std::size_t bytes, jw_copy_direction direction,
                    void* stream) = 0;
  virtual void synchronize(int32_t device, void* stream) = 0;

  // Unloads every module and releases every context this driver took; for
  // the plugin's shutdown, before the library is unloaded.
  virtual void release_all() = 0;
};

}  // namespace jitwarm::gpu
