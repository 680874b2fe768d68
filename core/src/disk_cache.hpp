// The persistent compile cache: one file per key in a directory that several
// processes may share, plus an optional read-only system cache under it.
//
// An entry's name and content are cache_entry.hpp's (shared with the remote
// tier and bundles); a file is named by the entry's name under v1/<first two
// hex digits>/. Readers check everything (entry_artifact), so a corrupt,
// truncated or mismatched entry is a miss. Writers write a temporary file in
// the same directory and rename it, so readers never see half an entry and need
// no lock. Reads refresh the entry's modification time, which is what LRU
// eviction orders by.
//
// Whatever is found at an entry's path is untrusted:
// * Only a regular file of at most kMaxEntryBytes is read, opened with
//   O_NOFOLLOW | O_NONBLOCK (bounded_file.hpp). A FIFO, a device, a
//   directory, a symbolic link (dangling or not) or an oversized file is a
//   corrupt entry: a miss that is counted (rejected), reported by verify(),
//   and replaced by the next store (which removes a directory in the way).
// * An entry that vanishes between listing and reading (a concurrent prune)
//   is not corrupt; it is simply gone.
// * Temporary files (".<entry>.tmp.<pid>.<random>") and lock files
//   (".<entry>.lock") older than kStaleFileAge are leftovers of a process
//   that died mid-write or mid-compile: prune() and verify() remove them,
//   and store() sweeps each directory it writes to once per process.
//
// Cross-process de-duplication (claim()): a process about to compile a key
// takes an flock on the key's lock file next to the entry; another process
// wanting the same key waits for it, then finds the entry and compiles
// nothing. flock is released by the kernel when its holder dies, so a
// crashed compiler never blocks anyone, and a waiter gives up after
// lock_wait() and compiles anyway, so a stuck one cannot either.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bundle_index.hpp"
#include "cache_entry.hpp"
#include "cache_tier.hpp"
#include "log.hpp"

namespace jitwarm::detail {

struct DiskCacheStats {
  std::size_t entries = 0;
  uint64_t bytes = 0;
  std::size_t corrupt = 0;  // filled by verify()
  std::vector<std::string> corrupt_files;
  // Filled by verify() and prune(): leftovers of dead writers removed.
  std::size_t stale_files_removed = 0;
};

// An entry as found in a cache directory, checked (identify_entry, and its
// file's name against its content).
struct FoundEntry {
  std::filesystem::path path;
  uint64_t bytes = 0;
  bool system = false;  // in the read-only system layer
  // nullopt: a corrupt entry, `why` says how.
  std::optional<EntryIdentity> identity;
  std::string why;
  std::string content;  // the entry's bytes, valid during the visit
};

class DiskCache : public ArtifactStore {
 public:
  static constexpr uint32_t kFormatVersion = kEntryFormatVersion;
  // A larger file at an entry's path is not read (cache_entry.hpp).
  static constexpr uint64_t kMaxEntryBytes = detail::kMaxEntryBytes;
  // A writer renames its temporary file within moments, and a lock is held
  // for one compile; files older than this belong to dead processes.
  static constexpr std::chrono::minutes kStaleFileAge{10};

  enum class Opening {
    create,    // make the directory when missing (a runtime, an import)
    existing,  // a missing directory is Error(JW_ERROR_NOT_FOUND): tools
               // that look at a cache never make one
  };
  // `system_directory` (may be empty) is only ever read. `max_bytes` 0 = no
  // budget. Throws Error(JW_ERROR_IO) when the directory cannot be created
  // (or is not one).
  DiskCache(std::filesystem::path directory,
            std::filesystem::path system_directory, uint64_t max_bytes,
            const Logger* logger, Opening opening = Opening::create);

  // Entries are signed with its signing key as they are written, and
  // loads accept only what it trusts (entry_trust.hpp); none: unsigned,
  // and nothing required. Set before the cache is shared.
  void set_trust(std::shared_ptr<const EntryTrust> trust) {
    trust_ = std::move(trust);
  }
  const EntryTrust* trust() const { return trust_.get(); }

