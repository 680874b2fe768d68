// case_runner.hpp — what a worker does with one work item: run a case on
// the platform under test and on the CPU reference and compare, compile a
// case's key (compile-only), or check override routing.
//
// The oracle is the reference code linked into the runner
// (reference_cpu::run_kernel on host memory), not whatever the registry
// holds for "cpu": a plugin under test that registers on "cpu" cannot
// change the answers it is judged by.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cases.hpp"
#include "options.hpp"
#include "result.hpp"

namespace jitwarm::conformance {

struct WorkItem {
  std::string platform;
  std::string target;  // compile-only: the target to compile for
  std::string impl;    // the implementation under test
  std::string kernel;
  std::string case_name;
  Check check = Check::run;
};

// The impl name of the host function the override check registers, and
// the case name of that check (it runs on the kernel's first case).
inline constexpr const char* kOverrideImplName = "conformance-override";
inline constexpr const char* kOverrideCaseName = "override-routing";

class CaseRunner {
 public:
  // Creates a runtime and loads the plugins as the plan did. Must run in
  // the process that will use the device (a worker).
  explicit CaseRunner(const Options& options);
  ~CaseRunner();

  struct Outcome {
    CaseResult result;
    bool replace_worker = false;  // a device error: start a fresh process
  };
  Outcome run(const WorkItem& item);

 private:
  const CaseRecipe& recipe(const std::string& kernel,
                           const std::string& case_name);
  void run_launch(const WorkItem& item, const device_args::Case& the_case,
                  CaseResult& result);
  void run_compile(const WorkItem& item, const device_args::Case& the_case,
                   CaseResult& result);
  void run_override(const WorkItem& item, const device_args::Case& the_case,
                    CaseResult& result);

  const Options& options_;
  std::vector<std::string> log_;  // the runtime's warnings, per item
  std::unique_ptr<Runtime> runtime_;
  std::map<std::string, std::vector<CaseRecipe>> recipes_;
};

}  // namespace jitwarm::conformance
