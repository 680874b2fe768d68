// Tests of tools/conformance/expectations: the TOML format, its errors
// (with file:line), glob matching and how an expectation changes a status.
#include <doctest/doctest.h>

#include <string>

#include "expectations.hpp"

namespace jc = jitwarm::conformance;

namespace {

jc::CaseResult result(std::string kernel, std::string case_name,
                      jc::Status status, jc::Check check = jc::Check::run,
                      std::string platform = "cuda") {
  jc::CaseResult r;
  r.platform = std::move(platform);
  r.target = "cuda:sm_90";
  r.kernel = std::move(kernel);
  r.case_name = std::move(case_name);
  r.check = check;
  r.status = status;
  return r;
}

constexpr const char* kRmsNorm =
    "vllm.model_executor.layers.layernorm.rms_norm";

}  // namespace

TEST_CASE(
    "given an expected failure, then a failure, a crash or a timeout becomes "
    "expected-fail and a pass unexpected-pass") {
  jc::ExpectationSet set;
  set.parse(R"(
[[expect]]
kernel = "rms_norm"
case = "bf16/*"
status = "fail"
reason = "known rounding issue"
)",
            "cuda.toml", "cuda");
  for (const jc::Status raw :
       {jc::Status::fail, jc::Status::crash, jc::Status::timeout}) {
    jc::CaseResult r = result(kRmsNorm, "bf16/T=7,H=64", raw);
    set.apply(r);
    CHECK(r.status == jc::Status::expected_fail);
    CHECK(r.raw_status == std::string(jc::to_string(raw)));
    CHECK(r.expectation_reason == "known rounding issue");
  }
  jc::CaseResult passed = result(kRmsNorm, "bf16/T=7,H=64", jc::Status::pass);
  set.apply(passed);
  CHECK(passed.status == jc::Status::unexpected_pass);
  CHECK_FALSE(jc::meets_expectation(passed.status));

  jc::CaseResult other_case =
      result(kRmsNorm, "fp32/T=7,H=64", jc::Status::fail);
  set.apply(other_case);
  CHECK(other_case.status == jc::Status::fail);
}

TEST_CASE("given an expected crash, then only a crash meets it") {
  jc::ExpectationSet set;
  set.parse(R"(
[[expect]]
kernel = "*"
status = "crash"
reason = "driver bug"
)",
            "x.toml", "");
  jc::CaseResult crashed = result(kRmsNorm, "a", jc::Status::crash);
  set.apply(crashed);
  CHECK(crashed.status == jc::Status::expected_fail);
  jc::CaseResult failed = result(kRmsNorm, "a", jc::Status::fail);
  set.apply(failed);
  CHECK(failed.status == jc::Status::fail);
  CHECK(failed.expected == jc::Status::crash);
}

TEST_CASE(
    "given entries in order, then the first match wins, so a pass entry carves "
    "out an exception") {
  jc::ExpectationSet set;
  set.parse(R"(
[[expect]]
kernel = "rms_norm"
case = "*/empty/*"
status = "pass"
reason = "nothing to compute"

[[expect]]
kernel = "rms_norm"
status = "fail"
reason = "broken"
)",
            "x.toml", "");
  jc::CaseResult empty = result(kRmsNorm, "fp32/empty/T=0", jc::Status::pass);
  set.apply(empty);
  CHECK(empty.status == jc::Status::pass);
  CHECK_FALSE(empty.expected.has_value());
  jc::CaseResult full = result(kRmsNorm, "fp32/T=7", jc::Status::fail);
  set.apply(full);
  CHECK(full.status == jc::Status::expected_fail);
  CHECK(set.entries()[0].matches == 1);
  CHECK(set.entries()[1].matches == 1);
}

TEST_CASE(
    "given a platform file, then its entries apply to that platform only, "
    "unless they name another") {
  jc::ExpectationSet set;
  set.parse(R"(
[[expect]]
kernel = "vllm.*"
check = "compile"
target = "hip:gfx90a"
status = "skip"
reason = "no gfx90a toolchain"
)",
            "hip.toml", "hip");
  jc::CaseResult on_cuda =
      result(kRmsNorm, "a", jc::Status::pass, jc::Check::compile, "cuda");
  CHECK(set.match(on_cuda) == nullptr);
  jc::CaseResult on_hip =
      result(kRmsNorm, "a", jc::Status::pass, jc::Check::compile, "hip");
  on_hip.target = "hip:gfx90a";
  CHECK(set.match(on_hip) != nullptr);
  on_hip.target = "hip:gfx942";
  CHECK(set.match(on_hip) == nullptr);
}

TEST_CASE(
    "given malformed files, then the error names the file, the line and the "
    "problem") {
  const auto error_of = [](const char* text) -> std::string {
    jc::ExpectationSet set;
    try {
      set.parse(text, "bad.toml", "");
    } catch (const jc::ExpectationError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(error_of("[[expect]]\nkernel = \"a\"\nstatus = \"fail\"\n") ==
        "bad.toml:1: 'reason' is required");
  CHECK(error_of(
            "[[expect]]\nkernel = \"a\"\nstatus = \"broken\"\nreason = \"r\"\n")
            .find("status 'broken' is not one of") != std::string::npos);
  CHECK(
      error_of("[[expect]]\nkernel = \"a\"\nstatus = \"fail\"\nreason = \"r\"\n"
               "colour = \"red\"\n")
          .find("unknown key 'colour'") != std::string::npos);
  CHECK(error_of("[[expect]\n").find("bad.toml:1") == 0);
  CHECK(error_of("[other]\nx = 1\n").find("unknown table 'other'") !=
        std::string::npos);
  CHECK(error_of("[[expect]]\nkernel = 3\nstatus = \"fail\"\nreason = \"r\"\n")
            .find("'kernel' must be a non-empty string") != std::string::npos);
}

TEST_CASE("given an empty file, then nothing is expected") {
  jc::ExpectationSet set;
  set.parse("# nothing known to fail\n", "cpu.toml", "cpu");
  CHECK(set.entries().empty());
  jc::CaseResult r = result(kRmsNorm, "a", jc::Status::fail);
  set.apply(r);
  CHECK(r.status == jc::Status::fail);
}

TEST_CASE(
    "given an expectation file that is not a regular file, or breaks toml++'s "
    "own checks, then loading it is an error, never a hang or an abort") {
  const auto load_error = [](const char* path) -> std::string {
    jc::ExpectationSet set;
    try {
      set.load_file(path, "cpu");
    } catch (const jc::ExpectationError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(load_error("/dev/zero") ==
        "cannot read expectation file /dev/zero: it is a character device");
  CHECK(load_error("/").find("it is a directory") != std::string::npos);
  jc::ExpectationSet set;
  CHECK_THROWS_WITH_AS(set.parse("a = [}", "bad.toml", ""),
                       doctest::Contains("bad.toml:1:6:"),
                       jc::ExpectationError);
}
