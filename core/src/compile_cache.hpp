// The in-memory compile cache: key -> artifact, shared by the launch path and
// warmup, so a warmed key is a hit on its first launch.
//
// * Exactly one compile per key, however many threads ask at once: the first
//   asker compiles; the others wait on that entry, not on the whole cache
//   (each entry's compile is a Flight, support/single_flight.hpp).
// * Hits take only a shared lock on one of several shards.
// * An ArtifactStore (the persistent cache; cache_tier.hpp is the tiers'
//   interface) slots in under it: a memory miss asks the store before
//   compiling, and a compile is written to the store. A miss names its
//   entry once (EntryRef) and asks every tier with that.
// * Across processes sharing a store, one compile per key too: before
//   compiling, a miss claims the key in the store (waiting, boundedly, for
//   another process's claim) and asks the store again.
// * A RemoteTier (shared by machines) slots in under the store: it is asked
//   after a local miss, a hit from it is written to the store, and a
//   compile is written to it too. Whatever the remote tier does (fails,
//   times out, answers garbage), the lookup goes on locally: a remote tier
//   never fails a compile.
// * Entries are never removed while the cache lives, so the addresses handed
//   out stay valid (implementations may key their module caches on them).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "artifact.hpp"
#include "cache_metrics.hpp"
#include "cache_tier.hpp"
#include "striped_counter.hpp"

namespace jitwarm::detail {

class CompileCache {
 public:
  // What a miss runs: the compile itself, and (optionally) the fingerprint
  // that names the entry in the persistent store.
  struct Compiler {
    std::function<Artifact()> compile;
    // Runs when a compile is about to happen (not on hits, not when the
    // store answers); may throw to refuse it, which counts no compile.
    std::function<void()> before_compile;
    std::function<std::optional<std::string>()> fingerprint;
    // Runs on the artifact (compiled or read from the store) before it is
    // published.
    std::function<void(Artifact&)> finalize;
    // False for implementations that compile nothing
    // (JW_IMPL_COMPILES_NOTHING): `compile` runs but is not counted.
    bool counts_as_compile = true;
  };
  struct Lookup {
    const Artifact* artifact;
    bool compiled;  // this call ran the compile
  };
  // Several keys compiled together (one compiler run: get_or_compile_batch).
  struct KeyOutcome {  // of one key of a batch; neither set: not answered
    std::optional<Artifact> artifact;
    std::exception_ptr error;
  };
  struct BatchCompiler {
    // The compiler of key `index` alone: its fingerprint and finalize, and
    // its own compile when the batch does not answer for it.
    std::function<Compiler(std::size_t index)> compiler_for;
    // Compiles the keys at `indices` together and returns one outcome per
    // index given, in that order. Throwing fails the batch as a whole:
    // each of its keys is then compiled alone.
    std::function<std::vector<KeyOutcome>(std::span<const std::size_t>)>
        compile_together;
  };
  struct BatchLookup {
    const Artifact* artifact = nullptr;  // null: `error`
    bool compiled = false;               // compiled by this call
    std::exception_ptr error;
  };

  CompileCache();
  ~CompileCache();
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  void set_store(std::shared_ptr<ArtifactStore> store);
  ArtifactStore* store() const { return store_.get(); }
  void set_remote(std::shared_ptr<RemoteTier> remote);
  RemoteTier* remote() const { return remote_.get(); }
  // A read-only node (RemoteCacheMode::read_only) loads from the remote
  // tier and never writes to it: neither compiles nor external entries.
  void set_remote_read_only(bool read_only) { remote_read_only_ = read_only; }
  // Whether the runtime is sealed (JitMonitor::sealed), asked at each
  // compile to count it before or after seal; unset: before.
  void set_sealed_query(std::function<bool()> sealed) {
    sealed_ = std::move(sealed);
  }
  // What the slow paths saw (cache_metrics.hpp); with stats(), the text of
  // Runtime::metrics_text.
  const CacheMetrics& metrics() const { return metrics_; }

