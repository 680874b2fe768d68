// Cache bundles: a set of cache entries in one compressed, checksummed
// file, to ship a warmed cache to machines that should start warm
// (jitwarm.hpp export_cache_bundle / import_cache_bundle, `jitwarm cache
// export|import`).
//
// The file, in the order write_bundle() writes it:
//   magic "JWBUNDLE", u32 bundle format version, u32 entry format version
//   (cache_entry.hpp), then one zstd frame (with its content checksum)
//   holding:
//     u64 entry count N
//     N manifest rows: key text, target, entry name (each a u64 length and
//       the bytes), u64 entry size, u64 XXH3-64 of the entry
//     N entries, in the manifest's order (each a u64 length and the bytes
//       of a cache entry)
//     u64 XXH3-64 of everything in the frame before it
//   and nothing after the frame.
//
// read_bundle() checks everything before it returns anything: the header,
// the frame, each entry against its row (size, hash) and against itself
// (identify_entry, the check every tier makes), the trailing checksum, and
// that the file ends there. A bundle that fails any of it is an error that
// names the entry (its number and key) where reading stopped; so an import
// either has every entry or writes none.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cache_entry.hpp"

namespace jitwarm::detail {

inline constexpr uint32_t kBundleFormatVersion = 1;
// Bounds on what a bundle may declare, so a corrupt count or size stops
// the reader before it allocates: 16 GiB of entries, 10 million of them.
inline constexpr uint64_t kMaxBundleContentBytes = 16ull << 30;
inline constexpr uint64_t kMaxBundleEntries = 10'000'000;

struct BundleItem {
  EntryIdentity identity;
  std::string bytes;  // the cache entry
};

// Writes the bundle to a temporary file next to `path` and renames it, so a
// failed export leaves no half bundle. Throws Error(JW_ERROR_IO).
void write_bundle(const std::filesystem::path& path,
                  const std::vector<BundleItem>& items);
// Throws Error(JW_ERROR_IO) when the file cannot be read, and
// Error(JW_ERROR_INVALID_ARGUMENT) when it is not a valid bundle.
std::vector<BundleItem> read_bundle(const std::filesystem::path& path);

}  // namespace jitwarm::detail
