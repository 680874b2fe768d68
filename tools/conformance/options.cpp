// options.cpp — parsing the conformance command line with
// Boost.Program_options (see options.hpp).
#include "options.hpp"

#include <boost/program_options.hpp>

#include <iostream>

#include "cases.hpp"

#ifndef JITWARM_CONFORMANCE_EXPECTATIONS_DIR
#define JITWARM_CONFORMANCE_EXPECTATIONS_DIR ""
#endif

namespace jitwarm::conformance {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage = R"(usage: jitwarm conformance [options]

Runs every kernel of every plugin under test against the CPU reference on
generated inputs and checks what the framework promises: the same results
(exact for integers and copies, dtype-aware tolerances for floats), warmup
inputs that reproduce their key, no compile on the first launch after
warmup, and register_kernels overrides that route and restore. Each case
runs in a worker process, so a crash or a hang is reported and the run
goes on.

What is tested: with --plugin, every kernel that plugin implements (the
CPU reference is loaded from the plugin search path for the schemas);
without, every platform that has implementations, the CPU reference
itself included. A platform that cannot launch is tested compile-only
(with --target).

Exit codes: 0 every result met its expectation, 1 some did not, 2 bad
command line, 3 bad input (expectations file, unknown platform), 4 a
plugin was rejected or a file could not be written, 70 internal error.

options)";

}  // namespace

std::string installed_expectations_dir() {
  return JITWARM_CONFORMANCE_EXPECTATIONS_DIR;
}

ParsedOptions parse_options(const std::vector<std::string>& args,
                            std::ostream& out, std::ostream& err) {
  Options options;
  options.seed = kDefaultSeed;
  bool help = false;
  bool no_isolation = false;
  po::options_description description(kUsage);
  // clang-format off
  description.add_options()
      ("help,h", po::bool_switch(&help), "show this help")
      ("plugin", po::value(&options.plugins)->composing(),
       "test this plugin .so (repeatable); the reference comes from the "
       "search path")
      ("plugin-path", po::value(&options.plugin_path),
       "colon-separated plugin directories (default: JITWARM_PLUGIN_PATH, "
       "then the installed plugin directory)")
      ("platform", po::value(&options.platforms)->composing(),
       "test only this platform (repeatable)")
      ("kernel", po::value(&options.kernel_globs)->composing(),
       "test only kernels matching this glob, full or short name "
       "(repeatable)")
      ("case", po::value(&options.case_globs)->composing(),
       "run only cases matching this glob (repeatable)")
      ("compile-only", po::bool_switch(&options.compile_only),
       "compile every case's key, launch nothing (automatic for a platform "
       "that cannot launch)")
      ("target", po::value(&options.targets)->composing(),
       "compile-only target, e.g. cuda:sm_90 or hip:gfx942 (repeatable)")
      ("device", po::value(&options.device),
       "device index to launch on (default 0)")
      ("list", po::bool_switch(&options.list),
       "print the cases that would run, run nothing")
      ("expectations", po::value(&options.expectation_files)->composing(),
       "an expectations file (repeatable); see docs/conformance.md")
      ("expectations-dir", po::value(&options.expectations_dir),
       "read <dir>/<platform>.toml for each platform under test (default: "
       "the installed expectations directory)")
      ("junit", po::value(&options.junit_path), "write JUnit XML here")
      ("json", po::value(&options.json_path), "write the JSON report here")
      ("timeout", po::value(&options.timeout_seconds),
       "seconds one case may run before its worker is killed (default 60)")
      ("jobs,j", po::value(&options.jobs),
       "worker processes running cases at once (default 1)")
      ("large", po::bool_switch(&options.large),
       "add the large cases (millions of elements; for GPU runs)")
      ("seed", po::value(&options.seed), "input seed (default 20240607)")
      ("no-isolation", po::bool_switch(&no_isolation),
       "run cases in this process (for debuggers; a crash ends the run)")
      ("verbose,v", po::bool_switch(&options.verbose),
       "print every result, not only the ones that need attention");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(description).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "jitwarm conformance: " << e.what()
        << "\n(jitwarm conformance --help lists the options)\n";
    return {std::nullopt, kExitUsage};
  }
  if (help) {
    out << description << "\n";
    return {std::nullopt, kExitOk};
  }
  const auto usage_error = [&](const std::string& message) {
    err << "jitwarm conformance: " << message << "\n";
    return ParsedOptions{std::nullopt, kExitUsage};
  };
  if (options.timeout_seconds <= 0) {
    return usage_error("--timeout must be positive");
  }
  if (options.jobs == 0) return usage_error("--jobs must be at least 1");
  if (options.device < 0) return usage_error("--device must be >= 0");
  for (const std::string& target : options.targets) {
    if (target.find(':') == std::string::npos) {
      return usage_error("--target '" + target +
                         "' needs the platform: PLATFORM:ARCH, e.g. "
                         "cuda:sm_90");
    }
  }
  options.isolate = !no_isolation;
  return {std::move(options), kExitOk};
}

}  // namespace jitwarm::conformance
