#include "compile_cache.hpp"

#include <chrono>
#include <exception>

#include "errors.hpp"

namespace jitwarm::detail {

uint64_t next_artifact_id() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

struct CompileCache::Entry {
  std::string encoding;  // the full key, to rule out hash collisions
  std::mutex mutex;
  std::condition_variable ready_cv;
  enum class State { compiling, ready, failed } state = State::compiling;
  Artifact artifact;
  std::exception_ptr error;
  // Read without the entry mutex on the hit path: set (release) after the
  // artifact is complete.
  std::atomic<bool> ready{false};
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

std::optional<Artifact> CompileCache::load_remote(
    const CompileKey& key, const std::string& fingerprint) {
  RemoteTier::Lookup found = remote_->load(key, fingerprint);
  switch (found.outcome) {
    case RemoteTier::Outcome::hit:
      remote_hits_.fetch_add(1, std::memory_order_relaxed);
      // The next process on this machine finds it locally.
      if (store_ && store_->store(key, fingerprint, *found.artifact))
        disk_writes_.fetch_add(1, std::memory_order_relaxed);
      return std::move(found.artifact);
    case RemoteTier::Outcome::miss:
      remote_misses_.fetch_add(1, std::memory_order_relaxed);
      break;
    case RemoteTier::Outcome::rejected:
      remote_rejects_.fetch_add(1, std::memory_order_relaxed);
      break;
    case RemoteTier::Outcome::unavailable:
      remote_errors_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  return std::nullopt;
}

CompileCache::Shard& CompileCache::shard_for(const CompileKey& key) const {
  return shards_[key.hash().lo % kShards];
}

const Artifact* CompileCache::find(const CompileKey& key) const {
  Shard& shard = shard_for(key);
  std::shared_lock lock(shard.mutex);
  Entry* e = shard.find_locked(key);
  return e != nullptr && e->ready.load(std::memory_order_acquire) ? &e->artifact
                                                                  : nullptr;
}

const Artifact* CompileCache::hit(const CompileKey& key) {
  const Artifact* artifact = find(key);
  if (artifact != nullptr) hits_.fetch_add(1, std::memory_order_relaxed);
  return artifact;
}

CompileCache::Lookup CompileCache::get_or_compile(const CompileKey& key,
                                                  const Compiler& compiler) {
  Shard& shard = shard_for(key);
  {
    std::shared_lock lock(shard.mutex);
    Entry* e = shard.find_locked(key);
    if (e != nullptr && e->ready.load(std::memory_order_acquire)) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return {&e->artifact, false};
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);

  Entry* entry = nullptr;
  bool owner = false;
  {
    std::unique_lock lock(shard.mutex);
    entry = shard.find_locked(key);
    if (entry == nullptr) {
      auto fresh = std::make_unique<Entry>();
      fresh->encoding = key.encoding();
      entry = fresh.get();
      shard.map[key.hash()].push_back(std::move(fresh));
      owner = true;
    }
  }

  if (!owner) {
    std::unique_lock lock(entry->mutex);
    // Waiters of a failed attempt share its error; the failed entry is then
    // unreachable, so the next call starts a fresh attempt.
    entry->ready_cv.wait(
        lock, [&] { return entry->state != Entry::State::compiling; });
    if (entry->state == Entry::State::ready) return {&entry->artifact, false};
    std::rethrow_exception(entry->error);
  }

  try {
    std::optional<Artifact> artifact;
    std::optional<std::string> fingerprint;
    // Held from before the second look in the store until the compiled
    // artifact is stored: other processes wait for it (ArtifactStore::claim).
    std::unique_ptr<ArtifactStore::Claim> claim;
    if ((store_ || remote_) && compiler.fingerprint)
      fingerprint = compiler.fingerprint();
    if (fingerprint && store_) {
      bool rejected = false;
      artifact = store_->load(key, *fingerprint, &rejected);
      if (artifact) {
        disk_hits_.fetch_add(1, std::memory_order_relaxed);
      } else if (remote_) {
        artifact = load_remote(key, *fingerprint);
      }
      if (!artifact) {
        // Another process may be compiling this key right now: wait for
        // its claim, then look again (locally: that process stores there
        // first, and the remote tier was just asked).
        claim = store_->claim(key, *fingerprint);
        artifact = store_->load(key, *fingerprint, &rejected);
        if (artifact) disk_hits_.fetch_add(1, std::memory_order_relaxed);
      }
      // One corrupt entry seen twice is one reject.
      if (rejected) disk_rejects_.fetch_add(1, std::memory_order_relaxed);
    } else if (fingerprint && remote_) {
      artifact = load_remote(key, *fingerprint);
    }
    const bool compiled = !artifact.has_value();
    if (compiled) {
      if (compiler.before_compile) compiler.before_compile();
      const auto start = std::chrono::steady_clock::now();
      if (compiler.counts_as_compile)
        compiles_.fetch_add(1, std::memory_order_relaxed);
      artifact = compiler.compile();
      if (compiler.counts_as_compile) {
        compile_nanoseconds_.fetch_add(
            static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count()),
            std::memory_order_relaxed);
      }
      if (fingerprint && store_ &&
          store_->store(key, *fingerprint, *artifact)) {
        disk_writes_.fetch_add(1, std::memory_order_relaxed);
      }
      // Written back only what was compiled: an artifact that came from the
      // remote tier is there already.
      if (fingerprint && remote_) {
        if (remote_->store(key, *fingerprint, *artifact)) {
          remote_writes_.fetch_add(1, std::memory_order_relaxed);
        } else {
          remote_errors_.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    claim.reset();  // the entry is there (or cannot be): let waiters look
    artifact->id = next_artifact_id();
    if (compiler.finalize) compiler.finalize(*artifact);
    {
      std::lock_guard lock(entry->mutex);
      entry->artifact = std::move(*artifact);
      entry->state = Entry::State::ready;
      entry->ready.store(true, std::memory_order_release);
    }
    entries_.fetch_add(1, std::memory_order_relaxed);
    entry->ready_cv.notify_all();
    return {&entry->artifact, compiled};
  } catch (...) {
    {
      std::lock_guard lock(entry->mutex);
      entry->state = Entry::State::failed;
      entry->error = std::current_exception();
    }
    entry->ready_cv.notify_all();
    // Forget the failed entry so a later call compiles again; waiters hold
    // it by pointer, so it is kept (not freed) until the cache dies.
    {
      std::unique_lock lock(shard.mutex);
      auto it = shard.map.find(key.hash());
      if (it != shard.map.end()) {
        for (auto& e : it->second) {
          if (e.get() == entry) {
            e->encoding.clear();  // no longer matches any key
            break;
          }
        }
      }
    }
    throw;
  }
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
