// What one `jitwarm warmup` covers and where its results go: several
// targets in one plan (`--target` repeated), this machine's shard of it
// (`--shard I/N`), the summary per target, and whether anything outlives
// the command (the persistent tiers the runtime resolved).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace jitwarm::cli {

// `--shard I/N`: this machine's part of the plan, 1 <= I <= N.
struct Shard {
  unsigned index = 1;
  unsigned count = 1;
  std::string text() const;  // "3/8"
};
// Boost.Program_options' hook for reading a Shard: a usage error names the
// form.
void validate(boost::any& v, const std::vector<std::string>& values, Shard*,
              int);

// Every request of every manifest, in order. A manifest that cannot be
// read is bad input (exit 3), like a malformed one: the user named it.
std::vector<WarmupRequest> load_requests(
    const std::vector<std::string>& manifests);

// One plan for every target, in the order given (targets already expanded;
// empty: the platform's device, as for one warmup_plan), then the shard's
// part of it (Runtime::warmup_plan and warmup_shard). Each key of a
// tunable implementation is planned with the stored winner of each of
// `device_kinds` (docs/tuning.md), one key per distinct config; none: the
// detected device's kind when no target is given, else the default config.
std::vector<CompileKey> plan_for_targets(
    Runtime& runtime, const std::vector<WarmupRequest>& requests,
    const std::string& platform, const std::vector<std::string>& targets,
    const Shard& shard, const std::vector<std::string>& device_kinds = {});

struct TargetTally {
  std::string target;
  std::size_t keys = 0, compiled = 0, cached = 0, failed = 0;
};
// Per target, in the order targets first appear among `keys`;
// result.keys[i] is keys[i]'s result.
std::vector<TargetTally> tally_by_target(const std::vector<CompileKey>& keys,
                                         const WarmupResult& result);

// Where compiled artifacts were kept, and what to say when that is nowhere.
struct Persistence {
  std::vector<std::string> kept_in;  // a directory, a remote URL
  std::string note;                  // empty when kept somewhere
  bool failed = false;  // not kept, and not because the user said so
};
Persistence persistence_of(const CacheSettings& settings);

}  // namespace jitwarm::cli
