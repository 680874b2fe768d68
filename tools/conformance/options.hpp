// options.hpp — the command line of `jitwarm conformance` (docs/conformance.md
// documents every option and the exit codes).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace jitwarm::conformance {

// Exit codes, the same numbers as every `jitwarm` command (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,           // every result met its expectation
  kExitFailures = 1,     // at least one did not
  kExitUsage = 2,        // bad command line
  kExitBadInput = 3,     // bad expectations file, unknown platform, ...
  kExitEnvironment = 4,  // a --plugin was rejected, I/O errors
  kExitInternal = 70,    // a bug in the runner
};

struct Options {
  std::vector<std::string> plugins;  // --plugin: test these .so files
  std::string plugin_path;           // --plugin-path (colon-separated)
  std::vector<std::string> platforms;
  std::vector<std::string> kernel_globs;
  std::vector<std::string> case_globs;
  std::vector<std::string> targets;  // compile-only targets, "cuda:sm_90"
  bool compile_only = false;
  int32_t device = 0;
  bool list = false;
  std::vector<std::string> expectation_files;
  std::string expectations_dir;  // empty: the installed directory
  std::string junit_path;
  std::string json_path;
  double timeout_seconds = 60;
  unsigned jobs = 1;
  bool large = false;
  uint64_t seed = 0;
  bool isolate = true;
  bool verbose = false;
};

struct ParsedOptions {
  std::optional<Options> options;  // empty: stop with exit_code
  int exit_code = kExitOk;
};

// Parses the arguments after "conformance". --help prints to `out` (exit
// 0); errors print to `err` (exit 2).
ParsedOptions parse_options(const std::vector<std::string>& args,
                            std::ostream& out, std::ostream& err);

// Where expectation files are installed (<datadir>/jitwarm/conformance/
// expectations), the default for --expectations-dir.
std::string installed_expectations_dir();

}  // namespace jitwarm::conformance
