#include "cli.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

namespace jitwarm::cli {

void PluginOptions::add_to(po::options_description& d) {
  d.add_options()("plugin-path", po::value(&plugin_path),
                  "colon-separated plugin directories or files (default: "
                  "$JITWARM_PLUGIN_PATH, then the "
                  "installed plugin directory)")(
      "plugin", po::value(&extra_plugins)->composing(),
      "load this plugin file too (repeatable)")(
      "strict", po::bool_switch(&strict), "a rejected plugin is an error");
}

PluginLoadOptions PluginOptions::to_load_options() const {
  PluginLoadOptions o;
  o.strict = strict;
  if (!plugin_path.empty()) {
    std::string_view rest(plugin_path);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (colon != 0) o.search_path.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  } else {
    o.search_path = default_plugin_search_path();
  }
  for (const auto& p : extra_plugins) o.search_path.push_back(p);
  return o;
}

bool parse(const std::string& command, const std::string& usage,
           const po::options_description& options,
           const po::positional_options_description* positional,
           const std::vector<std::string>& args, po::variables_map& vm,
           int* exit_code) {
  po::options_description all(options);
  all.add_options()("help,h", "show this help")("version", "show the version");
  try {
    po::command_line_parser parser(args);
    parser.options(all);
    if (positional != nullptr) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help") != 0) {
      std::cout << "usage: jitwarm " << command << " " << usage << "\n\n"
                << all;
      *exit_code = kExitOk;
      return false;
    }
    if (vm.count("version") != 0) {
      std::cout << "jitwarm " << JITWARM_VERSION << " (C ABI "
                << JITWARM_ABI_VERSION << ")\n";
      *exit_code = kExitOk;
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "jitwarm " << command << ": " << e.what() << "\n"
              << "usage: jitwarm " << command << " " << usage << "\n"
              << "try 'jitwarm " << command << " --help'\n";
    *exit_code = kExitUsage;
    return false;
  }
  return true;
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
