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
//   then (format version 2) the signature block: the signer's key id and
//   the Ed25519 signature (each a u64 length and the bytes; both empty in
//   an unsigned bundle) of "jitwarm bundle signature\0" followed by the
//   SHA-256 of every byte of the file before the block (header and frame),
//   and nothing after it. Version 1 bundles (no signature block) are still
//   read, as unsigned bundles.
//
// A signed bundle's entries are signed too (export signs each entry with
// the bundle's key), so a node that requires trust loads them after the
// import as it loads any entry.
//
// read_bundle() checks everything before it returns anything: the header,
// the frame, each entry against its row (size, hash) and against itself
// (identify_entry, the check every tier makes), the trailing checksum, and
// that the file ends there. A bundle that fails any of it is an error that
// names the entry (its number and key) where reading stopped; so an import
// either has every entry or writes none. Signatures are checked by the
// caller, against its trust (bundle_signature_refusal).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cache_entry.hpp"
#include "entry_trust.hpp"

namespace jitwarm::detail {

inline constexpr uint32_t kBundleFormatVersion = 2;
inline constexpr uint32_t kOldestBundleFormatVersion = 1;
// Bounds on what a bundle may declare, so a corrupt count or size stops
// the reader before it allocates: 16 GiB of entries, 10 million of them.
inline constexpr uint64_t kMaxBundleContentBytes = 16ull << 30;
inline constexpr uint64_t kMaxBundleEntries = 10'000'000;

struct BundleItem {
  EntryIdentity identity;
  std::string bytes;  // the cache entry
};

// A bundle's signature: who signed, and what (the message the signature
// is over, built from the digest of the bundle's bytes).
struct BundleSignature {
  std::string signer;  // key id; empty: unsigned
  std::string signature;
  std::string message;
  // SHA-256 (hex) of the whole file, of the very bytes read: what
  // `import --sha256` pins, checked without reading the file twice.
  std::string file_sha256;
};

// Writes the bundle to a temporary file next to `path` and renames it, so a
// failed export leaves no half bundle; signed by `signer` when given (its
// entries are as given: sign them first). Returns the SHA-256 (hex) of the
// file, of the bytes as they were written (what --sha256 pins). Throws
// Error(JW_ERROR_IO).
std::string write_bundle(const std::filesystem::path& path,
                         const std::vector<BundleItem>& items,
                         const SigningKey* signer = nullptr);
// Throws Error(JW_ERROR_IO) when the file cannot be read, and
// Error(JW_ERROR_INVALID_ARGUMENT) when it is not a valid bundle; fills
// `signature` when given.
std::vector<BundleItem> read_bundle(const std::filesystem::path& path,
                                    BundleSignature* signature = nullptr);
// Why `trust` refuses a bundle of this signature ("it is signed by key
// ..., which is not trusted"); nullopt when it accepts it.
std::optional<std::string> bundle_signature_refusal(
    const BundleSignature& signature, const EntryTrust& trust);

}  // namespace jitwarm::detail
