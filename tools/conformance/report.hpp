// report.hpp — the outputs of a run: the terminal table with totals, JUnit
// XML and JSON (formats in docs/conformance.md).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "result.hpp"

namespace jitwarm::conformance {

struct RunReport {
  std::vector<CaseResult> results;
  nlohmann::json plan;             // plan.hpp's JSON: plugins and platforms
  nlohmann::json options;          // what was asked
  std::vector<std::string> notes;  // e.g. expectations that matched nothing
  double seconds = 0;
  int exit_code = 0;
};

struct Totals {
  std::array<std::size_t, 7> by_status{};  // indexed by Status
  std::size_t total = 0;
  std::size_t unmet = 0;  // results that did not meet their expectation
  std::size_t count(Status status) const {
    return by_status[static_cast<std::size_t>(status)];
  }
};
Totals count_results(const std::vector<CaseResult>& results);

// The table (one row per platform, target and kernel), then every result
// that needs attention with its message and worst error, the skip reasons,
// and the totals. `verbose`: every result.
void print_report(std::ostream& out, const RunReport& report, bool verbose);

// Throw std::runtime_error when the file cannot be written.
void write_junit(const std::string& path, const RunReport& report);
void write_json(const std::string& path, const RunReport& report);
// The JSON report on `out` (--json), the same text write_json writes.
void print_json(std::ostream& out, const RunReport& report);

nlohmann::json report_json(const RunReport& report);
std::string junit_xml(const RunReport& report);

}  // namespace jitwarm::conformance
