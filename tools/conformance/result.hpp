// result.hpp — what one conformance check produced, and its JSON form (the
// same form crosses the pipe from a worker process and lands in --json).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare.hpp"

namespace jitwarm::conformance {

// A result's status. The first five come from running; expected_fail and
// unexpected_pass only from applying expectations (expectations.hpp).
enum class Status {
  pass,
  fail,
  skip,
  crash,    // the worker process died during the case
  timeout,  // the case ran past --timeout and its worker was killed
  expected_fail,
  unexpected_pass,
};
std::string_view to_string(Status status);
std::optional<Status> parse_status(std::string_view text);
// Whether a final status meets its expectation (the exit code's rule).
bool meets_expectation(Status status);

// What a result checks.
enum class Check {
  run,       // key, warmup inputs, compile-free first launch, comparison
  compile,   // compile-only: the key compiles, warmup inputs reproduce it
  launch,    // compile-only: the launch that was not made (always a skip)
  override,  // register_kernels routes to the override, release restores
};
std::string_view to_string(Check check);
std::optional<Check> parse_check(std::string_view text);

struct CaseResult {
  // Identity
  std::string platform;
  std::string target;  // e.g. "cuda:sm_90"
  std::string impl;    // the implementation under test
  std::string kernel;  // fully qualified
  std::string case_name;
  Check check = Check::run;
  // Outcome
  Status status = Status::pass;
  std::string message;  // why it failed or was skipped; empty for a pass
  std::string key;      // the compile key's text
  std::vector<BufferComparison> comparisons;
  std::vector<std::string> log;  // warnings the runtime logged meanwhile
  double seconds = 0;
  // Set when an expectation matched: what it expected and why.
  std::optional<Status> expected;
  std::string expectation_reason;
  std::string raw_status;  // the status before expectations, when changed

  // "platform/kernel-short/case [check]" for messages and reports.
  std::string id() const;
  // The comparison with the worst error (the first failing one, else the
  // one with the largest tolerance ratio), or null.
  const BufferComparison* worst_comparison() const;
};

nlohmann::json to_json(const BufferComparison& comparison);
nlohmann::json to_json(const CaseResult& result);
CaseResult result_from_json(const nlohmann::json& json);

// The short name of a fully qualified kernel name.
std::string short_kernel_name(std::string_view kernel);

}  // namespace jitwarm::conformance
