// GpuBackendDescription: what a GPU plugin (CUDA, HIP) tells the shared GPU
// layer about itself: its names, which name the platform, the compiler and
// the implementation in tables and messages, and how it reads a key's
// target. Every part of a GpuBackend (gpu_backend.hpp) reads it.
#pragma once

#include "gpu_target.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace jitwarm::gpu {

struct GpuBackendDescription {
  std::string plugin_name;  // "jitwarm-cuda", for messages
  std::string platform;     // "cuda": jw_kernel_impl.platform and target prefix
  std::string impl_name;    // "cuda-nvrtc": jw_kernel_impl.impl_name
  std::string compiler_label;  // "NVRTC": names the compiler in messages
  // Parses a key's target; throws PluginError(JW_ERROR_UNSUPPORTED) for a
  // target this backend cannot compile for.
  std::function<GpuTarget(std::string_view target)> parse_target;
};

}  // namespace jitwarm::gpu
