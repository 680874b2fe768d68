#include "compile_cache.hpp"

#include <chrono>
#include <exception>

#include "errors.hpp"
#include "single_flight.hpp"

namespace jitwarm::detail {

uint64_t next_artifact_id() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

// A key's compile (single_flight.hpp): its owner is the thread that made
// the entry; a hit reads flight.ready() without the entry's mutex.
struct CompileCache::Entry {
  std::string encoding;  // the full key, to rule out hash collisions
  Flight<Artifact> flight;
};

struct Hash128Hasher {
  std::size_t operator()(const Hash128& h) const noexcept {
    return static_cast<std::size_t>(h.lo ^ (h.hi * 0x9E3779B97F4A7C15ull));
  }
};

struct CompileCache::Shard {
  mutable std::shared_mutex mutex;
  std::unordered_map<Hash128, std::vector<std::unique_ptr<Entry>>,
                     Hash128Hasher>
      map;

  Entry* find_locked(const CompileKey& key) const {
    auto it = map.find(key.hash());
    if (it == map.end()) return nullptr;
    for (const auto& e : it->second) {
      if (e->encoding == key.encoding()) return e.get();
    }
    return nullptr;
  }
};

CompileCache::CompileCache() : shards_(new Shard[kShards]) {}
CompileCache::~CompileCache() = default;

void CompileCache::set_store(std::shared_ptr<ArtifactStore> store) {
  store_ = std::move(store);
}

void CompileCache::set_remote(std::shared_ptr<RemoteTier> remote) {
  remote_ = std::move(remote);
}

TierLoad CompileCache::load_remote(
    const EntryRef& entry, bool counted,
    std::chrono::steady_clock::time_point start) {
  const auto asked = std::chrono::steady_clock::now();
  TierLoad found = remote_->load(entry);
  metrics_.observe_remote(RemoteOperation::load,
                          std::chrono::steady_clock::now() - asked);
  if (found.artifact) {
    remote_hits_.fetch_add(1, std::memory_order_relaxed);
    // The next process on this machine finds it locally.
    if (store_ && store_->store(entry, *found.artifact))
      disk_writes_.fetch_add(1, std::memory_order_relaxed);
    if (counted) {
      metrics_.observe_load(CacheTier::redis,
                            std::chrono::steady_clock::now() - start);
    }
  } else if (found.unavailable) {
    remote_errors_.fetch_add(1, std::memory_order_relaxed);
  } else if (const auto reason = found.rejected_in(CacheTier::redis)) {
    remote_rejects_.fetch_add(1, std::memory_order_relaxed);
    metrics_.count_reject(CacheTier::redis, *reason);
  } else {
    remote_misses_.fetch_add(1, std::memory_order_relaxed);
  }
  return found;
}

CompileCache::Shard& CompileCache::shard_for(const CompileKey& key) const {
  return shards_[key.hash().lo % kShards];
}

const Artifact* CompileCache::find(const CompileKey& key) const {
  Shard& shard = shard_for(key);
  std::shared_lock lock(shard.mutex);
  Entry* e = shard.find_locked(key);
  return e != nullptr ? e->flight.ready() : nullptr;
}

const Artifact* CompileCache::hit(const CompileKey& key) {
  const Artifact* artifact = find(key);
  if (artifact != nullptr) hits_.fetch_add(1, std::memory_order_relaxed);
  return artifact;
}

const Artifact* CompileCache::ready_artifact(Shard& shard,
                                             const CompileKey& key) {
  std::shared_lock lock(shard.mutex);
  Entry* e = shard.find_locked(key);
  const Artifact* artifact = e != nullptr ? e->flight.ready() : nullptr;
  if (artifact != nullptr) hits_.fetch_add(1, std::memory_order_relaxed);
  return artifact;
}

std::pair<CompileCache::Entry*, bool> CompileCache::entry_for(
    Shard& shard, const CompileKey& key) {
  std::unique_lock lock(shard.mutex);
  if (Entry* entry = shard.find_locked(key)) return {entry, false};
  auto fresh = std::make_unique<Entry>();
  fresh->encoding = key.encoding();
  Entry* entry = fresh.get();
  shard.map[key.hash()].push_back(std::move(fresh));
  return {entry, true};
}

CompileCache::Lookup CompileCache::wait_for(Entry& entry) {
  // Waiters of a failed attempt share its error; the failed entry is then
  // unreachable, so the next call starts a fresh attempt.
  return {&entry.flight.get(), false};
}

CompileCache::StoreProbe CompileCache::probe_store(const CompileKey& key,
                                                   const Compiler& compiler,
                                                   bool wait) {
  StoreProbe probe;
  if ((store_ || remote_) && compiler.fingerprint) {
    if (std::optional<std::string> fingerprint = compiler.fingerprint())
      probe.entry.emplace(key, std::move(*fingerprint));
  }
  if (!probe.entry) return probe;
  const EntryRef& entry = *probe.entry;
  const auto start = std::chrono::steady_clock::now();
  TierLoad local;  // the store's loads
  if (store_) local = store_->load(entry);
  // The remote tier after a local miss (a hit lands in the local store).
  if (!local.artifact && remote_)
    probe.artifact = load_remote(entry, /*counted=*/true, start).artifact;
  if (!local.artifact && !probe.artifact && store_) {
    // Another process may be compiling this key right now: wait for its
    // claim (or, not waiting, leave the key to those who wait), then look
    // again locally (that process stores there first, and the remote tier
    // was just asked). The claim is held until the compiled artifact is
    // stored.
    probe.claim = store_->claim(entry, wait, &probe.busy);
    if (!probe.busy) local.gather(store_->load(entry));
  }
  note_store_load(local, /*counted=*/true, start);
  if (local.artifact) probe.artifact = std::move(local.artifact);
  return probe;
}

void CompileCache::note_store_load(
    const TierLoad& local, bool counted,
    std::chrono::steady_clock::time_point start) {
  // Once per lookup, however many of its loads refused the entry.
  if (local.rejected()) disk_rejects_.fetch_add(1, std::memory_order_relaxed);
  if (!counted) return;
  for (const CacheTier layer : {CacheTier::disk, CacheTier::system}) {
    if (const auto reason = local.rejected_in(layer))
      metrics_.count_reject(layer, *reason);
  }
  if (!local.artifact) return;
  disk_hits_.fetch_add(1, std::memory_order_relaxed);
  if (local.tier != CacheTier::disk) metrics_.count_store_hit(local.tier);
  metrics_.observe_load(local.tier, std::chrono::steady_clock::now() - start);
}

void CompileCache::add_compile_time(
    std::string_view target, std::chrono::steady_clock::time_point start) {
  const auto took = std::chrono::steady_clock::now() - start;
  compile_nanoseconds_.fetch_add(
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()),
      std::memory_order_relaxed);
  metrics_.observe_compile(target, took);
}

