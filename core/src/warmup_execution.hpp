// Warmup execution: requests (or exact keys) planned into (schema,
// implementation, key) work with the implementation that wins for each key
// now, then compiled, compile only, through the compile service, so every
// key warmed is the entry a launch finds (docs/warmup.md). Units are dealt
// as warmup_schedule.hpp says, to this process's threads
// (warmup_execution.cpp) or to worker processes forked from it
// (warmup_execution_processes.cpp). Expanding requests into keys is
// warmup.cpp's.
//
// * It compiles and never launches, prepares or allocates device memory,
//   and never passes the JIT monitor (a warmup is not a launch).
// * It keeps nothing between warmups: a result is the caller's.
// * A warmup that compiled reads the disk cache once more, for entries one
//   setting away from what it compiled (one warning, docs/warmup.md); that
//   read changes neither what was compiled nor the counts.
// * A forked worker changes two things of its own process's runtime, and
//   only there: its log sink (stderr) and, for a private store, the store
//   under the memory cache.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "compile_service.hpp"
#include "log.hpp"
#include "platforms.hpp"
#include "registry.hpp"
#include "runtime_caches.hpp"
#include "tune_results.hpp"
#include "warmup_schedule.hpp"

namespace jitwarm::detail {

// One key warmup compiles, with the implementation that wins for it.
struct WarmupWork {
  std::shared_ptr<const KernelSchema> schema;
  std::shared_ptr<ImplRecord> impl;
  CompileKey key;
};

// What the remote tier answered and did not (WarmupResult::remote_answered
// and remote_failed) by a cache's counters: a warmup's share is the
// difference of two reads, summed over its worker processes.
struct RemoteUse {
  uint64_t answered = 0;
  uint64_t failed = 0;
  static RemoteUse of(const CacheStats& stats);
  RemoteUse since(const RemoteUse& earlier) const;
};

class WarmupExecution {
 public:
  // `logger` is not const: a forked worker replaces its sink.
  WarmupExecution(Registry& registry, Platforms& platforms,
                  RuntimeCaches& caches, CompileService& compiler,
                  TuneResults& tune_results, Logger& logger);
  WarmupExecution(const WarmupExecution&) = delete;
  WarmupExecution& operator=(const WarmupExecution&) = delete;

  WarmupResult warm(const std::vector<WarmupRequest>& requests,
                    const WarmupOptions& options);
  WarmupResult warm_keys(const std::vector<CompileKey>& keys,
                         const WarmupOptions& options);
  std::vector<CompileKey> plan_keys(const std::vector<WarmupRequest>& requests,
                                    const WarmupOptions& options);

 private:
  std::vector<WarmupWork> plan(const std::vector<WarmupRequest>& requests,
                               const WarmupOptions& options);
  WarmupResult compile_all(const std::vector<WarmupWork>& work,
                           const WarmupOptions& options);
  // Warms one unit (keys of `work` compiled together, or one key) into
  // `keys` (indexed like `work`), calling `report` with each key's index
  // once its result is in.
  void warm_unit(const std::vector<WarmupWork>& work,
                 std::span<const std::size_t> unit,
                 std::vector<WarmupKeyResult>& keys,
                 const std::function<void(std::size_t)>& report);
  // A plan that took the default platform: one warning when that is the
  // CPU reference although a GPU platform is loaded (a GPU-less build box
  // would otherwise warm CPU keys unsaid).
  void warn_of_cpu_fallback();
  // After a warmup that compiled keys: one warning when entries of the
  // cache differ from compiled keys in one setting only
  // (miss_explanation.hpp, NearMisses). Reads the cache; changes nothing.
  void warn_of_near_misses(const std::vector<WarmupWork>& work,
                           const WarmupResult& result) const;
  // What `schedule` deals, in as many worker processes as it deals for
  // (warmup_execution_processes.cpp). What the workers' remote tier
  // answered is added to `remote`.
  void warm_in_processes(const std::vector<WarmupWork>& work,
                         WarmupSchedule& schedule,
                         std::vector<WarmupKeyResult>& keys,
                         const std::function<void(std::size_t)>& report,
                         RemoteUse& remote);

  Registry& registry_;
  Platforms& platforms_;
  RuntimeCaches& caches_;
  CompileService& compiler_;
  TuneResults& tune_results_;
  Logger& logger_;
};

}  // namespace jitwarm::detail
