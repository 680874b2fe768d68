// jitwarm kernels | explain: the kernel schemas and who implements them.
#include <fmt/format.h>
#include <jitwarm/plugin/names.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli.hpp"
#include "names.hpp"

namespace jitwarm::cli {
namespace {

std::string kind_name(jw_param_kind kind) {
  return std::string(plugin::param_kind_name(kind).value_or("?"));
}

// The flags as the schema names them (jitwarm.h's jw_param_flag), in bit
// order; HAS_DEFAULT is left out: a default is shown as its value.
std::vector<std::string> flag_names(const ParamDesc& p) {
  static constexpr std::pair<jw_param_flag, const char*> kFlags[] = {
      {JW_PARAM_DO_NOT_SPECIALIZE, "do_not_specialize"},
      {JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT,
       "do_not_specialize_on_alignment"},
      {JW_PARAM_OUTPUT, "output"},
      {JW_PARAM_FLOAT64, "float64"},
      {JW_PARAM_CONTIGUOUS, "contiguous"},
      {JW_PARAM_INNER_CONTIGUOUS, "inner_contiguous"},
      {JW_PARAM_SPECIALIZE_STRIDES, "specialize_strides"},
  };
  std::vector<std::string> names;
  for (const auto& [flag, name] : kFlags) {
    if (p.has_flag(flag)) names.emplace_back(name);
  }
  return names;
}

// The allowed dtypes by name; empty when any dtype is allowed.
std::vector<std::string> dtype_names(const ParamDesc& p) {
  std::vector<std::string> names;
  for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
    if ((p.allowed_dtypes & JW_DTYPE_BIT(d)) != 0) {
      names.emplace_back(dtype_name(static_cast<jw_dtype>(d)));
    }
  }
  return names;
}

nlohmann::json default_json(const ParamDesc& p) {
  if (!p.has_flag(JW_PARAM_HAS_DEFAULT)) return nullptr;
  switch (p.default_value.kind) {
    case JW_SCALAR_INT: return p.default_value.value.i;
    case JW_SCALAR_UINT: return p.default_value.value.u;
    case JW_SCALAR_FLOAT: return p.default_value.value.f;
    case JW_SCALAR_BOOL: return p.default_value.value.i != 0;
    case JW_SCALAR_NONE: break;
  }
  return nullptr;
}

std::string param_text(const ParamDesc& p) {
  std::string t = fmt::format("{}: {}", p.name, kind_name(p.kind));
  if (p.kind == JW_PARAM_TENSOR) {
    const std::vector<std::string> dtypes = dtype_names(p);
    t += fmt::format("[{}]", dtypes.empty()
                                 ? "any"
                                 : fmt::format("{}", fmt::join(dtypes, "|")));
    if (p.rank >= 0) t += fmt::format(" rank {}", p.rank);
    if (!p.same_dtype_as.empty()) t += " dtype of " + p.same_dtype_as;
  }
  for (const std::string& flag : flag_names(p)) t += " " + flag;
  if (const nlohmann::json d = default_json(p); !d.is_null()) {
    t += " = " + d.dump();
  }
  return t;
}

// One parameter as data: every field a tool needs, none inside a string.
nlohmann::json param_json(const ParamDesc& p) {
  nlohmann::json j;
  j["name"] = p.name;
  j["kind"] = kind_name(p.kind);
  if (p.kind == JW_PARAM_TENSOR) {
    j["dtypes"] = dtype_names(p);  // [] = any dtype
    j["rank"] = p.rank >= 0 ? nlohmann::json(p.rank) : nlohmann::json(nullptr);
    j["same_dtype_as"] = p.same_dtype_as.empty()
                             ? nlohmann::json(nullptr)
                             : nlohmann::json(p.same_dtype_as);
  }
  j["flags"] = flag_names(p);
  j["default"] = default_json(p);
  return j;
}

nlohmann::json schema_json(const Runtime& rt, const std::string& name) {
  const KernelSchema& s = rt.schema(name);
  nlohmann::json j;
  j["name"] = s.name();
  j["short_name"] = s.short_name();
  j["summary"] = s.summary();
  j["launch_rule"] = s.launch_rule();
  j["defined_by"] = s.origin();
  j["params"] = nlohmann::json::array();
  for (const auto& p : s.params()) j["params"].push_back(param_json(p));
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

int cmd_kernels(const std::vector<std::string>& args) {
  po::options_description options("options");
  PluginOptions plugins;
  bool json = false;
  plugins.add_to(options);
  options.add_options()("json", po::bool_switch(&json), "print as JSON");
  po::variables_map vm;
  int code = kExitOk;
  if (!parse(CommandLine{"kernels", "[--json] [--plugin-path DIRS]", "", {}},
             options, args, vm, &code)) {
    return code;
  }
  auto runtime = make_runtime(plugins, without_caches());
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
  std::string typed;
  plugins.add_to(options);
  options.add_options()("json", po::bool_switch(&json), "print as JSON");
  const CommandLine command{
      "explain",
      "KERNEL [--json] [--plugin-path DIRS]",
      "A short name (the part after the last dot) names the kernel that has\n"
      "it; when several kernels share it, give the full name.",
      {{"KERNEL", "its full name, or its short name (rms_norm)", &typed}}};
  po::variables_map vm;
  int code = kExitOk;
  if (!parse(command, options, args, vm, &code)) return code;
  auto runtime = make_runtime(plugins, without_caches());
  const std::string name = resolve_kernel_name(typed, runtime->kernel_names());
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
