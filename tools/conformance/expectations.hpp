// expectations.hpp — known results declared as data: which results of a
// backend are expected to fail, crash, time out or be skipped, and why.
//
// Owns the file format (TOML, docs/conformance.md), glob matching, and how
// an expectation turns a raw status into a final one:
//   expected fail    + fail/crash/timeout -> expected-fail
//   expected crash   + crash              -> expected-fail (timeout alike)
//   any expected failure + pass           -> unexpected-pass
//   expected skip    -> the case is not run; reported as skip
//   expected pass    -> no change (carves exceptions out of a later glob)
// Entries are tried in file order, files in the order given; the first
// match wins. Other combinations keep the raw status (not met).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"

namespace jitwarm::conformance {

struct Expectation {
  std::string platform_glob = "*";
  std::string target_glob = "*";
  std::string kernel_glob;  // full or short kernel name
  std::string case_glob = "*";
  std::string check_glob = "*";
  Status status = Status::fail;  // pass, fail, crash, timeout or skip
  std::string reason;
  std::string source;  // "file:line" for messages
  std::size_t matches = 0;
};

// Thrown for unreadable or malformed files, naming file:line.
class ExpectationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ExpectationSet {
 public:
  // `default_platform`: entries without `platform` apply only there (for
  // <platform>.toml files); empty: to every platform.
  void load_file(const std::string& path, const std::string& default_platform);
  void parse(std::string_view toml_text, const std::string& source_name,
             const std::string& default_platform);

  // The first entry that matches, or null. Counts the match.
  const Expectation* match(const CaseResult& result);
  // Sets result.status (and expected, reason, raw_status) by its
  // expectation, if one matches.
  void apply(CaseResult& result);

  const std::vector<Expectation>& entries() const { return entries_; }

 private:
  std::vector<Expectation> entries_;
};

bool glob_matches(const std::string& glob, std::string_view text);

}  // namespace jitwarm::conformance
