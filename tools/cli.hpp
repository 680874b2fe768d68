// Shared pieces of the `jitwarm` command-line tool: the one
// command-line parser every verb uses (the conformance runner included),
// plugin loading options, output helpers.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <boost/program_options.hpp>

#include <cstddef>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "exit_codes.hpp"

namespace jitwarm::cli {

// An error with the exit code it ends the command with. Usage errors
// (kExitUsage) are printed with a pointer to the command's --help.
class CommandError : public std::runtime_error {
 public:
  CommandError(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};
inline CommandError usage_error(const std::string& message) {
  return CommandError(kExitUsage, message);
}

namespace po = boost::program_options;

// A positional argument, shown as NAME in the usage and the help (never as
// the option that stores it).
struct Argument {
  std::string name;  // "KERNEL"
  std::string help;  // one line for --help
  std::string* value = nullptr;
  bool required = true;
};

// What --help prints about a command besides its options.
struct CommandLine {
  std::string command;  // "warmup", the word after "jitwarm"
  std::string usage;    // what follows "usage: jitwarm <command> "
  std::string about;    // paragraphs after the usage line; may be empty
  std::vector<Argument> arguments;
};

// Parses a command's arguments with `options` plus --help and --version.
// Positional tokens, those after "--" included, fill `spec.arguments` in
// order; any other positional is a usage error, so nothing the user typed
// is silently dropped. Unknown options and commands get the closest valid
// spelling suggested. Returns false (after printing) for --help,
// --version or an error, with the exit code in *exit_code.
bool parse(const CommandLine& spec, const po::options_description& options,
           const std::vector<std::string>& args, po::variables_map& vm,
           int* exit_code, std::ostream& out = std::cout,
           std::ostream& err = std::cerr);
// The same for a command that takes no positional argument.
bool parse(const std::string& command, const std::string& usage,
           const po::options_description& options, std::nullptr_t,
           const std::vector<std::string>& args, po::variables_map& vm,
           int* exit_code);

// "jitwarm 0.1.0 (C ABI 1)".
std::string version_text();

// Prints "jitwarm <command>: <message>" (and for usage errors where to
// find the help) and returns the exit code.
int report_error(const std::string& command, const CommandError& e,
                 std::ostream& err = std::cerr);

// Maps a jitwarm::Error to an exit code.
int exit_code_for(const Error& e);

// A whole number from 1 to kMaxCount, for --jobs: Boost would read "-1"
// as 4294967295 into an unsigned.
struct Count {
  static constexpr unsigned kMaxCount = 1024;
  unsigned value = 1;
};
// Boost.Program_options' hook for reading a Count.
void validate(boost::any& v, const std::vector<std::string>& values, Count*,
              int);

// --plugin-path, --plugin, --strict for every command that loads plugins.
struct PluginOptions {
  std::string plugin_path;  // colon-separated; empty = default
  std::string kernel_path;  // colon-separated; empty = default
  std::vector<std::string> extra_plugins;
  bool strict = false;
  // Load plugins in this process without probing each in a child first.
  bool no_probe = false;
  double probe_timeout_seconds = PluginLoadOptions{}.probe_timeout_seconds;
  void add_to(po::options_description& d);
  PluginLoadOptions to_load_options() const;
};

// Options for a runtime that compiles nothing (plugins, kernels, explain):
// no cache tier at all, so such a command neither makes the per-user cache
// directory nor reaches a remote server.
RuntimeOptions without_caches(RuntimeOptions options = {});

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
// The actions of `jitwarm cache`, in the order help lists them.
const std::vector<std::string>& cache_actions();
int cmd_tune(const std::vector<std::string>& args);

}  // namespace jitwarm::cli
