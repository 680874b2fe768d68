// jitwarm plugins: what is loaded, what was rejected and why, and each
// platform's state (jitwarm kernels and explain are in cmd_kernels.cpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli.hpp"
#include "worker_pool.hpp"

namespace jitwarm::cli {
namespace {

// How long one candidate may take to load in its probe process.
constexpr double kProbeTimeoutSeconds = 60;

// `plugins --isolated`: a plugin whose entry point crashes, aborts or exits
// takes an in-process load down with it (docs/plugin-abi.md P14), so each
// candidate is first loaded in a child process of its own; one that dies or
// hangs there is reported as rejected and never loaded here.
std::optional<std::string> probe_in_child(const std::string& path) {
  const std::vector<detail::ItemEnd> ends = detail::run_isolated(
      1,
      [&path]() -> detail::ItemRunner {
        return [&path](std::size_t) {
          RuntimeOptions quiet;
          quiet.log = [](jw_log_level, const std::string&) {};
          Runtime runtime(without_caches(quiet));
          const PluginLoadRecord record = runtime.load_plugin(path);
          return detail::ItemOutcome{{{"loaded", record.loaded}}, false};
        };
      },
      detail::IsolationOptions{1, kProbeTimeoutSeconds, 0, "probe"});
  const detail::ItemEnd& end = ends.front();
  switch (end.kind) {
    case detail::ItemEndKind::crashed:
      return "crashed in a child process: " + end.detail;
    case detail::ItemEndKind::timed_out:
      return "hung in a child process: " + end.detail;
    case detail::ItemEndKind::completed:
    case detail::ItemEndKind::failed:
      // It came back (loaded or rejected): the real load says which.
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

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
      "aborts, exits or hangs there is reported as rejected");
  po::variables_map vm;
  int code = kExitOk;
  if (!parse("plugins",
             "[--json] [--isolated] [--plugin-path DIRS] [--plugin FILE]... "
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
  if (isolated) load.vet = probe_in_child;
  const PluginLoadReport report = runtime.load_plugins(load);
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
  }
  return plugins.strict && report.rejected_count() > 0 ? kExitFailures
                                                       : kExitOk;
}

}  // namespace jitwarm::cli
