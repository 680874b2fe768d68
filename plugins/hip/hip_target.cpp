// parse_hip_target: processor and feature syntax, canonical feature order,
// wavefront width per processor family.
#include "hip_target.hpp"

#include <jitwarm/plugin.hpp>

#include <cctype>
#include <optional>

namespace jitwarm::hip {
namespace {

constexpr std::string_view kPlatformPrefix = "hip:";

bool is_lower_hex(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) {
      return false;
    }
  }
  return true;
}

bool is_decimal(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The major version of a processor: 9 for gfx90a/gfx942, 11 for gfx1100;
// nullopt when `processor` is not a specific gfx processor ("gfx" + major
// + two hex digits: minor and stepping).
std::optional<int> processor_major(std::string_view processor) {
  if (processor.substr(0, 3) != "gfx") return std::nullopt;
  const std::string_view rest = processor.substr(3);
  if (rest.size() < 3 || rest.size() > 4 || !is_lower_hex(rest)) {
    return std::nullopt;
  }
  const std::string_view major = rest.substr(0, rest.size() - 2);
  if (!is_decimal(major)) return std::nullopt;
  return std::stoi(std::string(major));
}

bool is_generic(std::string_view processor) {
  constexpr std::string_view kGeneric = "-generic";
  return processor.size() > kGeneric.size() &&
         processor.substr(processor.size() - kGeneric.size()) == kGeneric;
}

}  // namespace

std::string_view hip_processor(std::string_view target_id) {
  return target_id.substr(0, target_id.find(':'));
}

gpu::GpuTarget parse_hip_target(std::string_view text) {
  auto unsupported = [&](const std::string& why) -> gpu::GpuTarget {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        "the HIP plugin compiles for 'hip:gfx<NNN>' with optional features "
        "':sramecc+|-' and ':xnack+|-' (e.g. hip:gfx942, "
        "hip:gfx90a:sramecc+:xnack-), not '" +
            std::string(text) + "': " + why);
  };
  if (text.substr(0, kPlatformPrefix.size()) != kPlatformPrefix) {
    return unsupported("the platform is not 'hip'");
  }
  std::string_view id = text.substr(kPlatformPrefix.size());
  const std::string_view processor = hip_processor(id);
  const std::optional<int> major = processor_major(processor);
  if (is_generic(processor)) {
    // clang 19 builds them only as code object v6, which it calls "still in
    // development and not ready for production use".
    return unsupported("generic targets are not supported; name the processor");
  }
  if (!major) {
    return unsupported("'" + std::string(processor) +
                       "' is not an AMD GPU processor name");
  }
  // Features, each at most once; written back in the order clang and comgr
  // spell target IDs (alphabetical), so equal targets compare equal.
  std::optional<char> sramecc;
  std::optional<char> xnack;
  std::string_view rest =
      id.size() > processor.size() ? id.substr(processor.size() + 1) : "";
  while (id.size() > processor.size()) {
    const std::string_view feature = rest.substr(0, rest.find(':'));
    if (feature.size() < 2 ||
        (feature.back() != '+' && feature.back() != '-')) {
      return unsupported("feature '" + std::string(feature) +
                         "' must end in + or -");
    }
    const std::string_view name = feature.substr(0, feature.size() - 1);
    std::optional<char>* slot = name == "sramecc" ? &sramecc
                                : name == "xnack" ? &xnack
                                                  : nullptr;
    if (slot == nullptr) {
      return unsupported("unknown feature '" + std::string(name) + "'");
    }
    if (slot->has_value()) {
      return unsupported("feature '" + std::string(name) + "' given twice");
    }
    *slot = feature.back();
    if (feature.size() == rest.size()) break;
    rest.remove_prefix(feature.size() + 1);
  }

  gpu::GpuTarget target;
  target.text = std::string(text);
  target.platform = "hip";
  target.arch = std::string(processor);
  if (sramecc) target.arch += std::string(":sramecc") + *sramecc;
  if (xnack) target.arch += std::string(":xnack") + *xnack;
  target.binary_format = "hsaco";
  target.warp_size = *major <= 9 ? 64 : 32;
  return target;
}

std::string hip_arch_for(std::string_view gcn_arch_name) {
  const std::string_view processor = hip_processor(gcn_arch_name);
  if (!processor_major(processor)) {
    throw plugin::PluginError(JW_ERROR_INTERNAL,
                              "the HIP runtime reported architecture '" +
                                  std::string(gcn_arch_name) +
                                  "', which is not a gfx processor");
  }
  return std::string(processor);
}

}  // namespace jitwarm::hip
