// Shared pieces of the `jitwarm` command-line tool: exit codes, option
// parsing helpers, plugin loading options, output helpers.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <boost/program_options.hpp>

#include <memory>
#include <string>
#include <vector>

namespace jitwarm::cli {

// Exit codes scripts can rely on (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,           // the command did what was asked
  kExitFailures = 1,     // it ran, and found failures (failed keys, corrupt
                         // entries, rejected plugins under --strict)
  kExitUsage = 2,        // bad command line
  kExitBadInput = 3,     // unreadable or malformed input, unknown kernel
  kExitEnvironment = 4,  // no device / no target for the platform, I/O
  kExitInternal = 70,    // a bug
};

namespace po = boost::program_options;

// --plugin-path, --plugin, --strict, --quiet for every command that loads
// plugins.
struct PluginOptions {
  std::string plugin_path;  // colon-separated; empty = default
  std::vector<std::string> extra_plugins;
  bool strict = false;
  void add_to(po::options_description& d);
  PluginLoadOptions to_load_options() const;
};

// Parses args for a subcommand; returns false (after printing) for --help
// or an error, with the exit code in *exit_code.
bool parse(const std::string& command, const std::string& usage,
           const po::options_description& options,
           const po::positional_options_description* positional,
           const std::vector<std::string>& args, po::variables_map& vm,
           int* exit_code);

// Maps a jitwarm::Error to an exit code.
int exit_code_for(const Error& e);

// A runtime with the plugins loaded; logs to stderr.
std::unique_ptr<Runtime> make_runtime(const PluginOptions& plugins,
                                      RuntimeOptions options = {},
                                      PluginLoadReport* report = nullptr);

bool stdout_is_terminal();
bool stderr_is_terminal();

int cmd_plugins(const std::vector<std::string>& args);
int cmd_kernels(const std::vector<std::string>& args);
int cmd_explain(const std::vector<std::string>& args);
int cmd_warmup(const std::vector<std::string>& args);
int cmd_cache(const std::vector<std::string>& args);

}  // namespace jitwarm::cli
