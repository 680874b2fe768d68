// report.cpp — the terminal table, JUnit XML and JSON (see report.hpp).
#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>
#include <tuple>

namespace jitwarm::conformance {
namespace {

constexpr Status kColumns[] = {Status::pass,
                               Status::fail,
                               Status::skip,
                               Status::expected_fail,
                               Status::unexpected_pass,
                               Status::crash,
                               Status::timeout};

std::string_view label(Status status) {
  switch (status) {
    case Status::pass: return "pass";
    case Status::fail: return "FAIL";
    case Status::skip: return "skip";
    case Status::crash: return "CRASH";
    case Status::timeout: return "TIMEOUT";
    case Status::expected_fail: return "xfail";
    case Status::unexpected_pass: return "XPASS";
  }
  return "?";
}

std::string_view column_title(Status status) {
  switch (status) {
    case Status::expected_fail: return "xfail";
    case Status::unexpected_pass: return "xpass";
    default: return to_string(status);
  }
}

// Rows of the table, in first-seen order.
struct Row {
  std::string platform, target, kernel;
  Totals totals;
  double seconds = 0;
};

std::vector<Row> rows_of(const std::vector<CaseResult>& results) {
  std::vector<Row> rows;
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t>
      index;
  for (const CaseResult& r : results) {
    const auto key = std::make_tuple(r.platform, r.target, r.kernel);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, rows.size()).first;
      rows.push_back(Row{r.platform, r.target, r.kernel, {}, 0});
    }
    Row& row = rows[it->second];
    ++row.totals.by_status[static_cast<std::size_t>(r.status)];
    ++row.totals.total;
    row.seconds += r.seconds;
  }
  return rows;
}

std::string worst_error_text(const CaseResult& result) {
  const BufferComparison* comparison = result.worst_comparison();
  if (comparison == nullptr || !comparison->worst) return {};
  const ElementReport& worst = *comparison->worst;
  return fmt::format(
      "worst error: '{}'{} expected {}, got {} (abs {:.3g}, rel {:.3g}{}; "
      "rule: {})",
      comparison->buffer, worst.position, worst.expected, worst.actual,
      worst.abs_error, worst.rel_error,
      worst.ulp_error != 0 ? fmt::format(", {} ulp", worst.ulp_error)
                           : std::string(),
      comparison->rule);
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' &&
            c != '\r') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string details_of(const CaseResult& r) {
  std::string text;
  if (!r.message.empty()) text += r.message + "\n";
  if (const std::string worst = worst_error_text(r); !worst.empty()) {
    text += worst + "\n";
  }
  if (!r.key.empty()) text += "key: " + r.key + "\n";
  if (r.expected) {
    text += fmt::format("expected: {} ({})\n", to_string(*r.expected),
                        r.expectation_reason);
  }
  for (const std::string& line : r.log) text += "log: " + line + "\n";
  return text;
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

// The JSON report as written to --json-file and printed by --json.
std::string json_text(const RunReport& report) {
  // Plugin text may hold invalid UTF-8: replace it rather than fail.
  return report_json(report).dump(2, ' ', false,
                                  nlohmann::json::error_handler_t::replace) +
         "\n";
}

nlohmann::json plan_part(const nlohmann::json& plan, const char* name) {
  return plan.is_object() && plan.contains(name) ? plan.at(name)
                                                 : nlohmann::json::array();
}

}  // namespace

Totals count_results(const std::vector<CaseResult>& results) {
  Totals totals;
  for (const CaseResult& r : results) {
    ++totals.by_status[static_cast<std::size_t>(r.status)];
    ++totals.total;
    if (!meets_expectation(r.status)) ++totals.unmet;
  }
  return totals;
}

