// --signing-key, --trusted-key and --remote-read-only, for every command
// that writes to or loads from the cache (docs/operators.md, "Trust"):
// one definition, so each command says the same about them.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace jitwarm::cli {

struct TrustOptions {
  std::string signing_key;
  std::vector<std::string> trusted_keys;
  bool remote_read_only = false;

  // Which of the three a command takes.
  enum Which : unsigned { sign = 1, trust = 2, remote_mode = 4 };
  void add_to(boost::program_options::options_description& d, unsigned which);
  // Sets what was given (the rest stays to the environment).
  void apply(RuntimeOptions& options) const;
};

}  // namespace jitwarm::cli
