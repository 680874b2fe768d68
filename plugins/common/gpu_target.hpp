// GpuTarget: a compile key's target ("cuda:sm_90", "hip:gfx942") as the
// shared GPU layer needs it. Each backend parses its own target strings
// (cuda_target.cpp, and the HIP plugin's); the rest of plugins/common only
// reads the result.
#pragma once

#include <cstdint>
#include <string>

namespace jitwarm::gpu {

struct GpuTarget {
  std::string text;      // as in the key, e.g. "cuda:sm_90"
  std::string platform;  // "cuda", "hip"
  std::string arch;      // "sm_90", "compute_90", "gfx942"
  // What the compiler produces for this target: "cubin", "ptx", "hsaco".
  std::string binary_format;
  // Threads of a warp / wavefront: 32 on NVIDIA and RDNA, 64 on CDNA. Block
  // sizes fixed at compile time are rounded to it.
  uint32_t warp_size = 32;
};

}  // namespace jitwarm::gpu