void print_report(std::ostream& out, const RunReport& report, bool verbose) {
  const std::vector<Row> rows = rows_of(report.results);
  std::size_t platform_width = 8, target_width = 6, kernel_width = 6;
  for (const Row& row : rows) {
    platform_width = std::max(platform_width, row.platform.size());
    target_width = std::max(target_width, row.target.size());
    kernel_width = std::max(kernel_width, short_kernel_name(row.kernel).size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:<{}}", "platform", platform_width,
                     "target", target_width, "kernel", kernel_width);
  for (const Status status : kColumns) {
    out << fmt::format(" {:>7}", column_title(status));
  }
  out << fmt::format(" {:>8}\n", "seconds");
  for (const Row& row : rows) {
    out << fmt::format("{:<{}}  {:<{}}  {:<{}}", row.platform, platform_width,
                       row.target, target_width, short_kernel_name(row.kernel),
                       kernel_width);
    for (const Status status : kColumns) {
      out << fmt::format(" {:>7}", row.totals.count(status));
    }
    out << fmt::format(" {:>8.2f}\n", row.seconds);
  }

  std::vector<const CaseResult*> attention;
  std::map<std::string, std::size_t> skip_reasons;
  for (const CaseResult& r : report.results) {
    if (!meets_expectation(r.status) || verbose) attention.push_back(&r);
    if (r.status == Status::skip) {
      ++skip_reasons[fmt::format("{}: {}", r.platform, r.message)];
    }
  }
  if (!attention.empty()) {
    out << fmt::format("\n{}:\n", verbose ? "results" : "needs attention");
    for (const CaseResult* r : attention) {
      out << fmt::format("  {:<7} {}\n", label(r->status), r->id());
      if (!verbose || !meets_expectation(r->status)) {
        std::string details = details_of(*r);
        std::size_t start = 0;
        while (start < details.size()) {
          const std::size_t end = details.find('\n', start);
          out << "          " << details.substr(start, end - start) << "\n";
          start = end == std::string::npos ? details.size() : end + 1;
        }
      }
    }
  }
  if (!skip_reasons.empty()) {
    out << "\nskipped:\n";
    for (const auto& [reason, count] : skip_reasons) {
      out << fmt::format("  {:>5} x {}\n", count, reason);
    }
  }
  for (const std::string& note : report.notes)
    out << "\nnote: " << note << "\n";

  const Totals totals = count_results(report.results);
  out << fmt::format(
      "\ntotals: {} results: {} pass, {} fail, {} skip, {} expected-fail, {} "
      "unexpected-pass, {} crash, {} timeout ({:.1f} s)\n",
      totals.total, totals.count(Status::pass), totals.count(Status::fail),
      totals.count(Status::skip), totals.count(Status::expected_fail),
      totals.count(Status::unexpected_pass), totals.count(Status::crash),
      totals.count(Status::timeout), report.seconds);
  out << fmt::format(
      "conformance: {} passed, {} failed, {} skipped\n",
      totals.count(Status::pass) + totals.count(Status::expected_fail),
      totals.unmet, totals.count(Status::skip));
}

nlohmann::json report_json(const RunReport& report) {
  const Totals totals = count_results(report.results);
  nlohmann::json counts = nlohmann::json::object();
  for (const Status status : kColumns) {
    counts[std::string(to_string(status))] = totals.count(status);
  }
  counts["total"] = totals.total;
  counts["unmet"] = totals.unmet;
  nlohmann::json results = nlohmann::json::array();
  for (const CaseResult& r : report.results) results.push_back(to_json(r));
  return {{"tool", "jitwarm conformance"},
          {"format_version", 1},
          {"exit_code", report.exit_code},
          {"seconds", report.seconds},
          {"options", report.options},
          {"plugins", plan_part(report.plan, "plugins")},
          {"platforms", plan_part(report.plan, "platforms")},
          {"totals", std::move(counts)},
          {"notes", report.notes},
          {"results", std::move(results)}};
}

