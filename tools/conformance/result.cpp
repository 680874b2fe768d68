// result.cpp — status names and the JSON form of results (see result.hpp).
#include "result.hpp"

#include <jitwarm/jitwarm.hpp>

#include <cmath>

namespace jitwarm::conformance {
namespace {

constexpr std::pair<Status, std::string_view> kStatusNames[] = {
    {Status::pass, "pass"},
    {Status::fail, "fail"},
    {Status::skip, "skip"},
    {Status::crash, "crash"},
    {Status::timeout, "timeout"},
    {Status::expected_fail, "expected-fail"},
    {Status::unexpected_pass, "unexpected-pass"},
};

constexpr std::pair<Check, std::string_view> kCheckNames[] = {
    {Check::run, "run"},
    {Check::compile, "compile"},
    {Check::launch, "launch"},
    {Check::override, "override"},
};

// JSON has no infinity: errors that are infinite are written as null.
nlohmann::json number(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}
double number_from(const nlohmann::json& json) {
  return json.is_number() ? json.get<double>()
                          : std::numeric_limits<double>::infinity();
}

nlohmann::json to_json(const ElementReport& element) {
  return {{"index", element.index},
          {"position", element.position},
          {"expected", element.expected},
          {"actual", element.actual},
          {"abs_error", number(element.abs_error)},
          {"rel_error", number(element.rel_error)},
          {"ulp_error", element.ulp_error},
          {"tolerance_ratio", number(element.tolerance_ratio)}};
}

ElementReport element_from_json(const nlohmann::json& json) {
  ElementReport element;
  element.index = json.at("index").get<int64_t>();
  element.position = json.at("position").get<std::string>();
  element.expected = json.at("expected").get<std::string>();
  element.actual = json.at("actual").get<std::string>();
  element.abs_error = number_from(json.at("abs_error"));
  element.rel_error = number_from(json.at("rel_error"));
  element.ulp_error = json.at("ulp_error").get<uint64_t>();
  element.tolerance_ratio = number_from(json.at("tolerance_ratio"));
  return element;
}

BufferComparison comparison_from_json(const nlohmann::json& json) {
  BufferComparison comparison;
  comparison.buffer = json.at("buffer").get<std::string>();
  comparison.dtype = parse_dtype(json.at("dtype").get<std::string>())
                         .value_or(JW_DTYPE_INVALID);
  comparison.rule = json.at("rule").get<std::string>();
  comparison.elements = json.at("elements").get<int64_t>();
  comparison.mismatches = json.at("mismatches").get<int64_t>();
  if (json.contains("first_mismatch")) {
    comparison.first_mismatch = element_from_json(json.at("first_mismatch"));
  }
  if (json.contains("worst")) {
    comparison.worst = element_from_json(json.at("worst"));
  }
  return comparison;
}

}  // namespace

std::string_view to_string(Status status) {
  for (const auto& [value, name] : kStatusNames) {
    if (value == status) return name;
  }
  return "invalid";
}

std::optional<Status> parse_status(std::string_view text) {
  for (const auto& [value, name] : kStatusNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

bool meets_expectation(Status status) {
  return status == Status::pass || status == Status::skip ||
         status == Status::expected_fail;
}

std::string_view to_string(Check check) {
  for (const auto& [value, name] : kCheckNames) {
    if (value == check) return name;
  }
  return "invalid";
}

std::optional<Check> parse_check(std::string_view text) {
  for (const auto& [value, name] : kCheckNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::string short_kernel_name(std::string_view kernel) {
  const auto dot = kernel.rfind('.');
  return std::string(dot == std::string_view::npos ? kernel
                                                   : kernel.substr(dot + 1));
}

std::string CaseResult::id() const {
  return platform + "/" + short_kernel_name(kernel) + "/" + case_name + " [" +
         std::string(to_string(check)) + "]";
}

const BufferComparison* CaseResult::worst_comparison() const {
  const BufferComparison* worst = nullptr;
  for (const BufferComparison& comparison : comparisons) {
    if (!comparison.passed()) return &comparison;
    if (comparison.worst &&
        (worst == nullptr || !worst->worst ||
         comparison.worst->tolerance_ratio > worst->worst->tolerance_ratio)) {
      worst = &comparison;
    }
  }
  return worst;
}

nlohmann::json to_json(const BufferComparison& comparison) {
  nlohmann::json json = {{"buffer", comparison.buffer},
                         {"dtype", std::string(dtype_name(comparison.dtype))},
                         {"rule", comparison.rule},
                         {"elements", comparison.elements},
                         {"mismatches", comparison.mismatches}};
  if (comparison.first_mismatch) {
    json["first_mismatch"] = to_json(*comparison.first_mismatch);
  }
  if (comparison.worst) json["worst"] = to_json(*comparison.worst);
  return json;
}

nlohmann::json to_json(const CaseResult& result) {
  nlohmann::json json = {{"id", result.id()},
                         {"platform", result.platform},
                         {"target", result.target},
                         {"impl", result.impl},
                         {"kernel", result.kernel},
                         {"case", result.case_name},
                         {"check", std::string(to_string(result.check))},
                         {"status", std::string(to_string(result.status))},
                         {"message", result.message},
                         {"key", result.key},
                         {"seconds", result.seconds},
                         {"log", result.log}};
  nlohmann::json comparisons = nlohmann::json::array();
  for (const BufferComparison& comparison : result.comparisons) {
    comparisons.push_back(to_json(comparison));
  }
  json["comparisons"] = std::move(comparisons);
  if (const BufferComparison* worst = result.worst_comparison();
      worst != nullptr && worst->worst) {
    nlohmann::json worst_error = to_json(*worst->worst);
    worst_error["buffer"] = worst->buffer;
    worst_error["rule"] = worst->rule;
    json["worst_error"] = std::move(worst_error);
  }
  if (result.expected) {
    json["expected"] = std::string(to_string(*result.expected));
    json["expectation_reason"] = result.expectation_reason;
  }
  if (!result.raw_status.empty()) json["raw_status"] = result.raw_status;
  return json;
}

CaseResult result_from_json(const nlohmann::json& json) {
  CaseResult result;
  result.platform = json.at("platform").get<std::string>();
  result.target = json.at("target").get<std::string>();
  result.impl = json.at("impl").get<std::string>();
  result.kernel = json.at("kernel").get<std::string>();
  result.case_name = json.at("case").get<std::string>();
  result.check =
      parse_check(json.at("check").get<std::string>()).value_or(Check::run);
  result.status =
      parse_status(json.at("status").get<std::string>()).value_or(Status::fail);
  result.message = json.at("message").get<std::string>();
  result.key = json.at("key").get<std::string>();
  result.seconds = json.at("seconds").get<double>();
  result.log = json.at("log").get<std::vector<std::string>>();
  for (const nlohmann::json& comparison : json.at("comparisons")) {
    result.comparisons.push_back(comparison_from_json(comparison));
  }
  return result;
}

}  // namespace jitwarm::conformance
