// A runtime's caches: the in-memory compile cache and the tiers under it
// (the disk cache, with its read-only system layer, and the remote tier),
// built once from the cache settings (resolve_cache_settings, the one
// resolution of options and environment).
//
// * Built whole in the constructor and never rebuilt: the disk and remote
//   tiers are set up then or never (a forked warmup worker alone points the
//   memory cache at another store, warmup_execution_processes.cpp).
// * A directory someone named must work (the constructor throws); the
//   per-user default is a convenience: when it cannot be made, the caches
//   stay in memory with one warning and settings().problem says why.
// * It only stores: it must not compile, know implementations or plugins,
//   or pass the JIT monitor (the compile service does, compile_service.hpp).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <memory>

#include "compile_cache.hpp"
#include "disk_cache.hpp"
#include "log.hpp"

namespace jitwarm::detail {

class RuntimeCaches {
 public:
  RuntimeCaches(const RuntimeOptions& options, const Logger& logger);
  RuntimeCaches(const RuntimeCaches&) = delete;
  RuntimeCaches& operator=(const RuntimeCaches&) = delete;

  CompileCache& cache() { return cache_; }
  const CompileCache& cache() const { return cache_; }
  // What the settings resolved to, with `problem` when the directory
  // cannot keep entries.
  const CacheSettings& settings() const { return settings_; }
  // The persistent tier; null when the runtime has none.
  const std::shared_ptr<DiskCache>& disk_cache() const { return disk_cache_; }
  // What the tiers sign with and accept (entry_trust.hpp).
  const std::shared_ptr<const EntryTrust>& trust() const { return trust_; }

 private:
  CompileCache cache_;
  CacheSettings settings_;
  std::shared_ptr<const EntryTrust> trust_;
  std::shared_ptr<DiskCache> disk_cache_;     // may be null
  std::shared_ptr<RemoteTier> remote_cache_;  // may be null
};

}  // namespace jitwarm::detail
