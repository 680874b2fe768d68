// The persistent compile cache: one file per key in a directory that several
// processes may share, plus an optional read-only system cache under it.
//
// Entry name: XXH3-128 of (cache format version, key encoding, fingerprint),
// where the fingerprint is the implementation's text for everything else
// that changes the binary (source and headers, options, compiler version).
// Entry content: magic, format version, the full key encoding, the
// fingerprint, the artifact, and an XXH3-64 checksum of all of it. Readers
// check everything, so a corrupt, truncated or mismatched entry is a miss.
// Writers write a temporary file in the same directory and rename it, so
// readers never see half an entry and need no lock. Reads refresh the
// entry's modification time, which is what LRU eviction orders by.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "compile_cache.hpp"
#include "log.hpp"

namespace jitwarm::detail {

struct DiskCacheStats {
  std::size_t entries = 0;
  uint64_t bytes = 0;
  std::size_t corrupt = 0;  // filled by verify()
  std::vector<std::string> corrupt_files;
};

class DiskCache : public ArtifactStore {
 public:
  static constexpr uint32_t kFormatVersion = 1;

  // `directory` is created when missing. `system_directory` (may be empty) is
  // only ever read. `max_bytes` 0 = no budget.
  DiskCache(std::filesystem::path directory,
            std::filesystem::path system_directory, uint64_t max_bytes,
            const Logger* logger);

  std::optional<Artifact> load(const CompileKey& key,
                               std::string_view fingerprint,
                               bool* rejected) override;
  bool store(const CompileKey& key, std::string_view fingerprint,
             const Artifact& artifact) override;

  // Plugin byte cache (jw_host_api cache_get/cache_put), in its own folder.
  std::optional<std::string> get_blob(std::string_view key);
  bool put_blob(std::string_view key, std::string_view value);

  DiskCacheStats stats() const;
  // Reads every entry and checks its checksum and structure.
  DiskCacheStats verify() const;
  // Removes least recently used entries until the total is within `budget`
  // bytes (the configured budget when 0). Returns the number removed.
  std::size_t prune(uint64_t budget = 0);

  const std::filesystem::path& directory() const { return directory_; }
  std::filesystem::path entry_path(const CompileKey& key,
                                   std::string_view fingerprint) const;

 private:
  std::optional<Artifact> read_entry(const std::filesystem::path& path,
                                     const CompileKey& key,
                                     std::string_view fingerprint,
                                     bool* rejected) const;
  bool write_atomically(const std::filesystem::path& path,
                        const std::string& bytes);

  std::filesystem::path directory_;
  std::filesystem::path system_directory_;
  uint64_t max_bytes_;
  const Logger* logger_;
  std::atomic<uint64_t> written_since_prune_{0};
};

// Parses "512M", "2G", "1000000" (bytes); throws Error on bad text.
uint64_t parse_byte_size(std::string_view text);

}  // namespace jitwarm::detail
