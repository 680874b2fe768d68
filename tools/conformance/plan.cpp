// plan.cpp — plugin loading and the selection of what a run tests (see
// plan.hpp).
#include "plan.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "cases.hpp"
#include "result.hpp"
#include "source_kernel_cases.hpp"

namespace jitwarm::conformance {
namespace {

// The plugins the plan's probe rejected (crashed, exited or hung in a
// child process). Workers are forked after the plan, so they inherit this
// and do not load those plugins either.
std::set<std::string> g_rejected_by_probe;
bool g_probed = false;

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error);
}

bool kernel_selected(const Options& options, const std::string& kernel) {
  if (options.kernel_globs.empty()) return true;
  const std::string short_name = short_kernel_name(kernel);
  return std::any_of(options.kernel_globs.begin(), options.kernel_globs.end(),
                     [&](const std::string& glob) {
                       return fnmatch(glob.c_str(), kernel.c_str(), 0) == 0 ||
                              fnmatch(glob.c_str(), short_name.c_str(), 0) == 0;
                     });
}

// "vllm...rms_norm [cuda]" as a load record lists an implementation.
std::pair<std::string, std::string> parse_record_kernel(
    const std::string& entry) {
  const auto open = entry.rfind(" [");
  if (open == std::string::npos || entry.back() != ']') return {entry, ""};
  return {entry.substr(0, open),
          entry.substr(open + 2, entry.size() - open - 3)};
}

nlohmann::json record_json(const PluginLoadRecord& record) {
  return {{"path", record.path},
          {"loaded", record.loaded},
          {"rejection", std::string(to_string(record.rejection))},
          {"detail", record.detail},
          {"name", record.plugin_name},
          {"version", record.plugin_version},
          {"abi_version", record.abi_version},
          {"kernels", record.kernels},
          {"platforms", record.platforms}};
}

}  // namespace

std::vector<PluginLoadRecord> load_plugins_for_run(Runtime& runtime,
                                                   const Options& options) {
  PluginLoadOptions load;
  load.search_path = split_path_list(options.plugin_path);
  load.kernel_path = split_path_list(options.kernel_path);
  // The plan probes the candidates when the run isolates; its workers then
  // pass over the ones it rejected.
  load.isolate = options.isolate && !g_probed;
  load.vet = [](const std::string& path) -> std::optional<std::string> {
    if (!g_rejected_by_probe.contains(path)) return std::nullopt;
    return "rejected by the run's probe in a child process";
  };
  for (const PluginLoadRecord& r : runtime.load_plugins(load).records) {
    if (load.isolate && r.rejection == PluginRejection::crashed_in_probe) {
      g_rejected_by_probe.insert(r.path);
    }
  }
  g_probed = g_probed || load.isolate;
  // The plugins under test load last, so among user plugins theirs are the
  // newest (docs/plugin-abi.md P10); a file already loaded from the search
  // path is that same load.
  std::vector<PluginLoadRecord> tested;
  for (const std::string& path : options.plugins) {
    PluginLoadRecord record = runtime.load_plugin(path);
    if (!record.loaded && record.rejection == PluginRejection::duplicate) {
      for (const PluginLoadRecord& earlier : runtime.load_history()) {
        if (!earlier.loaded || earlier.plugin_name != record.plugin_name)
          continue;
        if (!same_file(earlier.path, path)) {
          throw std::runtime_error(fmt::format(
              "plugin {} cannot be tested: another copy of {} is already "
              "loaded from {} (on the plugin search path), and it would be "
              "tested instead. Remove one of them",
              path, record.plugin_name, earlier.path));
        }
        record = earlier;
        break;
      }
    }
    if (!record.loaded) {
      throw std::runtime_error(fmt::format("plugin {} was rejected ({}): {}",
                                           path, to_string(record.rejection),
                                           record.detail));
    }
    tested.push_back(std::move(record));
  }
  // What runs is what a launch reaches: the winner of each (kernel,
  // platform). A plugin under test must be that winner everywhere it
  // registered, or its results would be another plugin's.
  for (const PluginLoadRecord& record : tested) {
    for (const std::string& entry : record.kernels) {
      const auto [kernel, platform] = parse_record_kernel(entry);
      const std::vector<std::string> known = runtime.kernel_names();
      if (std::find(known.begin(), known.end(), kernel) == known.end()) {
        throw std::runtime_error(fmt::format(
            "plugin {} implements {}, but no loaded plugin defines its "
            "schema, so it cannot be tested",
            record.path, kernel));
      }
      for (const PlatformExplanation& p : runtime.explain(kernel).platforms) {
        if (p.platform != platform || same_file(p.winner.origin, record.path))
          continue;
        throw std::runtime_error(fmt::format(
            "plugin {} cannot be tested on {}: its implementation of {} is "
            "not the one launches reach; '{}' from {} ({}) wins over it "
            "(docs/plugin-abi.md P10). Remove that plugin from the search "
            "path to test this one",
            record.path, platform, kernel, p.winner.impl_name, p.winner.origin,
            p.winner.precedence));
      }
    }
  }
  return tested;
}

