// HIP compile targets: "hip:<processor>[:<feature><+|->]...", e.g.
// "hip:gfx90a", "hip:gfx942", "hip:gfx1100" or "hip:gfx90a:sramecc+:xnack-".
// The one place that knows AMD target spellings and the wavefront width of
// each processor family; the compilers and the driver read the result.
#pragma once

#include "gpu_target.hpp"

#include <string>
#include <string_view>

namespace jitwarm::hip {

// Throws PluginError(JW_ERROR_UNSUPPORTED) naming the accepted forms. The
// result's `arch` is the target ID as compilers take it (--offload-arch),
// with features in canonical order ("gfx90a:sramecc+:xnack-"); its
// warp_size is 64 for gfx6..gfx9 (GCN, CDNA) and 32 for gfx10 and later
// (RDNA, which HIP compiles for wave32).
gpu::GpuTarget parse_hip_target(std::string_view text);

// The processor of a target ID: "gfx90a" for "gfx90a:sramecc+:xnack-".
std::string_view hip_processor(std::string_view target_id);

// The device's target arch from the runtime's gcnArchName
// ("gfx90a:sramecc+:xnack-" -> "gfx90a"). Features are dropped: a code
// object built for the bare processor has "any" xnack/sramecc settings and
// loads on every configuration of it, so a warmup for "hip:gfx90a" matches
// what the launch path derives on any gfx90a. Throws PluginError
// (JW_ERROR_INTERNAL) when the name is not a gfx processor.
std::string hip_arch_for(std::string_view gcn_arch_name);

}  // namespace jitwarm::hip
