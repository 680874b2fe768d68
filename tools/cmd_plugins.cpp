// jitwarm plugins | kernels | explain: what is loaded and who implements what.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli.hpp"
#include "isolation.hpp"

namespace jitwarm::cli {
namespace {

// How long one candidate may take to load in its probe process.
constexpr double kProbeTimeoutSeconds = 60;

// `plugins --isolated`: a plugin whose entry point crashes, aborts or exits
// takes an in-process load down with it (docs/plugin-abi.md P14), so each
// candidate is first loaded in a child process of its own; one that dies or
// hangs there is reported as rejected and never loaded here.
std::optional<std::string> probe_in_child(const std::string& path) {
  const std::vector<conformance::ItemEnd> ends = conformance::run_isolated(
      1,
      [&path]() -> conformance::ItemRunner {
        return [&path](std::size_t) {
          RuntimeOptions quiet;
          quiet.log = [](jw_log_level, const std::string&) {};
          Runtime runtime(quiet);
          const PluginLoadRecord record = runtime.load_plugin(path);
          return conformance::ItemOutcome{{{"loaded", record.loaded}}, false};
        };
      },
      conformance::IsolationOptions{1, kProbeTimeoutSeconds, 0});
  const conformance::ItemEnd& end = ends.front();
  switch (end.kind) {
    case conformance::ItemEndKind::crashed:
      return "crashed in a child process: " + end.detail;
    case conformance::ItemEndKind::timed_out:
      return "hung in a child process: " + end.detail;
    case conformance::ItemEndKind::completed:
    case conformance::ItemEndKind::failed:
      // It came back (loaded or rejected): the real load says which.
      return std::nullopt;
  }
  return std::nullopt;
}

std::string kind_name(jw_param_kind kind) {
  switch (kind) {
    case JW_PARAM_TENSOR: return "tensor";
    case JW_PARAM_INT: return "int";
    case JW_PARAM_FLOAT: return "float";
    case JW_PARAM_CONSTEXPR: return "constexpr";
    case JW_PARAM_SCALAR: return "scalar";
  }
  return "?";
}

std::string param_text(const ParamDesc& p) {
  std::string t = fmt::format("{}: {}", p.name, kind_name(p.kind));
  if (p.kind == JW_PARAM_TENSOR) {
    std::string dtypes;
    for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
      if ((p.allowed_dtypes & JW_DTYPE_BIT(d)) != 0) {
        if (!dtypes.empty()) dtypes += '|';
        dtypes += dtype_name(static_cast<jw_dtype>(d));
      }
    }
    t += fmt::format("[{}]", dtypes.empty() ? "any" : dtypes);
    if (p.rank >= 0) t += fmt::format(" rank {}", p.rank);
    if (!p.same_dtype_as.empty()) t += " dtype of " + p.same_dtype_as;
  }
  if (p.has_flag(JW_PARAM_OUTPUT)) t += " out";
  if (p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE)) t += " do_not_specialize";
  if (p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT))
    t += " do_not_specialize_on_alignment";
  if (p.has_flag(JW_PARAM_HAS_DEFAULT)) {
    t += " = " + (p.default_value.kind == JW_SCALAR_FLOAT
                      ? fmt::format("{}", p.default_value.value.f)
                      : std::to_string(p.default_value.value.i));
  }
  return t;
}

nlohmann::json schema_json(const Runtime& rt, const std::string& name) {
  const KernelSchema& s = rt.schema(name);
  nlohmann::json j;
  j["name"] = s.name();
  j["summary"] = s.summary();
  j["launch_rule"] = s.launch_rule();
  j["defined_by"] = s.origin();
  j["params"] = nlohmann::json::array();
  for (const auto& p : s.params()) j["params"].push_back(param_text(p));
  const KernelExplanation e = rt.explain(name);
  j["platforms"] = nlohmann::json::object();
  for (const auto& p : e.platforms) {
    nlohmann::json pj;
    pj["implementation"] = p.winner.impl_name;
    pj["origin"] = p.winner.origin;
    pj["precedence"] = p.winner.precedence;
    pj["replaces"] = nlohmann::json::array();
    for (const auto& r : p.replaced)
      pj["replaces"].push_back({{"implementation", r.impl_name},
                                {"origin", r.origin},
                                {"precedence", r.precedence}});
    j["platforms"][p.platform] = pj;
  }
  return j;
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
  Runtime runtime(quiet);
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

int cmd_kernels(const std::vector<std::string>& args) {
  po::options_description options("options");
  PluginOptions plugins;
  bool json = false;
  plugins.add_to(options);
  options.add_options()("json", po::bool_switch(&json), "print as JSON");
  po::variables_map vm;
  int code = kExitOk;
  if (!parse("kernels", "[--json] [--plugin-path DIRS]", options, nullptr, args,
             vm, &code)) {
    return code;
  }
  auto runtime = make_runtime(plugins);
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& name : runtime->kernel_names())
      j.push_back(schema_json(*runtime, name));
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& name : runtime->kernel_names()) {
    const KernelExplanation e = runtime->explain(name);
    std::string platforms;
    for (const auto& p : e.platforms) {
      platforms += fmt::format("{}{}={}", platforms.empty() ? "" : ", ",
                               p.platform, p.winner.impl_name);
    }
    std::cout << fmt::format(
        "{}\n    {}\n", name,
        platforms.empty() ? "(no implementation)" : platforms);
  }
  return kExitOk;
}

int cmd_explain(const std::vector<std::string>& args) {
  po::options_description options("options");
  PluginOptions plugins;
  bool json = false;
  std::string name;
  plugins.add_to(options);
  options.add_options()("json", po::bool_switch(&json), "print as JSON")(
      "kernel", po::value(&name)->required(), "kernel name (positional)");
  po::positional_options_description positional;
  positional.add("kernel", 1);
  po::variables_map vm;
  int code = kExitOk;
  if (!parse("explain", "NAME [--json] [--plugin-path DIRS]", options,
             &positional, args, vm, &code)) {
    return code;
  }
  auto runtime = make_runtime(plugins);
  if (json) {
    std::cout << schema_json(*runtime, name).dump(2) << "\n";
    return kExitOk;
  }
  const KernelSchema& s = runtime->schema(name);
  std::cout << runtime->explain(name).to_text();
  std::cout << fmt::format("  summary: {}\n  launch rule: {}\n  parameters:\n",
                           s.summary(), s.launch_rule());
  for (const auto& p : s.params()) std::cout << "    " << param_text(p) << "\n";
  return kExitOk;
}

}  // namespace jitwarm::cli