  // Throws what compile throws (to every waiter of that attempt); a failed
  // key is not cached, so a later call tries again.
  Lookup get_or_compile(const CompileKey& key, const Compiler& compiler);
  // get_or_compile for many keys at once, with the same guarantees per key
  // (one compile per key, across threads and processes): the keys found in
  // neither memory nor the store, and claimed by no other thread or
  // process, are compiled together; a key another process is compiling is
  // waited for as get_or_compile waits, and one the batch leaves
  // unanswered is compiled alone. Never throws for a key: its error is in
  // its result.
  std::vector<BatchLookup> get_or_compile_batch(
      std::span<const CompileKey* const> keys, const BatchCompiler& batch);
  // Entries compiled elsewhere (another JIT compiler's files, e.g.
  // Triton's): the tiers under memory alone, counted as any key's lookups
  // are (disk and remote hits, rejects, a miss when no tier has it), and
  // kept out of memory (their owner caches what it loads). Never throws.
  // Not `counted`: no hit or miss is counted (a tuning result's lookup is
  // no compile's), only rejects. The answer is the store's, with the
  // remote tier's after a local miss.
  TierLoad load_entry(const EntryRef& entry, bool counted = true);
  // Written to the store and the remote tier; false when neither kept it.
  bool store_entry(const EntryRef& entry, const Artifact& artifact);
  // A hit or nullptr; counts nothing.
  const Artifact* find(const CompileKey& key) const;
  // The launch path's fast path: a hit (counted as one) or nullptr (counted
  // as nothing; the caller goes on to get_or_compile, which counts the
  // miss). Builds no Compiler on a hit.
  const Artifact* hit(const CompileKey& key);
  // A launch answered by a prepared launch (prepared_launch.hpp), which
  // holds its artifact: counted as a hit, without touching a shard.
  void count_hit();
  CacheStats stats() const;

 private:
  struct Entry;
  struct Shard;
  static constexpr std::size_t kShards = 16;
  Shard& shard_for(const CompileKey& key) const;
  // The steps of a lookup, shared by get_or_compile and the batch.
  const Artifact* ready_artifact(Shard& shard, const CompileKey& key);
  std::pair<Entry*, bool> entry_for(Shard& shard, const CompileKey& key);
  static Lookup wait_for(Entry& entry);
  // What the store holds for a key this process owns, and its claim.
  struct StoreProbe {
    std::optional<EntryRef> entry;  // none: the key is not persisted
    std::optional<Artifact> artifact;
    std::unique_ptr<ArtifactStore::Claim> claim;
    bool busy = false;  // another process holds the claim (wait = false)
  };
  StoreProbe probe_store(const CompileKey& key, const Compiler& compiler,
                         bool wait);
  Artifact compile_alone(const CompileKey& key, const Compiler& compiler);
  void count_compile(const CompileKey& key);
  // What the store answered a lookup that started at `start` (its loads
  // gathered): its hit and rejects, counted; not `counted`, only rejects.
  void note_store_load(const TierLoad& local, bool counted,
                       std::chrono::steady_clock::time_point start);
  void store_compiled(const StoreProbe& probe, const Artifact& artifact);
  const Artifact* publish(Entry& entry, Artifact artifact,
                          const Compiler& compiler);
  void abandon(Shard& shard, const CompileKey& key, Entry& entry,
               std::exception_ptr error);
  void add_compile_time(std::string_view target,
                        std::chrono::steady_clock::time_point start);

  std::unique_ptr<Shard[]> shards_;
  // Asks the remote tier after a local miss, of a lookup that started at
  // `start`, and counts what it answered; a hit goes to the local store.
  TierLoad load_remote(const EntryRef& entry, bool counted,
                       std::chrono::steady_clock::time_point start);

  std::shared_ptr<ArtifactStore> store_;
  std::shared_ptr<RemoteTier> remote_;
  bool remote_read_only_ = false;
  std::function<bool()> sealed_;
  CacheMetrics metrics_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, compiles_{0}, disk_hits_{0},
      disk_writes_{0}, disk_rejects_{0}, compile_nanoseconds_{0},
      remote_hits_{0}, remote_misses_{0}, remote_rejects_{0}, remote_errors_{0},
      remote_writes_{0};
  std::atomic<std::size_t> entries_{0};
  StripedCounter launch_hits_;  // bumped by concurrent launches
};

uint64_t next_artifact_id();

}  // namespace jitwarm::detail