Plan make_plan(const Options& options) {
  Plan plan;
  RuntimeOptions runtime_options;
  runtime_options.log = [](jw_log_level, const std::string&) {};
  // Planning compiles nothing.
  runtime_options.no_cache_dir = true;
  runtime_options.no_remote_cache = true;
  Runtime runtime(std::move(runtime_options));
  std::vector<PluginLoadRecord> tested;
  try {
    tested = load_plugins_for_run(runtime, options);
  } catch (const std::exception& e) {
    plan.error = e.what();
    plan.error_exit_code = kExitEnvironment;
  }
  if (plan.error.empty()) {
    // Kernels from source bring their cases in their descriptors; a
    // malformed case table is the user's input.
    try {
      register_source_kernel_cases(runtime);
    } catch (const std::exception& e) {
      plan.error = e.what();
      plan.error_exit_code = kExitBadInput;
    }
  }
  for (const PluginLoadRecord& record : runtime.load_history()) {
    plan.plugins.push_back(record_json(record));
  }
  if (!plan.error.empty()) return plan;

  // (kernel, platform) pairs under test, in a stable order.
  std::map<std::string, std::set<std::string>> kernels_by_platform;
  if (!options.plugins.empty()) {
    for (const PluginLoadRecord& record : tested) {
      for (const std::string& entry : record.kernels) {
        const auto [kernel, platform] = parse_record_kernel(entry);
        kernels_by_platform[platform].insert(kernel);
      }
    }
  } else {
    for (const std::string& kernel : runtime.kernel_names()) {
      for (const PlatformExplanation& p : runtime.explain(kernel).platforms) {
        kernels_by_platform[p.platform].insert(kernel);
      }
    }
  }
  for (const std::string& wanted : options.platforms) {
    if (!kernels_by_platform.contains(wanted)) {
      std::string known;
      for (const auto& [name, kernels] : kernels_by_platform) {
        known += (known.empty() ? "" : ", ") + name;
      }
      plan.error = fmt::format(
          "--platform {}: no implementation under test runs there "
          "(platforms under test: {})",
          wanted, known.empty() ? std::string("none") : known);
      plan.error_exit_code = kExitBadInput;
      return plan;
    }
  }

  const std::vector<PlatformInfo> infos = runtime.platforms();
  for (const auto& [name, kernels] : kernels_by_platform) {
    if (!options.platforms.empty() &&
        std::find(options.platforms.begin(), options.platforms.end(), name) ==
            options.platforms.end()) {
      continue;
    }
    PlatformUnderTest platform;
    platform.name = name;
    const auto info =
        std::find_if(infos.begin(), infos.end(),
                     [&](const auto& i) { return i.name == name; });
    if (info != infos.end()) {
      platform.can_launch = info->can_launch && info->device_count > 0;
      platform.detail = info->detail;
    } else {
      platform.detail =
          "no platform of this name is registered (no memory services)";
    }
    // The device's target, when there is a device to ask.
    std::string device_target;
    std::string no_device_reason;
    if (platform.can_launch) {
      try {
        device_target = runtime.target_for(name, options.device);
      } catch (const std::exception& e) {
        no_device_reason = e.what();
      }
    } else {
      no_device_reason = platform.detail.empty()
                             ? std::string("the platform cannot launch")
                             : platform.detail;
    }
    if (options.compile_only) {
      platform.compile_only = true;
      platform.compile_only_reason = "--compile-only";
    } else if (device_target.empty()) {
      platform.compile_only = true;
      platform.compile_only_reason = no_device_reason;
    }
    if (platform.compile_only) {
      for (const std::string& target : options.targets) {
        if (target.rfind(name + ":", 0) == 0)
          platform.targets.push_back(target);
      }
      if (platform.targets.empty() && !device_target.empty()) {
        platform.targets.push_back(device_target);
      }
      if (platform.targets.empty()) {
        platform.skip_reason = fmt::format(
            "compile-only ({}) and no --target {}:ARCH given to compile for",
            platform.compile_only_reason, name);
      }
    } else {
      platform.targets.push_back(device_target);
    }
    for (const std::string& kernel : kernels) {
      if (!kernel_selected(options, kernel)) continue;
      KernelUnderTest k;
      k.kernel = kernel;
      for (const PlatformExplanation& p : runtime.explain(kernel).platforms) {
        if (p.platform == name) {
          k.impl = p.winner.impl_name;
          k.origin = p.winner.origin;
        }
      }
      for (const CaseRecipe& recipe :
           case_recipes(kernel, CaseOptions{options.seed, options.large})) {
        k.cases.push_back(recipe.name);
      }
      platform.kernels.push_back(std::move(k));
    }
    plan.platforms.push_back(std::move(platform));
  }
  return plan;
}

