// A compile-cache entry: the bytes every tier keeps for one key (a file of
// the disk cache, a value of the remote tier, an entry of a bundle), and the
// one check every tier makes before it hands an artifact out.
//
// Name: XXH3-128 of (format version, key encoding, fingerprint), in hex,
// where the fingerprint is the implementation's text for everything else
// that changes the binary (source and headers, options, compiler version).
//
// Content, in the order serialize_entry() writes it:
//   magic "JWCACHE\n", u32 format version,
//   the key encoding, the fingerprint, the artifact's format, its entry
//   point and its binary (each a u64 length and the bytes),
//   u64 XXH3-64 of everything before it.
//
// Reading: parse_entry() checks magic, version, structure and checksum.
// A lookup then checks that the entry is the one it asked for, its key and
// fingerprint (entry_artifact()); an entry met without a key in hand
// (verify, a bundle, a listing) must have a key that decodes and a name
// that is the hash of its content (identify_entry()). Whatever is off comes
// back as a reason, never as an exception: every tier treats a bad entry as
// a miss.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "compile_cache.hpp"

namespace jitwarm::detail {

// Bumped whenever the content or the name changes: older entries are then
// misses (another name), never misread.
inline constexpr uint32_t kEntryFormatVersion = 1;
// No artifact comes near this (a cubin of every kernel of a large model is a
// few MiB); no tier stores or reads a larger entry.
inline constexpr uint64_t kMaxEntryBytes = 256ull << 20;

std::string entry_name(const CompileKey& key, std::string_view fingerprint);
// The size serialize_entry() would give, without building it.
uint64_t entry_size(const CompileKey& key, std::string_view fingerprint,
                    const Artifact& artifact);
std::string serialize_entry(const CompileKey& key, std::string_view fingerprint,
                            const Artifact& artifact);

// The fields of an entry, pointing into the bytes they were parsed from.
struct ParsedEntry {
  std::string_view key_encoding, fingerprint, format, entry_point, binary;
};
// Checks an entry's structure and checksum; nullopt (with the reason in
// `why`) when anything is off. Pure: the fuzz target calls it directly.
std::optional<ParsedEntry> parse_entry(std::string_view bytes,
                                       std::string* why);

// The artifact of an entry found where `key` and `fingerprint`'s entry
// belongs, or nullopt with the reason ("checksum mismatch", "it belongs to
// another key or build ...").
std::optional<Artifact> entry_artifact(std::string_view bytes,
                                       const CompileKey& key,
                                       std::string_view fingerprint,
                                       std::string* why);

// What an entry says it is, once checked: its key, and the name it belongs
// under.
struct EntryIdentity {
  CompileKey key;
  std::string fingerprint;
  std::string name;
};
// Parses, decodes the key and computes the name; nullopt with the reason
// when any step fails.
std::optional<EntryIdentity> identify_entry(std::string_view bytes,
                                            std::string* why);

}  // namespace jitwarm::detail