void CompileCache::count_compile(const CompileKey& key) {
  compiles_.fetch_add(1, std::memory_order_relaxed);
  metrics_.count_compile(key, sealed_ && sealed_());
}

Artifact CompileCache::compile_alone(const CompileKey& key,
                                     const Compiler& compiler) {
  if (compiler.before_compile) compiler.before_compile();
  const auto start = std::chrono::steady_clock::now();
  if (compiler.counts_as_compile) count_compile(key);
  Artifact artifact = compiler.compile();
  if (compiler.counts_as_compile) add_compile_time(key.target(), start);
  return artifact;
}

void CompileCache::store_compiled(const StoreProbe& probe,
                                  const Artifact& artifact) {
  // Written back only what was compiled: an artifact that came from the
  // remote tier is there already (and in the store, load_remote).
  if (probe.entry) store_entry(*probe.entry, artifact);
}

bool CompileCache::store_entry(const EntryRef& entry,
                               const Artifact& artifact) {
  bool kept = false;
  if (store_ && store_->store(entry, artifact)) {
    disk_writes_.fetch_add(1, std::memory_order_relaxed);
    kept = true;
  }
  if (remote_ && !remote_read_only_) {
    const auto start = std::chrono::steady_clock::now();
    const bool written = remote_->store(entry, artifact);
    metrics_.observe_remote(RemoteOperation::store,
                            std::chrono::steady_clock::now() - start);
    if (written) {
      remote_writes_.fetch_add(1, std::memory_order_relaxed);
      kept = true;
    } else {
      remote_errors_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return kept;
}

TierLoad CompileCache::load_entry(const EntryRef& entry, bool counted) {
  const auto start = std::chrono::steady_clock::now();
  TierLoad found;
  if (store_) {
    found = store_->load(entry);
    note_store_load(found, counted, start);
  }
  // The store's rejects are counted (note_store_load); what the caller
  // reads is the hit.
  if (!found.artifact && remote_) found = load_remote(entry, counted, start);
  if (!found.artifact && counted)
    misses_.fetch_add(1, std::memory_order_relaxed);
  return found;
}

const Artifact* CompileCache::publish(Entry& entry, Artifact artifact,
                                      const Compiler& compiler) {
  artifact.id = next_artifact_id();
  if (compiler.finalize) compiler.finalize(artifact);
  const Artifact& published = entry.flight.publish(std::move(artifact));
  entries_.fetch_add(1, std::memory_order_relaxed);
  return &published;
}

void CompileCache::abandon(Shard& shard, const CompileKey& key, Entry& entry,
                           std::exception_ptr error) {
  entry.flight.abandon(std::move(error));
  // Forget the failed entry so a later call compiles again; waiters hold it
  // by pointer, so it is kept (not freed) until the cache dies.
  std::unique_lock lock(shard.mutex);
  auto it = shard.map.find(key.hash());
  if (it == shard.map.end()) return;
  for (auto& e : it->second) {
    if (e.get() == &entry) {
      e->encoding.clear();  // no longer matches any key
      break;
    }
  }
}

CompileCache::Lookup CompileCache::get_or_compile(const CompileKey& key,
                                                  const Compiler& compiler) {
  Shard& shard = shard_for(key);
  if (const Artifact* artifact = ready_artifact(shard, key)) {
    return {artifact, false};
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  const auto [entry, owner] = entry_for(shard, key);
  if (!owner) return wait_for(*entry);
  try {
    StoreProbe probe = probe_store(key, compiler, /*wait=*/true);
    const bool compiled = !probe.artifact;
    if (compiled) {
      probe.artifact = compile_alone(key, compiler);
      store_compiled(probe, *probe.artifact);
    }
    probe.claim.reset();  // the entry is there (or cannot be): let waiters look
    return {publish(*entry, std::move(*probe.artifact), compiler), compiled};
  } catch (...) {
    abandon(shard, key, *entry, std::current_exception());
    throw;
  }
}

std::vector<CompileCache::BatchLookup> CompileCache::get_or_compile_batch(
    std::span<const CompileKey* const> keys, const BatchCompiler& batch) {
  std::vector<BatchLookup> results(keys.size());
  // The keys this call owns (it made their entries), in key order.
  struct Owned {
    std::size_t index;
    Entry* entry;
    Compiler compiler;
    StoreProbe probe;
  };
  std::vector<Owned> owned;
  std::vector<std::pair<std::size_t, Entry*>> others;  // another thread's
  for (std::size_t i = 0; i < keys.size(); ++i) {
    Shard& shard = shard_for(*keys[i]);
    if (const Artifact* artifact = ready_artifact(shard, *keys[i])) {
      results[i].artifact = artifact;
      continue;
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    const auto [entry, owner] = entry_for(shard, *keys[i]);
    if (!owner) {
      others.emplace_back(i, entry);
      continue;
    }
    try {
      owned.push_back(Owned{i, entry, batch.compiler_for(i), {}});
    } catch (...) {
      abandon(shard, *keys[i], *entry, std::current_exception());
      results[i].error = std::current_exception();
    }
  }
  const auto fail = [&](Owned& o, std::exception_ptr error) {
    abandon(shard_for(*keys[o.index]), *keys[o.index], *o.entry, error);
    results[o.index].error = std::move(error);
  };
  const auto finish = [&](Owned& o, Artifact artifact, bool compiled) {
    o.probe.claim.reset();
    results[o.index].artifact =
        publish(*o.entry, std::move(artifact), o.compiler);
    results[o.index].compiled = compiled;
  };

  // The store answers what it holds; what it does not hold is claimed
  // without waiting, and a key another process holds is left to the
  // waiting path below.
  std::vector<Owned*> together, alone;
  for (Owned& o : owned) {
    try {
      o.probe = probe_store(*keys[o.index], o.compiler, /*wait=*/false);
      if (o.probe.artifact) {
        finish(o, std::move(*o.probe.artifact), false);
      } else if (o.probe.busy) {
        alone.push_back(&o);
      } else {
        if (o.compiler.before_compile) o.compiler.before_compile();
        together.push_back(&o);
      }
    } catch (...) {
      fail(o, std::current_exception());
    }
  }

  if (!together.empty()) {
    std::vector<std::size_t> indices;
    for (const Owned* o : together) indices.push_back(o->index);
    std::vector<KeyOutcome> outcomes;
    const auto start = std::chrono::steady_clock::now();
    try {
      outcomes = batch.compile_together(indices);
    } catch (...) {
      outcomes.clear();  // the batch failed as a whole: each key alone
    }
    add_compile_time(keys[together.front()->index]->target(), start);
    for (std::size_t k = 0; k < together.size(); ++k) {
      Owned& o = *together[k];
      KeyOutcome* outcome = k < outcomes.size() ? &outcomes[k] : nullptr;
      try {
        if (outcome != nullptr && outcome->artifact) {
          if (o.compiler.counts_as_compile) count_compile(*keys[o.index]);
          store_compiled(o.probe, *outcome->artifact);
          finish(o, std::move(*outcome->artifact), true);
        } else if (outcome != nullptr && outcome->error) {
          if (o.compiler.counts_as_compile) count_compile(*keys[o.index]);
          fail(o, outcome->error);
        } else {
          alone.push_back(&o);
        }
      } catch (...) {
        fail(o, std::current_exception());
      }
    }
  }

  // One by one, as get_or_compile does: keys another process was compiling
  // (waiting for its claim now) and keys the batch left unanswered.
  for (Owned* o : alone) {
    try {
      if (o->probe.busy) {
        o->probe = probe_store(*keys[o->index], o->compiler, /*wait=*/true);
      }
      const bool compiled = !o->probe.artifact;
      if (compiled) {
        o->probe.artifact = compile_alone(*keys[o->index], o->compiler);
        store_compiled(o->probe, *o->probe.artifact);
      }
      finish(*o, std::move(*o->probe.artifact), compiled);
    } catch (...) {
      fail(*o, std::current_exception());
    }
  }
  for (const auto& [index, entry] : others) {
    try {
      results[index].artifact = wait_for(*entry).artifact;
    } catch (...) {
      results[index].error = std::current_exception();
    }
  }
  return results;
}

void CompileCache::count_hit() {
  launch_hits_.add(1);
}

CacheStats CompileCache::stats() const {
  CacheStats s;
  s.hits = hits_.load() + launch_hits_.sum();
  s.misses = misses_.load();
  s.compiles = compiles_.load();
  s.disk_hits = disk_hits_.load();
  s.disk_writes = disk_writes_.load();
  s.disk_rejects = disk_rejects_.load();
  s.compile_seconds = static_cast<double>(compile_nanoseconds_.load()) / 1e9;
  s.entries = entries_.load();
  s.remote_hits = remote_hits_.load();
  s.remote_misses = remote_misses_.load();
  s.remote_rejects = remote_rejects_.load();
  s.remote_errors = remote_errors_.load();
  s.remote_writes = remote_writes_.load();
  return s;
}

}  // namespace jitwarm::detail