nlohmann::json to_json(const Plan& plan) {
  nlohmann::json platforms = nlohmann::json::array();
  for (const PlatformUnderTest& p : plan.platforms) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const KernelUnderTest& k : p.kernels) {
      kernels.push_back({{"kernel", k.kernel},
                         {"impl", k.impl},
                         {"origin", k.origin},
                         {"cases", k.cases}});
    }
    platforms.push_back({{"name", p.name},
                         {"can_launch", p.can_launch},
                         {"detail", p.detail},
                         {"compile_only", p.compile_only},
                         {"compile_only_reason", p.compile_only_reason},
                         {"targets", p.targets},
                         {"skip_reason", p.skip_reason},
                         {"kernels", std::move(kernels)}});
  }
  return {{"platforms", std::move(platforms)},
          {"plugins", plan.plugins},
          {"error", plan.error},
          {"error_exit_code", plan.error_exit_code}};
}

Plan plan_from_json(const nlohmann::json& json) {
  Plan plan;
  for (const nlohmann::json& p : json.at("platforms")) {
    PlatformUnderTest platform;
    platform.name = p.at("name").get<std::string>();
    platform.can_launch = p.at("can_launch").get<bool>();
    platform.detail = p.at("detail").get<std::string>();
    platform.compile_only = p.at("compile_only").get<bool>();
    platform.compile_only_reason =
        p.at("compile_only_reason").get<std::string>();
    platform.targets = p.at("targets").get<std::vector<std::string>>();
    platform.skip_reason = p.at("skip_reason").get<std::string>();
    for (const nlohmann::json& k : p.at("kernels")) {
      platform.kernels.push_back(
          {k.at("kernel").get<std::string>(), k.at("impl").get<std::string>(),
           k.at("origin").get<std::string>(),
           k.at("cases").get<std::vector<std::string>>()});
    }
    plan.platforms.push_back(std::move(platform));
  }
  plan.plugins = json.at("plugins");
  plan.error = json.at("error").get<std::string>();
  plan.error_exit_code = json.at("error_exit_code").get<int>();
  return plan;
}

}  // namespace jitwarm::conformance
