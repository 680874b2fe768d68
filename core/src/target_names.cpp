// What a person types for a target, and what it means: PLATFORM:ARCH as it
// is, or the design's shorthand (sm_90, compute_90, gfx942) with its
// platform. The `jitwarm` command, WarmupOptions::target (so the C API and
// the Python package) and the Python cache functions read targets here, so
// they agree.
#include <fmt/format.h>

#include <jitwarm/jitwarm.hpp>

namespace jitwarm {

std::string parse_target(std::string_view typed) {
  const auto shorthand = [&](std::string_view prefix) {
    return typed.starts_with(prefix) && typed.size() > prefix.size();
  };
  if (shorthand("sm_") || shorthand("compute_")) {
    return "cuda:" + std::string(typed);
  }
  if (shorthand("gfx")) return "hip:" + std::string(typed);
  const auto colon = typed.find(':');
  if (colon != std::string_view::npos && colon > 0 &&
      colon + 1 < typed.size()) {
    return std::string(typed);
  }
  throw Error(JW_ERROR_INVALID_ARGUMENT,
              fmt::format("unknown target '{}': give PLATFORM:ARCH "
                          "(cuda:sm_90, hip:gfx942, cpu:x86_64) or the "
                          "shorthand sm_NN / compute_NN (CUDA) or gfxNNN (HIP)",
                          typed));
}

}  // namespace jitwarm
