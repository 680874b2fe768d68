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

// A manifest's file and text (read_warmup_manifest_file). A manifest that
// cannot be read is bad input (exit 3), like a malformed one: the user
// named it.
WarmupManifestFile read_manifest_file(const std::string& path);

// Every request of every manifest, in order; each read by
// read_manifest_file.
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

// What a plan for the default platform says when that is the CPU
// reference although a GPU platform is loaded (Runtime::cpu_fallback_reason):
// a sentence for the summary, or "" (a platform or target was given, or
// no key is for the CPU).
std::string cpu_fallback_note(const Runtime& runtime,
                              const std::string& platform,
                              const std::vector<std::string>& targets,
                              const std::vector<CompileKey>& keys);

struct TargetTally {
  std::string target;
  std::size_t keys = 0, compiled = 0, cached = 0, failed = 0;
};
// Per target, in the order targets first appear among `keys`;
// result.keys[i] is keys[i]'s result.
std::vector<TargetTally> tally_by_target(const std::vector<CompileKey>& keys,
                                         const WarmupResult& result);

// Where a warmup's artifacts were kept, and what to say of a tier that did
// not keep them. The remote tier kept them when it answered and failed
// nothing (WarmupResult::remote_answered, remote_failed); one that failed
// is a warning, and exit 4 (a CI shard must not go green while the
// fleet's cache stays empty).
struct Persistence {
  struct Note {
    std::string text;
    bool warning = false;  // something asked for was not kept
  };
  std::vector<std::string> kept_in;  // a directory, a remote URL
  std::vector<Note> notes;           // empty: all is well
  // Compiled keys were not kept, and not because the user said so.
  bool directory_failed = false;
  bool remote_failed = false;  // the remote tier failed what it was asked
};
// What the remote tier answered and did not for a command, and whether the
// command had anything for it (keys warmed, configs tuned).
struct RemoteOutcome {
  uint64_t answered = 0;
  uint64_t failed = 0;
  bool worked = false;
};
RemoteOutcome remote_outcome(const WarmupResult& result);
// Between two reads of a runtime's counters (Runtime::cache_stats).
RemoteOutcome remote_outcome(const CacheStats& before, const CacheStats& after,
                             bool worked);
Persistence persistence_of(const CacheSettings& settings,
                           const RemoteOutcome& remote);
// Prints each note on stderr ("jitwarm COMMAND: warning: ...") and returns
// the exit code they give: kExitEnvironment when the remote tier failed,
// or when nothing kept what was `made` (compiled, tuned), else kExitOk.
int report_persistence(const std::string& command, const Persistence& kept,
                       bool made);

}  // namespace jitwarm::cli