  // Why entries cannot be written here ("Read-only file system"), found by
  // creating and removing a file; nullopt when they can.
  std::optional<std::string> write_problem() const;

  // The user directory's entry, else the system layer's (a miss or a
  // reject in the first, each layer's reject in the answer). A hit of an
  // entry a bundle brought (bundle_index.hpp) is a bundle hit, and marks
  // that entry as hit.
  TierLoad load(const EntryRef& entry) override;
  bool store(const EntryRef& entry, const Artifact& artifact) override;
  std::unique_ptr<Claim> claim(const EntryRef& entry, bool wait = true,
                               bool* busy = nullptr) override;
  // How long claim() waits for another process's compile (default 2
  // minutes) before it gives up and lets this one compile too.
  void set_lock_wait(std::chrono::milliseconds wait) { lock_wait_ = wait; }

  // Plugin byte cache (jw_host_api cache_get/cache_put), in its own folder.
  std::optional<std::string> get_blob(std::string_view key);
  bool put_blob(std::string_view key, std::string_view value);

  DiskCacheStats stats() const;
  // Reads and checks every entry, of the system layer too when asked; an
  // entry removed meanwhile is skipped. For listings and bundles.
  using EntryVisitor = std::function<void(const FoundEntry&)>;
  void for_each_entry(const EntryVisitor& visit, bool with_system) const;
  // Removes the entries of these targets (every entry, corrupt ones and
  // plugin blobs included, when `targets` is empty), and stale leftovers.
  struct Cleared {
    std::size_t entries = 0;
    uint64_t bytes = 0;
    std::map<std::string, std::size_t> by_target;  // corrupt: "(corrupt)"
  };
  Cleared clear(const std::set<std::string>& targets);
  // Writes an entry checked elsewhere (a bundle's) under its name.
  enum class Put { written, present, failed };
  Put put_entry(const EntryIdentity& identity, std::string_view bytes);
  // Reads every entry and checks its checksum and structure; removes stale
  // temporary and lock files.
  DiskCacheStats verify() const;
  // Removes stale temporary and lock files, then least recently used
  // entries until the total is within `budget` bytes (the configured budget
  // when 0; with neither, only the leftovers go). Returns the number of
  // entries removed.
  std::size_t prune(uint64_t budget = 0);

  const std::filesystem::path& directory() const { return directory_; }
  const std::filesystem::path& system_directory() const {
    return system_directory_;
  }
  // Where the entry of `key` and `fingerprint` is kept (for tools and
  // tests: a lookup has its entry's name already).
  std::filesystem::path entry_path(const CompileKey& key,
                                   std::string_view fingerprint) const;
  // The path of the entry named `name` (cache_entry.hpp entry_name).
  std::filesystem::path entry_path_for_name(const std::string& name) const {
    return path_for_name(name);
  }

 private:
  std::filesystem::path path_for_name(const std::string& name) const;
  // The entry at `path`, of the layer `layer` (disk or system): a hit, a
  // miss, or rejected in that layer (with a warning).
  TierLoad read_entry(const std::filesystem::path& path, const EntryRef& entry,
                      CacheTier layer) const;
  bool write_atomically(const std::filesystem::path& path,
                        const std::string& bytes);
  // Once per directory per process: removes its stale leftovers.
  void sweep_once(const std::filesystem::path& directory);

  std::filesystem::path directory_;
  std::filesystem::path system_directory_;
  uint64_t max_bytes_;
  const Logger* logger_;
  std::atomic<uint64_t> written_since_prune_{0};
  std::chrono::milliseconds lock_wait_{std::chrono::minutes(2)};
  std::mutex swept_mutex_;
  std::set<std::filesystem::path> swept_;
  BundleHits bundle_hits_;
  std::shared_ptr<const EntryTrust> trust_;
};

}  // namespace jitwarm::detail
