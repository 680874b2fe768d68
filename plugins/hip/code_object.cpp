// read_code_object, the lowered-name markers and the template-prefix rule.
#include "code_object.hpp"

#include <jitwarm/plugin.hpp>

#include "elf_symbols.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

namespace jitwarm::hip {
namespace {

constexpr uint8_t kSymbolTypeFunction = 2;  // STT_FUNC
constexpr std::string_view kDescriptorSuffix = ".kd";
constexpr std::string_view kMarkerPrefix = "jw_lowered_name_";
// AMDGPU relocation types (LLVM's ELFRelocs/AMDGPU.def).
constexpr uint32_t kRelocationAbs64 = 1;
constexpr uint32_t kRelocationRelative64 = 13;

bool is_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool contains(const std::vector<std::string>& sorted, const std::string& name) {
  return std::binary_search(sorted.begin(), sorted.end(), name);
}

}  // namespace

std::optional<CodeObject> read_code_object(std::string_view binary) {
  const std::optional<gpu::ElfImage> elf = gpu::read_elf(binary);
  if (!elf || elf->machine != gpu::kElfMachineAmdgpu) return std::nullopt;
  CodeObject code_object;
  std::memcpy(&code_object.flags, binary.data() + 48, sizeof(uint32_t));
  std::set<std::string> functions;
  std::set<std::string> descriptors;
  std::map<uint64_t, std::string> function_at;
  for (const gpu::ElfSymbol& symbol : elf->symbols) {
    if (!symbol.defined) continue;
    const std::string_view name = symbol.name;
    if (symbol.type == kSymbolTypeFunction) {
      functions.insert(symbol.name);
      function_at.emplace(symbol.value, symbol.name);
    } else if (name.size() > kDescriptorSuffix.size() &&
               name.substr(name.size() - kDescriptorSuffix.size()) ==
                   kDescriptorSuffix) {
      descriptors.emplace(
          name.substr(0, name.size() - kDescriptorSuffix.size()));
    }
  }
  std::set_intersection(functions.begin(), functions.end(), descriptors.begin(),
                        descriptors.end(),
                        std::back_inserter(code_object.kernels));
  for (const gpu::ElfSymbol& marker : elf->symbols) {
    if (!marker.defined || marker.name.rfind(kMarkerPrefix, 0) != 0) continue;
    for (const gpu::ElfRelocation& relocation : elf->relocations) {
      if (relocation.offset != marker.value) continue;
      if (relocation.type == kRelocationRelative64) {
        const auto target =
            function_at.find(static_cast<uint64_t>(relocation.addend));
        if (target != function_at.end()) {
          code_object.marked_kernels[marker.name] = target->second;
        }
      } else if (relocation.type == kRelocationAbs64 &&
                 relocation.addend == 0 && !relocation.symbol.empty()) {
        code_object.marked_kernels[marker.name] = relocation.symbol;
      }
    }
  }
  return code_object;
}

std::string lowered_name_marker(std::size_t index) {
  return std::string(kMarkerPrefix) + std::to_string(index);
}

std::string lowered_name_markers(const std::vector<std::string>& expressions) {
  std::string text =
      "\n// jitwarm: one device pointer per name expression; its relocation "
      "names the kernel.\n";
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    text += "extern \"C\" __attribute__((device, used)) void* const " +
            lowered_name_marker(i) + " = (void*)&" + expressions[i] + ";\n";
  }
  return text;
}

std::string mangled_template_prefix(std::string_view name_expression) {
  const std::size_t open = name_expression.find('<');
  if (open == std::string_view::npos) return "";
  std::string_view qualified = name_expression.substr(0, open);
  while (!qualified.empty() && qualified.back() == ' ') {
    qualified.remove_suffix(1);
  }
  if (qualified.substr(0, 2) == "::") qualified.remove_prefix(2);
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t colons = qualified.find("::");
    parts.push_back(qualified.substr(0, colons));
    if (colons == std::string_view::npos) break;
    qualified.remove_prefix(colons + 2);
  }
  std::string nested;
  for (std::string_view part : parts) {
    if (!is_identifier(part)) return "";
    nested += std::to_string(part.size()) + std::string(part);
  }
  return (parts.size() == 1 ? "_Z" : "_ZN") + nested + "I";
}

std::vector<std::string> kernels_of_template(const CodeObject& code_object,
                                             std::string_view name_expression) {
  const std::string prefix = mangled_template_prefix(name_expression);
  std::vector<std::string> kernels;
  if (prefix.empty()) return kernels;
  for (const std::string& kernel : code_object.kernels) {
    if (kernel.rfind(prefix, 0) == 0) kernels.push_back(kernel);
  }
  return kernels;
}

std::vector<std::string> lowered_names_in(
    const CodeObject& code_object, const std::vector<std::string>& expressions,
    bool markers, const std::string& compiler) {
  std::vector<std::string> lowered;
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    const std::string& expression = expressions[i];
    if (markers) {
      const auto marked =
          code_object.marked_kernels.find(lowered_name_marker(i));
      if (marked == code_object.marked_kernels.end() ||
          !contains(code_object.kernels, marked->second)) {
        throw plugin::PluginError(
            JW_ERROR_INTERNAL,
            compiler + ": the code object has no kernel behind the marker " +
                lowered_name_marker(i) + " of " + expression);
      }
      lowered.push_back(marked->second);
      continue;
    }
    const std::vector<std::string> kernels =
        kernels_of_template(code_object, expression);
    if (kernels.size() != 1) {
      std::string listed;
      for (const std::string& kernel : kernels) listed += " " + kernel;
      throw plugin::PluginError(
          JW_ERROR_INTERNAL, compiler + ": the code object holds " +
                                 std::to_string(kernels.size()) +
                                 " kernels of the template of " + expression +
                                 " (" + (listed.empty() ? " none" : listed) +
                                 " ), expected one");
    }
    lowered.push_back(kernels.front());
  }
  return lowered;
}

}  // namespace jitwarm::hip
