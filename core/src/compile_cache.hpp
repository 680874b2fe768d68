// The in-memory compile cache: key -> artifact, shared by the launch path and
// warmup, so a warmed key is a hit on its first launch.
//
// * Exactly one compile per key, however many threads ask at once: the first
//   asker compiles; the others wait on that entry, not on the whole cache
//   (each entry's compile is a Flight, support/single_flight.hpp).
// * Hits take only a shared lock on one of several shards.
// * An ArtifactStore (the persistent cache) slots in under it: a memory miss
//   asks the store before compiling, and a compile is written to the store.
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

#include "cache_metrics.hpp"
#include "entry_trust.hpp"
#include "striped_counter.hpp"

namespace jitwarm::detail {

struct Artifact {
  std::string binary;
  std::string format;
  std::string entry_point;
  uint64_t id = 0;  // unique within the process
  // What the launch path needs beside the bytes (the key as the owning
  // implementation sees it), built once by Compiler::finalize.
  std::shared_ptr<const void> attachment;
};

// A persistent layer under the memory cache.
class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  // nullopt on a miss; a corrupt or mismatched entry is a miss (and counted
  // through `rejected`), never an exception.
  virtual std::optional<Artifact> load(const CompileKey& key,
                                       std::string_view fingerprint,
                                       bool* rejected) = 0;
  // What a load found, for the metrics (cache_metrics.hpp). Flags are only
  // ever set, so one report can gather both loads of a lookup.
  struct LoadReport {
    CacheTier tier = CacheTier::disk;  // of a hit: disk, system or bundle
    bool rejected = false;             // a layer held a bad entry (`rejected`)
    bool rejected_disk = false;        // the user directory did
    bool rejected_system = false;      // the read-only system layer did
    // Why, when it did.
    RejectReason disk_reason = RejectReason::corrupt;
    RejectReason system_reason = RejectReason::corrupt;
  };
  // load(), saying which layer answered or rejected. The default knows of
  // one layer.
  virtual std::optional<Artifact> load_reporting(const CompileKey& key,
                                                 std::string_view fingerprint,
                                                 LoadReport& report) {
    bool rejected = false;
    std::optional<Artifact> artifact = load(key, fingerprint, &rejected);
    if (rejected) report.rejected = report.rejected_disk = true;
    return artifact;
  }
  // Best effort: a failed write is logged and returns false, never throws.
  virtual bool store(const CompileKey& key, std::string_view fingerprint,
                     const Artifact& artifact) = 0;

  // Held while this process compiles `key` and stores it, so that other
  // processes sharing the store wait for that entry instead of compiling
  // the key too. May wait (boundedly) for another process's claim; nullptr
  // when there is nothing to hold (the store cannot lock, or the wait ran
  // out). Either way the caller looks in the store again before compiling.
  // With `wait` false it tries once: nullptr with *busy set when another
  // process holds the key (a batch leaves that key to the waiting path).
  // Never throws.
  class Claim {
   public:
    virtual ~Claim() = default;
  };
  virtual std::unique_ptr<Claim> claim(const CompileKey& /*key*/,
                                       std::string_view /*fingerprint*/,
                                       bool /*wait*/ = true,
                                       bool* /*busy*/ = nullptr) {
    return nullptr;
  }
};

// The shared tier under the persistent store (remote_cache.hpp is the
// Redis one). Never throws; every call returns within the tier's timeout.
class RemoteTier {
 public:
  virtual ~RemoteTier() = default;
  enum class Outcome {
    hit,
    miss,
    rejected,     // a value that failed the entry check: a miss
    unavailable,  // an error, a timeout, or skipped while the tier is down
  };
  struct Lookup {
    std::optional<Artifact> artifact;  // set on a hit
    Outcome outcome = Outcome::miss;
    RejectReason reason = RejectReason::corrupt;  // of a rejected value
  };
  virtual Lookup load(const CompileKey& key, std::string_view fingerprint) = 0;
  // False when the entry was not written (an error, a full or read-only
  // server, or the tier is down).
  virtual bool store(const CompileKey& key, std::string_view fingerprint,
                     const Artifact& artifact) = 0;
};

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
  // no compile's), only rejects.
  std::optional<Artifact> load_entry(const CompileKey& key,
                                     std::string_view fingerprint,
                                     bool counted = true);
  // Written to the store and the remote tier; false when neither kept it.
  bool store_entry(const CompileKey& key, std::string_view fingerprint,
                   const Artifact& artifact);
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
    std::optional<std::string> fingerprint;
    std::optional<Artifact> artifact;
    std::unique_ptr<ArtifactStore::Claim> claim;
    bool busy = false;  // another process holds the claim (wait = false)
  };
  StoreProbe probe_store(const CompileKey& key, const Compiler& compiler,
                         bool wait);
  Artifact compile_alone(const CompileKey& key, const Compiler& compiler);
  void count_compile(const CompileKey& key);
  // A store hit or reject, from a lookup that started at `start`.
  void note_store_load(const ArtifactStore::LoadReport& report, bool hit,
                       std::chrono::steady_clock::time_point start);
  void store_compiled(const CompileKey& key, const StoreProbe& probe,
                      const Artifact& artifact);
  const Artifact* publish(Entry& entry, Artifact artifact,
                          const Compiler& compiler);
  void abandon(Shard& shard, const CompileKey& key, Entry& entry,
               std::exception_ptr error);
  void add_compile_time(std::string_view target,
                        std::chrono::steady_clock::time_point start);

  std::unique_ptr<Shard[]> shards_;
  // Asks the remote tier after a local miss; a hit goes to the local store.
  std::optional<Artifact> load_remote(const CompileKey& key,
                                      std::string_view fingerprint);

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
