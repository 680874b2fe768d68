#include "cli.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>

#include "names.hpp"

namespace jitwarm::cli {
namespace {

// The long option names of `options`, "--" included, for suggestions.
std::vector<std::string> long_option_names(
    const po::options_description& options) {
  std::vector<std::string> names;
  for (const auto& option : options.options()) {
    if (!option->long_name().empty())
      names.push_back("--" + option->long_name());
  }
  return names;
}

void print_help(const CommandLine& spec, const po::options_description& options,
                std::ostream& out) {
  out << "usage: jitwarm " << spec.command << " " << spec.usage << "\n";
  if (!spec.about.empty()) out << "\n" << spec.about << "\n";
  if (!spec.arguments.empty()) {
    out << "\narguments:\n";
    for (const Argument& a : spec.arguments) {
      out << fmt::format("  {:<21} {}{}\n", a.name, a.help,
                         a.required ? "" : " (optional)");
    }
  }
  out << "\n" << options;
}

}  // namespace

std::string version_text() {
  return fmt::format("jitwarm {} (C ABI {})", JITWARM_VERSION,
                     JITWARM_ABI_VERSION);
}

int report_error(const std::string& command, const CommandError& e,
                 std::ostream& err) {
  err << "jitwarm " << command << ": " << e.what() << "\n";
  if (e.exit_code() == kExitUsage) {
    err << "try 'jitwarm " << command << " --help'\n";
  }
  return e.exit_code();
}

bool parse(const CommandLine& spec, const po::options_description& options,
           const std::vector<std::string>& args, po::variables_map& vm,
           int* exit_code, std::ostream& out, std::ostream& err) {
  po::options_description all(options);
  all.add_options()("help,h", "show this help")("version", "show the version");
  const auto usage_failure = [&](const std::string& message) {
    err << "jitwarm " << spec.command << ": " << message << "\n"
        << "usage: jitwarm " << spec.command << " " << spec.usage << "\n"
        << "try 'jitwarm " << spec.command << " --help'\n";
    *exit_code = kExitUsage;
    return false;
  };
  std::vector<std::string> positionals;
  try {
    // No positional description: every positional token (and every token
    // after "--") comes back here, to be assigned or refused below.
    const po::parsed_options parsed =
        po::command_line_parser(args).options(all).run();
    positionals =
        po::collect_unrecognized(parsed.options, po::include_positional);
    po::store(parsed, vm);
  } catch (const po::unknown_option& e) {
    const std::string name = e.get_option_name();
    return usage_failure(fmt::format(
        "unknown option '{}'{}", name,
        name.starts_with("--")
            ? did_you_mean(closest_spellings(name, long_option_names(all)))
            : std::string()));
  } catch (const po::error& e) {
    return usage_failure(e.what());
  }
  if (vm.count("help") != 0) {
    print_help(spec, all, out);
    *exit_code = kExitOk;
    return false;
  }
  if (vm.count("version") != 0) {
    out << version_text() << "\n";
    *exit_code = kExitOk;
    return false;
  }
  if (positionals.size() > spec.arguments.size()) {
    std::string extra;
    for (std::size_t i = spec.arguments.size(); i < positionals.size(); ++i) {
      extra += fmt::format("{}'{}'", extra.empty() ? "" : " ", positionals[i]);
    }
    return usage_failure(fmt::format(
        "unexpected argument{} {}{}",
        positionals.size() - spec.arguments.size() > 1 ? "s" : "", extra,
        spec.arguments.empty()
            ? fmt::format(" ('jitwarm {}' takes no arguments, only options)",
                          spec.command)
            : std::string()));
  }
  for (std::size_t i = 0; i < spec.arguments.size(); ++i) {
    const Argument& argument = spec.arguments[i];
    if (i < positionals.size()) {
      *argument.value = positionals[i];
    } else if (argument.required) {
      return usage_failure(
          fmt::format("missing {} ({})", argument.name, argument.help));
    }
  }
  try {
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_failure(e.what());
  }
  return true;
}

bool parse(const std::string& command, const std::string& usage,
           const po::options_description& options, std::nullptr_t,
           const std::vector<std::string>& args, po::variables_map& vm,
           int* exit_code) {
  return parse(CommandLine{command, usage, "", {}}, options, args, vm,
               exit_code);
}

void validate(boost::any& v, const std::vector<std::string>& values, Count*,
              int) {
  po::validators::check_first_occurrence(v);
  const std::string& text = po::validators::get_single_string(values);
  unsigned value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > Count::kMaxCount) {
    po::error_with_option_name e(fmt::format(
        "the option '%canonical_option%' takes a whole number from 1 to {}, "
        "not '{}'",
        Count::kMaxCount, text));
    throw e;
  }
  v = Count{value};
}

