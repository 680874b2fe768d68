// parse_cuda_target: the one place that knows CUDA target spellings.
#include "cuda_target.hpp"

#include <jitwarm/plugin.hpp>

#include <cctype>
#include <string>

namespace jitwarm::cuda {
namespace {

constexpr std::string_view kPlatformPrefix = "cuda:";

// "90", "90a", "100f": digits, then at most one feature-set letter.
bool is_arch_number(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  if (digits < 2) return false;
  const std::string_view suffix = text.substr(digits);
  return suffix.empty() || suffix == "a" || suffix == "f";
}

}  // namespace

gpu::GpuTarget parse_cuda_target(std::string_view text) {
  auto unsupported = [&]() -> gpu::GpuTarget {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        "the CUDA plugin compiles for 'cuda:sm_<NN>' (CUBIN) or "
        "'cuda:compute_<NN>' (PTX), not '" +
            std::string(text) + "'");
  };
  if (text.substr(0, kPlatformPrefix.size()) != kPlatformPrefix) {
    return unsupported();
  }
  gpu::GpuTarget target;
  target.text = std::string(text);
  target.platform = "cuda";
  target.arch = std::string(text.substr(kPlatformPrefix.size()));
  target.warp_size = 32;
  const std::string_view arch = target.arch;
  if (arch.substr(0, 3) == "sm_" && is_arch_number(arch.substr(3))) {
    target.binary_format = "cubin";
  } else if (arch.substr(0, 8) == "compute_" &&
             is_arch_number(arch.substr(8))) {
    target.binary_format = "ptx";
  } else {
    return unsupported();
  }
  return target;
}

std::string cuda_arch_for(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace jitwarm::cuda
