// CUDA compile targets: "cuda:sm_90" (CUBIN for that architecture),
// "cuda:sm_90a" (CUBIN with the arch-specific features), "cuda:compute_90"
// (PTX, which the driver JIT-compiles at load).
#pragma once

#include "gpu_target.hpp"

#include <string_view>

namespace jitwarm::cuda {

// Throws PluginError(JW_ERROR_UNSUPPORTED) naming the accepted forms.
gpu::GpuTarget parse_cuda_target(std::string_view text);

// The arch of a device of compute capability major.minor: "sm_90" for 9.0
// (the platform's device_target prefixes "cuda:").
std::string cuda_arch_for(int major, int minor);

}  // namespace jitwarm::cuda
