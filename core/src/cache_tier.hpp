// The tiers under the memory cache, as the memory cache asks them
// (compile_cache.hpp says where each sits in a lookup): the persistent store
// (disk_cache.hpp, with its read-only system layer and bundles' entries) and
// the remote tier (remote_cache.hpp).
//
// * A lookup names its entry once (EntryRef, cache_entry.hpp: key,
//   fingerprint, and the entry's name hashed from them) and hands that to
//   every tier it asks; a tier finds the entry under that name and never
//   hashes the key again.
// * Every tier's load answers in one shape, TierLoad: a hit and the tier it
//   came from, a miss, an entry rejected (the tier that held it, and why),
//   or a tier that could not answer. A bad entry or a failed tier is a
//   miss, never an exception.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include "artifact.hpp"
#include "cache_entry.hpp"
#include "cache_metrics.hpp"
#include "entry_trust.hpp"

namespace jitwarm::detail {

// What a tier's load found. A default TierLoad is a miss.
struct TierLoad {
  std::optional<Artifact> artifact;  // a hit
  CacheTier tier = CacheTier::disk;  // of a hit: disk, system, bundle, redis
  bool unavailable = false;          // the tier could not answer (an error, a
                                     // timeout, or down): a miss

  static TierLoad found(Artifact artifact, CacheTier tier) {
    TierLoad load;
    load.artifact = std::move(artifact);
    load.tier = tier;
    return load;
  }
  static TierLoad refused(CacheTier tier, RejectReason reason) {
    TierLoad load;
    load.reject(tier, reason);
    return load;
  }
  static TierLoad not_answered() {
    TierLoad load;
    load.unavailable = true;
    return load;
  }

  // An entry refused on the way, by the tier that held it (disk, system or
  // redis): a miss there, counted in
  // jitwarm_cache_rejected_entries_total{tier,reason}. One load may refuse
  // one and still hit: the disk cache refuses the user directory's entry
  // and reads the system layer's.
  void reject(CacheTier in, RejectReason reason) {
    rejects_[static_cast<std::size_t>(in)] = reason;
  }
  std::optional<RejectReason> rejected_in(CacheTier in) const {
    return rejects_[static_cast<std::size_t>(in)];
  }
  bool rejected() const {
    for (const auto& reason : rejects_)
      if (reason) return true;
    return false;
  }

  // Adds `later`, a load of the same lookup after this one (the store asked
  // again once the key is claimed): its hit, and its rejects. A tier that
  // refused in both keeps one reject, with the later reason: one bad entry
  // seen twice is one reject.
  void gather(TierLoad later) {
    if (later.artifact) {
      artifact = std::move(later.artifact);
      tier = later.tier;
    }
    for (std::size_t t = 0; t < kCacheTiers; ++t)
      if (later.rejects_[t]) rejects_[t] = later.rejects_[t];
  }

 private:
  std::array<std::optional<RejectReason>, kCacheTiers> rejects_{};  // by tier
};

// A persistent layer under the memory cache.
class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  // A corrupt or mismatched entry is a miss that the answer rejects, never
  // an exception.
  virtual TierLoad load(const EntryRef& entry) = 0;
  // Best effort: a failed write is logged and returns false, never throws.
  virtual bool store(const EntryRef& entry, const Artifact& artifact) = 0;

  // Held while this process compiles the entry's key and stores it, so
  // that other processes sharing the store wait for that entry instead of
  // compiling the key too. May wait (boundedly) for another process's
  // claim; nullptr when there is nothing to hold (the store cannot lock, or
  // the wait ran out). Either way the caller looks in the store again
  // before compiling. With `wait` false it tries once: nullptr with *busy
  // set when another process holds the key (a batch leaves that key to the
  // waiting path). Never throws.
  class Claim {
   public:
    virtual ~Claim() = default;
  };
  virtual std::unique_ptr<Claim> claim(const EntryRef& /*entry*/,
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
  // A hit, a miss, a value that failed the entry check (rejected in
  // CacheTier::redis), or `unavailable`: an error, a timeout, or skipped
  // while the tier is down.
  virtual TierLoad load(const EntryRef& entry) = 0;
  // False when the entry was not written (an error, a full or read-only
  // server, or the tier is down).
  virtual bool store(const EntryRef& entry, const Artifact& artifact) = 0;
};

}  // namespace jitwarm::detail