int exit_code_for(const Error& e) {
  switch (e.status()) {
    case JW_ERROR_INVALID_ARGUMENT:
    case JW_ERROR_NOT_FOUND:
    case JW_ERROR_ALREADY_EXISTS: return kExitBadInput;
    case JW_ERROR_NO_DEVICE:
    case JW_ERROR_UNSUPPORTED:
    case JW_ERROR_IO: return kExitEnvironment;
    case JW_ERROR_INTERNAL: return kExitInternal;
    default: return kExitFailures;
  }
}

void PluginOptions::add_to(po::options_description& d) {
  d.add_options()("plugin-path", po::value(&plugin_path),
                  "colon-separated plugin directories or files (default: "
                  "$JITWARM_PLUGIN_PATH, then the "
                  "installed plugin directory)")(
      "plugin", po::value(&extra_plugins)->composing(),
      "load this plugin file too (repeatable)")(
      "kernel-path", po::value(&kernel_path),
      "colon-separated kernel directories (kernels from source; default: "
      "$JITWARM_KERNEL_PATH, then the installed kernel directory)")(
      "strict", po::bool_switch(&strict), "a rejected plugin is an error")(
      "no-probe", po::bool_switch(&no_probe),
      "load plugins in this process without first loading each in a child "
      "process (then a plugin that crashes, exits or hangs in its own code "
      "takes the command with it)")(
      "probe-timeout",
      po::value(&probe_timeout_seconds)
          ->default_value(probe_timeout_seconds)
          ->notifier([](double seconds) {
            if (!(seconds > 0 && seconds <= 3600)) {
              throw po::error(
                  "--probe-timeout takes seconds, more than 0 and at most "
                  "3600");
            }
          }),
      "how long a plugin may take to load in its probe process before it "
      "is rejected as hung (seconds)");
}

PluginLoadOptions PluginOptions::to_load_options() const {
  PluginLoadOptions o;
  o.strict = strict;
  // A plugin that crashes in its own code must not take the command down:
  // each candidate loads in a child process first (core/src/plugin_probe).
  o.isolate = !no_probe;
  o.probe_timeout_seconds = probe_timeout_seconds;
  if (!plugin_path.empty()) {
    o.search_path = split_path_list(plugin_path);
  } else {
    o.search_path = default_plugin_search_path();
  }
  for (const auto& p : extra_plugins) o.search_path.push_back(p);
  o.kernel_path = split_path_list(kernel_path);
  return o;
}

RuntimeOptions without_caches(RuntimeOptions options) {
  options.no_cache_dir = true;
  options.no_remote_cache = true;
  return options;
}

std::unique_ptr<Runtime> make_runtime(const PluginOptions& plugins,
                                      RuntimeOptions options,
                                      PluginLoadReport* report) {
  auto runtime = std::make_unique<Runtime>(std::move(options));
  PluginLoadReport r = runtime->load_plugins(plugins.to_load_options());
  if (report != nullptr) *report = std::move(r);
  return runtime;
}

bool stdout_is_terminal() {
  return isatty(STDOUT_FILENO) != 0;
}
bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) != 0;
}

}  // namespace jitwarm::cli
