// conformance.cpp — the run: plan (in a child process), expectations, work
// items, isolated execution, reports and the exit code.
#include "conformance.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>

#include "case_runner.hpp"
#include "cases.hpp"
#include "expectations.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "report.hpp"
#include "worker_pool.hpp"

namespace jitwarm::conformance {

// Cases run in worker processes (core/src/worker_pool.hpp).
using jitwarm::detail::IsolationOptions;
using jitwarm::detail::ItemEnd;
using jitwarm::detail::ItemEndKind;
using jitwarm::detail::ItemOutcome;
using jitwarm::detail::ItemRunner;
using jitwarm::detail::run_in_child;
using jitwarm::detail::run_isolated;
using jitwarm::detail::WorkerSetup;

namespace {

// Planning loads every plugin; a hung driver must not hang the run.
constexpr double kPlanningTimeoutSeconds = 300;

bool case_selected(const Options& options, const std::string& case_name) {
  if (options.case_globs.empty()) return true;
  for (const std::string& glob : options.case_globs) {
    if (fnmatch(glob.c_str(), case_name.c_str(), 0) == 0) return true;
  }
  return false;
}

nlohmann::json options_json(const Options& o) {
  return {{"plugins", o.plugins},
          {"plugin_path", o.plugin_path},
          {"kernel_path", o.kernel_path},
          {"platforms", o.platforms},
          {"kernels", o.kernel_globs},
          {"cases", o.case_globs},
          {"targets", o.targets},
          {"compile_only", o.compile_only},
          {"device", o.device},
          {"expectations", o.expectation_files},
          {"expectations_dir", o.expectations_dir},
          {"timeout_seconds", o.timeout_seconds},
          {"jobs", o.jobs},
          {"large", o.large},
          {"seed", o.seed},
          {"isolated", o.isolate}};
}

// What the run will do: work items for the workers, and results known
// without running anything (skips), each in its place in the report.
struct Schedule {
  std::vector<std::optional<CaseResult>> slots;
  std::vector<WorkItem> items;
  std::vector<std::size_t> item_slot;  // items[i] fills slots[item_slot[i]]
};

CaseResult identity(const PlatformUnderTest& platform,
                    const std::string& target, const KernelUnderTest& kernel,
                    const std::string& case_name, Check check) {
  CaseResult r;
  r.platform = platform.name;
  r.target = target;
  r.impl = kernel.impl;
  r.kernel = kernel.kernel;
  r.case_name = case_name;
  r.check = check;
  return r;
}

Schedule schedule(const Options& options, const Plan& plan,
                  ExpectationSet& expectations) {
  Schedule s;
  const auto known = [&](CaseResult result, Status status,
                         std::string message) {
    result.status = status;
    result.message = std::move(message);
    s.slots.emplace_back(std::move(result));
  };
  const auto work = [&](CaseResult result, const WorkItem& item) {
    // An expected skip is not run at all.
    if (const Expectation* e = expectations.match(result);
        e != nullptr && e->status == Status::skip) {
      result.expected = Status::skip;
      result.expectation_reason = e->reason;
      known(std::move(result), Status::skip, "expected skip: " + e->reason);
      return;
    }
    s.item_slot.push_back(s.slots.size());
    s.items.push_back(item);
    s.slots.emplace_back(std::nullopt);
  };
  for (const PlatformUnderTest& platform : plan.platforms) {
    const std::vector<std::string> targets = platform.targets.empty()
                                                 ? std::vector<std::string>{""}
                                                 : platform.targets;
    for (const std::string& target : targets) {
      for (const KernelUnderTest& kernel : platform.kernels) {
        if (!platform.skip_reason.empty()) {
          known(identity(platform, target, kernel, "*", Check::run),
                Status::skip, platform.skip_reason);
          continue;
        }
        if (kernel.cases.empty()) {
          known(identity(platform, target, kernel, "*", Check::run),
                Status::skip,
                "no conformance cases for this kernel (it is not in the "
                "portable kernel set, and no kernel descriptor gives it "
                "[[case]] tables)");
          continue;
        }
        for (const std::string& case_name : kernel.cases) {
          if (!case_selected(options, case_name)) continue;
          const Check check =
              platform.compile_only ? Check::compile : Check::run;
          work(identity(platform, target, kernel, case_name, check),
               WorkItem{platform.name, target, kernel.impl, kernel.kernel,
                        case_name, check});
          if (platform.compile_only) {
            known(identity(platform, target, kernel, case_name, Check::launch),
                  Status::skip,
                  "launch skipped: compile-only (" +
                      platform.compile_only_reason + ")");
          }
        }
        if (!platform.compile_only &&
            case_selected(options, kOverrideCaseName)) {
          work(identity(platform, target, kernel, kOverrideCaseName,
                        Check::override),
               WorkItem{platform.name, target, kernel.impl, kernel.kernel,
                        kOverrideCaseName, Check::override});
        }
      }
    }
  }
  return s;
}

void load_expectations(const Options& options, const Plan& plan,
                       ExpectationSet& expectations) {
  for (const std::string& file : options.expectation_files) {
    expectations.load_file(file, "");
  }
  const std::string dir = options.expectations_dir.empty()
                              ? installed_expectations_dir()
                              : options.expectations_dir;
  if (!options.expectations_dir.empty() &&
      !std::filesystem::is_directory(options.expectations_dir)) {
    throw ExpectationError("--expectations-dir " + options.expectations_dir +
                           " is not a directory");
  }
  if (dir.empty()) return;
  for (const PlatformUnderTest& platform : plan.platforms) {
    const std::filesystem::path file =
        std::filesystem::path(dir) / (platform.name + ".toml");
    if (std::filesystem::exists(file)) {
      expectations.load_file(file.string(), platform.name);
    }
  }
}

CaseResult result_of(const WorkItem& item, const ItemEnd& end) {
  if (end.kind == ItemEndKind::completed) {
    try {
      return result_from_json(end.result);
    } catch (const std::exception& e) {
      CaseResult r;
      r.status = Status::fail;
      r.message =
          fmt::format("the worker's result could not be read: {}", e.what());
      return r;
    }
  }
  CaseResult r;
  r.platform = item.platform;
  r.target = item.target;
  r.impl = item.impl;
  r.kernel = item.kernel;
  r.case_name = item.case_name;
  r.check = item.check;
  r.seconds = end.seconds;
  r.message = end.detail;
  switch (end.kind) {
    case ItemEndKind::crashed: r.status = Status::crash; break;
    case ItemEndKind::timed_out: r.status = Status::timeout; break;
    default: r.status = Status::fail; break;
  }
  return r;
}

void print_list(std::ostream& out, const Schedule& s) {
  std::size_t item = 0;
  for (std::size_t slot = 0; slot < s.slots.size(); ++slot) {
    if (s.slots[slot]) {
      const CaseResult& r = *s.slots[slot];
      out << fmt::format("{:<32} {}  ({}: {})\n",
                         r.target.empty() ? "-" : r.target, r.id(),
                         to_string(r.status), r.message);
    } else {
      const WorkItem& w = s.items[item++];
      CaseResult r;
      r.platform = w.platform;
      r.kernel = w.kernel;
      r.case_name = w.case_name;
      r.check = w.check;
      out << fmt::format("{:<32} {}\n", w.target, r.id());
    }
  }
  out << fmt::format("{} checks to run, {} known without running\n",
                     s.items.size(), s.slots.size() - s.items.size());
}

int run(const std::vector<std::string>& args) {
  const auto start = std::chrono::steady_clock::now();
  ParsedOptions parsed = parse_options(args, std::cout, std::cerr);
  if (!parsed.options) return parsed.exit_code;
  const Options& options = *parsed.options;

  // Plan in a child: loading plugins may initialize a device driver, and
  // the workers forked later must each own a clean one.
  Plan plan;
  try {
    plan = options.isolate
               ? plan_from_json(run_in_child(
                     [&options] { return to_json(make_plan(options)); },
                     kPlanningTimeoutSeconds))
               : make_plan(options);
  } catch (const std::exception& e) {
    std::cerr << "jitwarm conformance: planning failed: " << e.what() << "\n";
    return kExitEnvironment;
  }
  if (!plan.error.empty()) {
    std::cerr << "jitwarm conformance: " << plan.error << "\n";
    return plan.error_exit_code;
  }
  try {
    check_kernel_filters(options, plan);
  } catch (const Error& e) {
    std::cerr << "jitwarm conformance: " << e.what() << "\n";
    return kExitBadInput;
  }

  ExpectationSet expectations;
  try {
    load_expectations(options, plan, expectations);
  } catch (const ExpectationError& e) {
    std::cerr << "jitwarm conformance: " << e.what() << "\n";
    return kExitBadInput;
  }
  Schedule s = schedule(options, plan, expectations);
  if (options.list) {
    print_list(std::cout, s);
    return kExitOk;
  }
  if (s.slots.empty()) {
    std::cerr << "jitwarm conformance: nothing to test (no kernel or case "
                 "matched the filters)\n";
    return kExitBadInput;
  }

  // With --json, stdout carries the JSON report alone.
  std::ostream& status_out = options.json ? std::cerr : std::cout;
  status_out << fmt::format(
      "jitwarm conformance: {} checks on {} platform(s){}\n", s.items.size(),
      plan.platforms.size(), options.isolate ? "" : " (not isolated)");
  status_out.flush();
  std::size_t done = 0;
  const auto progress = [&](const CaseResult& r) {
    ++done;
    if (options.verbose) {
      status_out << fmt::format("[{}/{}] {:<15} {}\n", done, s.items.size(),
                                to_string(r.status), r.id());
      status_out.flush();
    }
  };
  if (options.isolate) {
    const WorkerSetup setup = [&options, &s]() -> ItemRunner {
      auto runner = std::make_shared<CaseRunner>(options);
      return [runner, &s](std::size_t item) {
        CaseRunner::Outcome outcome = runner->run(s.items[item]);
        return ItemOutcome{to_json(outcome.result), outcome.replace_worker};
      };
    };
    const IsolationOptions isolation{options.jobs, options.timeout_seconds, 120,
                                     "case"};
    run_isolated(s.items.size(), setup, isolation, [&](const ItemEnd& end) {
      CaseResult r = result_of(s.items[end.item], end);
      progress(r);
      s.slots[s.item_slot[end.item]] = std::move(r);
    });
  } else {
    std::optional<CaseRunner> runner;
    try {
      runner.emplace(options);
    } catch (const std::exception& e) {
      std::cerr << "jitwarm conformance: " << e.what() << "\n";
      return kExitEnvironment;
    }
    for (std::size_t i = 0; i < s.items.size(); ++i) {
      CaseResult r = runner->run(s.items[i]).result;
      progress(r);
      s.slots[s.item_slot[i]] = std::move(r);
    }
  }

  RunReport report;
  for (auto& slot : s.slots) {
    CaseResult r = std::move(*slot);
    if (!r.expected) expectations.apply(r);
    report.results.push_back(std::move(r));
  }
  for (const Expectation& e : expectations.entries()) {
    if (e.matches == 0) {
      report.notes.push_back(fmt::format(
          "expectation at {} (kernel '{}', case '{}') matched no result",
          e.source, e.kernel_glob, e.case_glob));
    }
  }
  report.plan = to_json(plan);
  report.options = options_json(options);
  report.exit_code =
      count_results(report.results).unmet == 0 ? kExitOk : kExitFailures;
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (options.json) {
    print_json(std::cout, report);
  } else {
    print_report(std::cout, report, options.verbose);
  }
  try {
    if (!options.junit_path.empty()) write_junit(options.junit_path, report);
    if (!options.json_path.empty()) write_json(options.json_path, report);
  } catch (const std::exception& e) {
    std::cerr << "jitwarm conformance: " << e.what() << "\n";
    return kExitEnvironment;
  }
  return report.exit_code;
}

}  // namespace
}  // namespace jitwarm::conformance

namespace jitwarm::tools {

int run_conformance_command(const std::vector<std::string>& args) {
  try {
    return conformance::run(args);
  } catch (const std::exception& e) {
    std::cerr << "jitwarm conformance: internal error: " << e.what() << "\n";
    return conformance::kExitInternal;
  }
}

}  // namespace jitwarm::tools
