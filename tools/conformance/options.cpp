// options.cpp — the conformance command line, parsed by the parser every
// `jitwarm` verb uses (tools/cli.hpp; see options.hpp).
#include "options.hpp"

#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <iostream>

#include "cases.hpp"
#include "cli.hpp"
#include "names.hpp"
#include "plan.hpp"

#ifndef JITWARM_CONFORMANCE_EXPECTATIONS_DIR
#define JITWARM_CONFORMANCE_EXPECTATIONS_DIR ""
#endif

namespace jitwarm::conformance {
namespace po = cli::po;

namespace {

constexpr const char* kAbout =
    R"(Runs every kernel of every plugin under test against the CPU reference on
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

Output: the table on stdout; --json prints the JSON report on stdout
instead; --json-file and --junit write reports to files.

Exit codes: 0 every result met its expectation, 1 some did not, 2 bad
command line, 3 bad input (expectations file, unknown platform or kernel),
4 a plugin was rejected or a file could not be written, 70 internal error.)";

}  // namespace

std::string installed_expectations_dir() {
  // Where tools/conformance/meson.build installs them, in the data
  // directory of the installation that is loaded.
  return installed_data_directory() + "/conformance/expectations";
}

ParsedOptions parse_options(const std::vector<std::string>& args,
                            std::ostream& out, std::ostream& err) {
  Options options;
  options.seed = device_args::kDefaultSeed;
  bool no_isolation = false;
  cli::Count jobs;
  po::options_description description("options");
  // clang-format off
  description.add_options()
      ("plugin", po::value(&options.plugins)->composing(),
       "test this plugin .so (repeatable); the reference comes from the "
       "search path")
      ("plugin-path", po::value(&options.plugin_path),
       "colon-separated plugin directories (default: JITWARM_PLUGIN_PATH, "
              "then the installed plugin directory)")
      ("kernel-path", po::value(&options.kernel_path),
       "colon-separated kernel directories: kernels from source, tested with "
       "the [[case]] tables of their descriptors (default: "
       "JITWARM_KERNEL_PATH, then the installed kernel directory)")
      ("platform", po::value(&options.platforms)->composing(),
       "test only this platform (repeatable)")
      ("kernel", po::value(&options.kernel_globs)->composing(),
       "test only this kernel: a full or short name, or a glob over either "
       "(repeatable)")
      ("case", po::value(&options.case_globs)->composing(),
       "run only cases matching this glob (repeatable)")
      ("compile-only", po::bool_switch(&options.compile_only),
       "compile every case's key, launch nothing (automatic for a platform "
       "that cannot launch)")
      ("target", po::value(&options.targets)->composing(),
       "compile-only target, e.g. cuda:sm_90, hip:gfx942 or the shorthand "
       "sm_90 / gfx942 (repeatable)")
      ("device", po::value(&options.device),
       "device index to launch on (default 0)")
      ("list", po::bool_switch(&options.list),
       "print the cases that would run, run nothing")
      ("expectations", po::value(&options.expectation_files)->composing(),
       "an expectations file (repeatable); see docs/conformance.md")
      ("expectations-dir", po::value(&options.expectations_dir),
       "read <dir>/<platform>.toml for each platform under test (default: "
       "the installed expectations directory)")
      ("json", po::bool_switch(&options.json),
       "print the JSON report on stdout instead of the table")
      ("json-file", po::value(&options.json_path),
       "write the JSON report to this file")
      ("junit", po::value(&options.junit_path),
       "write the JUnit XML report to this file")
      ("timeout", po::value(&options.timeout_seconds),
       "seconds one case may run before its worker is killed (default 60)")
      ("jobs,j", po::value(&jobs),
       "worker processes running cases at once (1 to 1024; default 1)")
      ("cache-dir", po::value(&options.cache_dir),
       "use this persistent cache directory (default: none, every key "
       "compiles): its binaries, and its tuning results (jitwarm tune "
       "--cache-dir), so tunable kernels run the winners stored for the "
       "device's kind, as a tuned server does")
      ("large", po::bool_switch(&options.large),
       "add the large cases (millions of elements; for GPU runs)")
      ("seed", po::value(&options.seed), "input seed (default 20240607)")
      ("no-isolation", po::bool_switch(&no_isolation),
       "run cases in this process (for debuggers; a crash ends the run)")
      ("verbose,v", po::bool_switch(&options.verbose),
       "print every result, not only the ones that need attention");
  // clang-format on
  options.trust.add_to(description, cli::TrustOptions::trust);
  // --json took a file before it became a flag: say where the file goes
  // now rather than only that the file name is unexpected.
  for (std::size_t i = 0; i + 1 < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--json" && !args[i + 1].starts_with("-")) {
      return {std::nullopt,
              cli::report_error(
                  "conformance",
                  cli::usage_error("--json prints the report on stdout and "
                                   "takes no file; write one with "
                                   "--json-file " +
                                   args[i + 1]),
                  err)};
    }
  }
  po::variables_map vm;
  int exit_code = kExitOk;
  if (!cli::parse(cli::CommandLine{"conformance", "[options]", kAbout, {}},
                  description, args, vm, &exit_code, out, err)) {
    return {std::nullopt, exit_code};
  }
  const auto usage_error = [&](const std::string& message) {
    return ParsedOptions{
        std::nullopt,
        cli::report_error("conformance", cli::usage_error(message), err)};
  };
  if (options.timeout_seconds <= 0) {
    return usage_error("--timeout must be positive");
  }
  if (options.device < 0) return usage_error("--device must be >= 0");
  if (options.json && options.list) {
    return usage_error("--list prints text; --json is for the report of a run");
  }
  options.jobs = jobs.value;
  try {
    for (std::string& target : options.targets) {
      target = cli::expand_target(target);
    }
  } catch (const cli::CommandError& e) {
    return usage_error(std::string("--target: ") + e.what());
  }
  options.isolate = !no_isolation;
  return {std::move(options), kExitOk};
}

void check_kernel_filters(const Options& options, const Plan& plan) {
  std::vector<std::string> kernels;
  for (const PlatformUnderTest& platform : plan.platforms) {
    for (const KernelUnderTest& kernel : platform.kernels) {
      if (std::find(kernels.begin(), kernels.end(), kernel.kernel) ==
          kernels.end()) {
        kernels.push_back(kernel.kernel);
      }
    }
  }
  for (const std::string& filter : options.kernel_globs) {
    try {
      cli::check_kernel_filter(filter, kernels);
    } catch (const Error& e) {
      throw Error(e.status(), std::string("--kernel: ") + e.what());
    }
  }
}

}  // namespace jitwarm::conformance
