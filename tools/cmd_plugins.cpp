// jitwarm plugins: what is loaded, what was rejected and why, and each
// platform's state (jitwarm kernels and explain are in cmd_kernels.cpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli.hpp"
#include "usable_cpus.hpp"

namespace jitwarm::cli {

int cmd_plugins(const std::vector<std::string>& args) {
  po::options_description options("options");
  PluginOptions plugins;
  bool json = false;
  bool isolated = false;
  plugins.add_to(options);
  options.add_options()("json", po::bool_switch(&json),
                        "print the load report as JSON")(
      "isolated", po::bool_switch(&isolated),
      "load each candidate in a child process first: one that crashes, "
      "aborts, exits or hangs there is reported as rejected (the default; "
      "--no-probe turns it off)");
  po::variables_map vm;
  int code = kExitOk;
  if (!parse("plugins",
             "[--json] [--no-probe] [--plugin-path DIRS] [--plugin FILE]... "
             "[--strict]",
             options, nullptr, args, vm, &code)) {
    return code;
  }
  // The report is this command's output: no log lines for each rejection.
  RuntimeOptions quiet;
  quiet.log = [](jw_log_level level, const std::string& message) {
    if (level >= JW_LOG_ERROR)
      std::cerr << "jitwarm error: " << message << "\n";
  };
  Runtime runtime(without_caches(quiet));
  PluginLoadOptions load = plugins.to_load_options();
  load.strict = false;  // report everything, then decide
  load.isolate = load.isolate || isolated;
  const PluginLoadReport report = runtime.load_plugins(load);
  // The default of warmup's --jobs and of the CUDA plugin's compile
  // threads (JITWARM_CUDA_COMPILE_THREADS=0).
  const detail::UsableCpus& cpus = detail::usable_cpus();
  if (json) {
    nlohmann::json j = nlohmann::json::parse(report.to_json());
    j["platforms"] = nlohmann::json::array();
    for (const auto& p : runtime.platforms()) {
      j["platforms"].push_back({{"name", p.name},
                                {"can_compile", p.can_compile},
                                {"can_launch", p.can_launch},
                                {"devices", p.device_count},
                                {"detail", p.detail},
                                {"origin", p.origin}});
    }
    j["cpus"] = {{"usable", cpus.count},
                 {"host", cpus.host},
                 {"affinity", cpus.affinity},
                 {"quota", cpus.quota}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << report.to_text();
    for (const auto& p : runtime.platforms()) {
      std::cout << fmt::format(
          "platform {:<8} {}{}\n", p.name,
          p.can_launch ? fmt::format("launch on {} device(s)", p.device_count)
          : p.can_compile ? std::string("compile-only")
                          : std::string("unavailable"),
          p.detail.empty() ? "" : " (" + p.detail + ")");
    }
    std::cout << "CPUs for warmup jobs and compile threads: " << cpus.describe()
              << "\n";
  }
  return plugins.strict && report.rejected_count() > 0 ? kExitFailures
                                                       : kExitOk;
}

}  // namespace jitwarm::cli