std::string junit_xml(const RunReport& report) {
  // One <testsuite> per platform, target and kernel.
  std::map<std::tuple<std::string, std::string, std::string>,
           std::vector<const CaseResult*>>
      suites;
  std::vector<std::tuple<std::string, std::string, std::string>> order;
  for (const CaseResult& r : report.results) {
    const auto key = std::make_tuple(r.platform, r.target, r.kernel);
    if (!suites.contains(key)) order.push_back(key);
    suites[key].push_back(&r);
  }
  const auto is_failure = [](const CaseResult& r) {
    return r.status == Status::fail || r.status == Status::unexpected_pass;
  };
  const auto is_error = [](const CaseResult& r) {
    return r.status == Status::crash || r.status == Status::timeout;
  };
  const Totals totals = count_results(report.results);
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites name=\"jitwarm conformance\" tests=\"{}\" failures=\"{}\" "
      "errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
      totals.total,
      totals.count(Status::fail) + totals.count(Status::unexpected_pass),
      totals.count(Status::crash) + totals.count(Status::timeout),
      totals.count(Status::skip), report.seconds);
  for (const auto& key : order) {
    const auto& members = suites[key];
    const auto& [platform, target, kernel] = key;
    std::size_t failures = 0, errors = 0, skipped = 0;
    double seconds = 0;
    for (const CaseResult* r : members) {
      failures += is_failure(*r) ? 1 : 0;
      errors += is_error(*r) ? 1 : 0;
      skipped += r->status == Status::skip ? 1 : 0;
      seconds += r->seconds;
    }
    const std::string suite_name =
        fmt::format("{}.{}", platform, short_kernel_name(kernel));
    xml += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
        "skipped=\"{}\" time=\"{:.3f}\">\n",
        xml_escape(suite_name), members.size(), failures, errors, skipped,
        seconds);
    xml += fmt::format(
        "    <properties>\n"
        "      <property name=\"platform\" value=\"{}\"/>\n"
        "      <property name=\"target\" value=\"{}\"/>\n"
        "      <property name=\"kernel\" value=\"{}\"/>\n"
        "      <property name=\"impl\" value=\"{}\"/>\n"
        "    </properties>\n",
        xml_escape(platform), xml_escape(target), xml_escape(kernel),
        xml_escape(members.front()->impl));
    for (const CaseResult* r : members) {
      xml += fmt::format(
          "    <testcase classname=\"conformance.{}\" name=\"{} [{}]\" "
          "time=\"{:.3f}\"",
          xml_escape(suite_name), xml_escape(r->case_name), to_string(r->check),
          r->seconds);
      const std::string details = details_of(*r);
      const std::string summary =
          r->status == Status::unexpected_pass
              ? fmt::format("expected to {} ({}) but passed",
                            to_string(*r->expected), r->expectation_reason)
              : r->message;
      if (is_failure(*r)) {
        xml += fmt::format(
            ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n"
            "    </testcase>\n",
            to_string(r->status), xml_escape(summary), xml_escape(details));
      } else if (is_error(*r)) {
        xml += fmt::format(
            ">\n      <error type=\"{}\" message=\"{}\">{}</error>\n"
            "    </testcase>\n",
            to_string(r->status), xml_escape(summary), xml_escape(details));
      } else if (r->status == Status::skip) {
        xml +=
            fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                        xml_escape(r->message));
      } else if (r->status == Status::expected_fail) {
        xml += fmt::format(
            ">\n      <system-out>expected failure ({}): {}</system-out>\n"
            "    </testcase>\n",
            xml_escape(r->expectation_reason), xml_escape(details));
      } else {
        xml += "/>\n";
      }
    }
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  return xml;
}

void write_junit(const std::string& path, const RunReport& report) {
  write_file(path, junit_xml(report));
}

void write_json(const std::string& path, const RunReport& report) {
  write_file(path, json_text(report));
}

void print_json(std::ostream& out, const RunReport& report) {
  out << json_text(report);
}

}  // namespace jitwarm::conformance
