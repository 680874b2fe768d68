// expectations.cpp — parsing expectation files and applying them (see
// expectations.hpp). The one translation unit of the runner that includes
// toml++, header-only (configured for untrusted input by the core's
// toml_parser.hpp).
#include "toml_parser.hpp"

#include "expectations.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <set>

#include "bounded_file.hpp"

namespace jitwarm::conformance {
namespace {

const std::set<std::string> kKnownKeys = {
    "platform", "target", "kernel", "case", "check", "status", "reason"};

}  // namespace

bool glob_matches(const std::string& glob, std::string_view text) {
  return fnmatch(glob.c_str(), std::string(text).c_str(), 0) == 0;
}

void ExpectationSet::load_file(const std::string& path,
                               const std::string& default_platform) {
  const jitwarm::detail::FileContents file = jitwarm::detail::read_bounded_file(
      path, jitwarm::detail::kMaxUserFileBytes,
      jitwarm::detail::Symlinks::follow);
  if (!file.ok()) {
    throw ExpectationError(
        fmt::format("cannot read expectation file {}: it {}", path, file.why));
  }
  parse(file.bytes, path, default_platform);
}

void ExpectationSet::parse(std::string_view toml_text,
                           const std::string& source_name,
                           const std::string& default_platform) {
  toml::table document;
  try {
    document = jitwarm::detail::parse_untrusted_toml(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    throw ExpectationError(jitwarm::detail::toml_error_text(source_name, e));
  }
  for (const auto& [key, value] : document) {
    if (key != "expect") {
      throw ExpectationError(
          fmt::format("{}: unknown table '{}' (entries are [[expect]] tables)",
                      source_name, key.str()));
    }
  }
  const toml::array* list = document["expect"].as_array();
  if (list == nullptr) {
    if (document.contains("expect")) {
      throw ExpectationError(fmt::format(
          "{}: 'expect' must be an array of tables ([[expect]])", source_name));
    }
    return;  // an empty file: nothing expected to fail
  }
  for (const toml::node& node : *list) {
    const toml::table* entry = node.as_table();
    const std::string where =
        fmt::format("{}:{}", source_name, node.source().begin.line);
    if (entry == nullptr) {
      throw ExpectationError(
          fmt::format("{}: [[expect]] entries are tables", where));
    }
    for (const auto& [key, value] : *entry) {
      if (!kKnownKeys.contains(std::string(key.str()))) {
        throw ExpectationError(fmt::format(
            "{}: unknown key '{}' (known: platform, target, kernel, case, "
            "check, status, reason)",
            where, key.str()));
      }
    }
    const auto text = [&](const char* key,
                          std::optional<std::string> fallback) -> std::string {
      const toml::node_view<const toml::node> value = (*entry)[key];
      if (!value) {
        if (fallback) return *fallback;
        throw ExpectationError(fmt::format("{}: '{}' is required", where, key));
      }
      const std::optional<std::string> string = value.value<std::string>();
      if (!string || string->empty()) {
        throw ExpectationError(
            fmt::format("{}: '{}' must be a non-empty string", where, key));
      }
      return *string;
    };
    Expectation expectation;
    expectation.source = where;
    expectation.platform_glob =
        text("platform", default_platform.empty() ? "*" : default_platform);
    expectation.target_glob = text("target", "*");
    expectation.kernel_glob = text("kernel", std::nullopt);
    expectation.case_glob = text("case", "*");
    expectation.check_glob = text("check", "*");
    expectation.reason = text("reason", std::nullopt);
    const std::string status = text("status", std::nullopt);
    const std::optional<Status> parsed = parse_status(status);
    if (!parsed || (*parsed != Status::pass && *parsed != Status::fail &&
                    *parsed != Status::crash && *parsed != Status::timeout &&
                    *parsed != Status::skip)) {
      throw ExpectationError(fmt::format(
          "{}: status '{}' is not one of pass, fail, crash, timeout, skip",
          where, status));
    }
    expectation.status = *parsed;
    entries_.push_back(std::move(expectation));
  }
}

const Expectation* ExpectationSet::match(const CaseResult& result) {
  const std::string short_name = short_kernel_name(result.kernel);
  for (Expectation& e : entries_) {
    if (glob_matches(e.platform_glob, result.platform) &&
        glob_matches(e.target_glob, result.target) &&
        (glob_matches(e.kernel_glob, result.kernel) ||
         glob_matches(e.kernel_glob, short_name)) &&
        glob_matches(e.case_glob, result.case_name) &&
        glob_matches(e.check_glob, to_string(result.check))) {
      ++e.matches;
      return &e;
    }
  }
  return nullptr;
}

void ExpectationSet::apply(CaseResult& result) {
  const Expectation* e = match(result);
  if (e == nullptr || e->status == Status::pass) return;
  result.expected = e->status;
  result.expectation_reason = e->reason;
  const Status raw = result.status;
  const bool failed =
      raw == Status::fail || raw == Status::crash || raw == Status::timeout;
  Status final_status = raw;
  if (e->status == Status::skip) {
    final_status = Status::skip;
    if (result.message.empty()) result.message = "expected skip: " + e->reason;
  } else if (raw == Status::pass) {
    final_status = Status::unexpected_pass;
  } else if (failed && (e->status == Status::fail || e->status == raw)) {
    final_status = Status::expected_fail;
  }
  if (final_status != raw) {
    result.raw_status = std::string(to_string(raw));
    result.status = final_status;
  }
}

}  // namespace jitwarm::conformance
