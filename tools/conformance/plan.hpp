// plan.hpp — deciding what a run tests: which plugins load, which platform
// runs in which mode (full, or compile-only and why) for which targets,
// and which implementation of which kernel is under test.
//
// Owns plugin loading for the runner (the planner and every worker load
// the same way), and the selection rules of docs/conformance.md. Planning
// may initialize a device driver (platform capabilities, device targets),
// so the parent process runs it in a child (worker_pool.hpp) and keeps only
// the result: the parent never loads a plugin, so it can fork workers that
// own a clean driver each.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "options.hpp"

namespace jitwarm::conformance {

struct KernelUnderTest {
  std::string kernel;  // fully qualified
  std::string impl;    // the winning implementation on the platform
  std::string origin;  // where it came from (plugin path)
  // The names of its conformance cases (case_recipes, decided while
  // planning: the parent never loads the kernel directories whose
  // descriptors hold the cases of kernels from source). Empty: none.
  std::vector<std::string> cases;
};

struct PlatformUnderTest {
  std::string name;
  bool can_launch = false;
  std::string detail;  // what the platform says about itself
  bool compile_only = false;
  std::string compile_only_reason;  // why, e.g. "--compile-only"
  // Full mode: the device's target. Compile-only: the --target values for
  // this platform.
  std::vector<std::string> targets;
  // Non-empty: nothing on this platform can be tested, and why.
  std::string skip_reason;
  std::vector<KernelUnderTest> kernels;
};

struct Plan {
  std::vector<PlatformUnderTest> platforms;
  nlohmann::json plugins = nlohmann::json::array();  // the load records
  // A setup error stops the run with `error_exit_code`.
  std::string error;
  int error_exit_code = kExitOk;
};

// Loads the plugins the options ask for into `runtime`: the --plugin
// libraries first, then the search path, in one search. Returns their load
// records, and throws std::runtime_error when one was rejected or when
// another plugin's implementation wins over one of theirs (the run would
// test that one instead).
std::vector<PluginLoadRecord> load_plugins_for_run(Runtime& runtime,
                                                   const Options& options);

// Loads plugins into a fresh runtime and decides the plan.
Plan make_plan(const Options& options);

nlohmann::json to_json(const Plan& plan);
Plan plan_from_json(const nlohmann::json& json);

}  // namespace jitwarm::conformance
