// Configs of a descriptor's [tune] table (see kernel_tuning.hpp).
#include "kernel_tuning.hpp"

#include <jitwarm/plugin.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "key_params.hpp"

namespace jitwarm::gpu {
namespace {

[[noreturn]] void invalid(const jw_compile_key_view& key,
                          const std::string& problem) {
  const std::string_view text = key.text != nullptr ? key.text : "";
  throw plugin::PluginError(
      JW_ERROR_INVALID_ARGUMENT,
      "compile key " + std::string(text) + ": " + problem);
}

// The key's config, read only inside the writer's struct_size (R3).
std::span<const jw_tune_value> config_of(const jw_compile_key_view& key) {
  if (key.struct_size <
          offsetof(jw_compile_key_view, num_config) + sizeof(key.num_config) ||
      key.num_config == 0) {
    return {};
  }
  if (key.config == nullptr) invalid(key, "a config of null values");
  return {key.config, key.num_config};
}

}  // namespace

ChoiceValues key_choice_values(const KernelDescriptor& descriptor,
                               const jw_compile_key_view& key) {
  const auto& choices = descriptor.tune_choices;
  ChoiceValues values;
  for (const DescriptorChoice& c : choices) values.push_back(c.default_value);
  for (const jw_tune_value& v : config_of(key)) {
    const std::string_view name = v.name != nullptr ? v.name : "";
    const auto choice =
        std::find_if(choices.begin(), choices.end(),
                     [&](const DescriptorChoice& c) { return c.name == name; });
    if (choice == choices.end()) {
      invalid(key,
              "config value '" + std::string(name) + "' is no choice of " +
                  (choices.empty() ? descriptor.origin + " (it has no [tune])"
                                   : descriptor.origin + "'s [tune]"));
    }
    if (std::find(choice->values.begin(), choice->values.end(), v.value) ==
        choice->values.end()) {
      std::string allowed;
      for (int64_t a : choice->values)
        allowed += (allowed.empty() ? "" : ", ") + std::to_string(a);
      invalid(key, "config value " + std::string(name) + "=" +
                       std::to_string(v.value) + " is not among its values (" +
                       allowed + ", " + descriptor.where(choice->line) + ")");
    }
    values[static_cast<std::size_t>(choice - choices.begin())] = v.value;
  }
  return values;
}

bool passes_tune_checks(const KernelDescriptor& descriptor,
                        const jw_compile_key_view& key, const GpuTarget& target,
                        const ChoiceValues& values) {
  // The choices are the first compile values; the checks read nothing else.
  std::vector<ExprSlot> lets(descriptor.compile_values.size());
  for (std::size_t i = 0; i < values.size(); ++i) lets[i].integer = values[i];
  CompileInputs in;
  in.key = &key;
  in.warp_size = target.warp_size;
  in.lets = lets;
  for (const DescriptorCheck& check : descriptor.tune_checks) {
    try {
      if (!check.expression.boolean(in)) return false;
    } catch (const plugin::PluginError& error) {
      if (error.status() != JW_ERROR_INVALID_ARGUMENT) throw;
      return false;
    }
  }
  return true;
}

std::vector<ChoiceValues> tune_candidates(const KernelDescriptor& descriptor,
                                          const jw_compile_key_view& key,
                                          const GpuTarget& target) {
  const auto& choices = descriptor.tune_choices;
  if (choices.empty()) return {};
  static_cast<void>(KeyParams(key, descriptor));  // the schema's parameters
  ChoiceValues fallback;
  for (const DescriptorChoice& c : choices) fallback.push_back(c.default_value);
  std::vector<ChoiceValues> out{fallback};
  // Every combination, as an odometer over the choices' value indices.
  std::vector<std::size_t> index(choices.size(), 0);
  while (true) {
    ChoiceValues values;
    for (std::size_t i = 0; i < choices.size(); ++i)
      values.push_back(choices[i].values[index[i]]);
    if (values != fallback &&
        passes_tune_checks(descriptor, key, target, values)) {
      out.push_back(std::move(values));
    }
    std::size_t i = choices.size();
    while (i > 0 && ++index[i - 1] == choices[i - 1].values.size()) {
      index[--i] = 0;
    }
    if (i == 0) break;
  }
  return out;
}

}  // namespace jitwarm::gpu
