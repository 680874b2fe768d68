// Tests of tools/conformance/report: totals, the terminal table, JUnit XML
// and JSON carry every result, its status, message and worst error.
#include <doctest/doctest.h>

#include <sstream>

#include "report.hpp"

namespace jc = jitwarm::conformance;

namespace {

jc::RunReport sample_report() {
  jc::RunReport report;
  jc::CaseResult pass;
  pass.platform = "example";
  pass.target = "example:host";
  pass.impl = "example-vendor";
  pass.kernel = "vllm.model_executor.layers.activation.silu_and_mul";
  pass.case_name = "fp32/T=7,H=64";
  report.results.push_back(pass);

  jc::CaseResult fail = pass;
  fail.kernel = "vllm.model_executor.layers.layernorm.rms_norm";
  fail.status = jc::Status::fail;
  fail.message = "'out' (float32): 3 of 8 elements differ <from> the reference";
  jc::BufferComparison comparison;
  comparison.buffer = "out";
  comparison.dtype = JW_DTYPE_FLOAT32;
  comparison.rule = "|error| <= 1e-05 * |expected| + 2^-126";
  comparison.elements = 8;
  comparison.mismatches = 3;
  jc::ElementReport worst;
  worst.index = 5;
  worst.position = "[1, 1]";
  worst.expected = "0.5";
  worst.actual = "0.75";
  worst.abs_error = 0.25;
  worst.rel_error = 0.5;
  worst.tolerance_ratio = 50000;
  comparison.worst = worst;
  comparison.first_mismatch = worst;
  fail.comparisons.push_back(comparison);
  report.results.push_back(fail);

  jc::CaseResult crash = pass;
  crash.case_name = "bf16/T=1";
  crash.status = jc::Status::crash;
  crash.message = "the worker process killed by signal 11 during the case";
  report.results.push_back(crash);

  jc::CaseResult skipped = pass;
  skipped.check = jc::Check::launch;
  skipped.status = jc::Status::skip;
  skipped.message = "launch skipped: compile-only (no CUDA driver)";
  report.results.push_back(skipped);

  jc::CaseResult expected = fail;
  expected.case_name = "fp16/T=7";
  expected.status = jc::Status::expected_fail;
  expected.expected = jc::Status::fail;
  expected.expectation_reason = "known";
  report.results.push_back(expected);
  report.exit_code = 1;
  return report;
}

}  // namespace

TEST_CASE(
    "given mixed results, then the totals count each status and the unmet "
    "ones") {
  const jc::Totals totals = jc::count_results(sample_report().results);
  CHECK(totals.total == 5);
  CHECK(totals.count(jc::Status::pass) == 1);
  CHECK(totals.count(jc::Status::fail) == 1);
  CHECK(totals.count(jc::Status::crash) == 1);
  CHECK(totals.count(jc::Status::skip) == 1);
  CHECK(totals.count(jc::Status::expected_fail) == 1);
  CHECK(totals.unmet == 2);
}

TEST_CASE(
    "given a failure, then the table names the case, the message and the worst "
    "error, and ends with the totals") {
  std::ostringstream out;
  jc::print_report(out, sample_report(), false);
  const std::string text = out.str();
  CHECK(text.find("FAIL    example/rms_norm/fp32/T=7,H=64 [run]") !=
        std::string::npos);
  CHECK(text.find("worst error: 'out'[1, 1] expected 0.5, got 0.75") !=
        std::string::npos);
  CHECK(text.find("CRASH   example/silu_and_mul/bf16/T=1 [run]") !=
        std::string::npos);
  CHECK(
      text.find("1 x example: launch skipped: compile-only (no CUDA driver)") !=
      std::string::npos);
  CHECK(text.find("conformance: 2 passed, 2 failed, 1 skipped") !=
        std::string::npos);
}

TEST_CASE(
    "given results, then JUnit has one testcase each, failures and errors "
    "escaped") {
  const std::string xml = jc::junit_xml(sample_report());
  CHECK(xml.find("<testsuites name=\"jitwarm conformance\" tests=\"5\" "
                 "failures=\"1\" errors=\"1\" skipped=\"1\"") !=
        std::string::npos);
  CHECK(
      xml.find(
          "<testsuite name=\"example.rms_norm\" tests=\"2\" failures=\"1\"") !=
      std::string::npos);
  CHECK(xml.find("name=\"fp32/T=7,H=64 [run]\"") != std::string::npos);
  CHECK(
      xml.find(
          "<failure type=\"fail\" message=\"&apos;out&apos; (float32): 3 of 8 "
          "elements differ &lt;from&gt; the reference\">") !=
      std::string::npos);
  CHECK(xml.find("<error type=\"crash\"") != std::string::npos);
  CHECK(xml.find("<skipped message=\"launch skipped") != std::string::npos);
  CHECK(xml.find("expected failure (known)") != std::string::npos);
  std::size_t open = 0, close = 0;
  for (std::size_t at = 0;
       (at = xml.find("<testcase ", at)) != std::string::npos; ++at)
    ++open;
  CHECK(open == 5);
  for (std::size_t at = 0;
       (at = xml.find("</testsuite>", at)) != std::string::npos; ++at)
    ++close;
  CHECK(close == 2);
}

TEST_CASE(
    "given results, then the JSON report round-trips each result with its "
    "worst error") {
  const nlohmann::json json = jc::report_json(sample_report());
  CHECK(json.at("exit_code") == 1);
  CHECK(json.at("totals").at("unmet") == 2);
  const nlohmann::json& failed = json.at("results").at(1);
  CHECK(failed.at("status") == "fail");
  CHECK(failed.at("worst_error").at("position") == "[1, 1]");
  CHECK(failed.at("worst_error").at("buffer") == "out");
  const jc::CaseResult back = jc::result_from_json(failed);
  CHECK(back.case_name == "fp32/T=7,H=64");
  REQUIRE(back.comparisons.size() == 1);
  CHECK(back.comparisons[0].worst->actual == "0.75");
  CHECK(back.comparisons[0].mismatches == 3);
}
