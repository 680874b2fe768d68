// options.hpp — the command line of `jitwarm conformance` (docs/conformance.md
// documents every option and the exit codes).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "trust_options.hpp"

namespace jitwarm::conformance {

// Exit codes: the numbers of every `jitwarm` command (tools/cli.hpp,
// docs/cli.md). Here 3 is also a bad expectations file or an unknown
// platform or kernel, 4 a rejected --plugin or a report file that cannot be
// written.
using cli::ExitCode;
using cli::kExitBadInput;
using cli::kExitEnvironment;
using cli::kExitFailures;
using cli::kExitInternal;
using cli::kExitOk;
using cli::kExitUsage;

struct Plan;

struct Options {
  std::vector<std::string> plugins;  // --plugin: test these .so files
  std::string plugin_path;           // --plugin-path (colon-separated)
  std::string kernel_path;           // --kernel-path (colon-separated)
  std::vector<std::string> platforms;
  std::vector<std::string> kernel_globs;
  std::vector<std::string> case_globs;
  std::vector<std::string> targets;  // compile-only targets, "cuda:sm_90"
  bool compile_only = false;
  int32_t device = 0;
  bool list = false;
  std::vector<std::string> expectation_files;
  std::string expectations_dir;  // empty: the installed directory
  std::string junit_path;        // --junit FILE
  std::string json_path;         // --json-file FILE
  bool json = false;             // --json: the JSON report on stdout, no table
  double timeout_seconds = 60;
  unsigned jobs = 1;
  bool large = false;
  std::string cache_dir;    // --cache-dir: empty, no persistent cache
  cli::TrustOptions trust;  // --trusted-key: entries loaded from that cache
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

// Throws Error (exit 3) for a --kernel filter that selects no kernel of
// the plan or names several by one short name (tools/names.hpp
// check_kernel_filter): a filter never silently selects nothing.
void check_kernel_filters(const Options& options, const Plan& plan);

// Where expectation files are installed (<datadir>/jitwarm/conformance/
// expectations), the default for --expectations-dir.
std::string installed_expectations_dir();

}  // namespace jitwarm::conformance
