// A compile-cache entry: the bytes every tier keeps for one key (a file of
// the disk cache, a value of the remote tier, an entry of a bundle), and the
// one check every tier makes before it hands an artifact out.
//
// Name: XXH3-128 of (format version, key encoding, fingerprint), in hex,
// where the fingerprint is the implementation's text for everything else
// that changes the binary (source and headers, options, compiler version).
//
// Content, in the order serialize_entry() writes it (format version 2):
//   magic "JWCACHE\n", u32 format version,
//   the key encoding, the fingerprint, the artifact's format, its entry
//   point and its binary (each a u64 length and the bytes),
//   the signer's key id and the Ed25519 signature (signing.hpp) of
//   everything before the signer field (each a u64 length and the bytes;
//   both empty in an unsigned entry),
//   u64 XXH3-64 of everything before it.
// Version 1 entries (no signer and signature fields) are still read, as
// unsigned entries: a cache written before signatures stays warm wherever
// trust is not required.
//
// Reading: parse_entry() checks magic, version, structure and checksum;
// given an EntryTrust that requires signatures, entry_artifact() and
// identify_entry() check the signature too (entry_trust.hpp).
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

#include "artifact.hpp"
#include "entry_trust.hpp"

namespace jitwarm::detail {

// The version in an entry's name (and its remote tier key): bumped when an
// entry of the same key must no longer be found, so older entries are then
// misses (another name), never misread.
inline constexpr uint32_t kEntryNameVersion = 1;
// The version of the content that is written; bumped when the content
// changes. parse_entry() reads every version from kOldestEntryFormatVersion.
inline constexpr uint32_t kEntryFormatVersion = 2;
inline constexpr uint32_t kOldestEntryFormatVersion = 1;
// No artifact comes near this (a cubin of every kernel of a large model is a
// few MiB); no tier stores or reads a larger entry.
inline constexpr uint64_t kMaxEntryBytes = 256ull << 20;

std::string entry_name(const CompileKey& key, std::string_view fingerprint);

// The entry a lookup wants: its key, its fingerprint and the name they give
// it (entry_name), which every tier finds it under (a file of the disk
// cache, a value of the remote tier). Made once per lookup and handed down
// the tiers, so the name is hashed once, not by each tier it passes.
// It refers to the key, as a string_view does (the key outlives its lookup,
// and a copy would cost more than the name): it must not outlive the key.
class EntryRef {
 public:
  EntryRef(const CompileKey& key, std::string fingerprint);

  const CompileKey& key() const { return *key_; }
  const std::string& fingerprint() const { return fingerprint_; }
  const std::string& name() const { return name_; }

 private:
  const CompileKey* key_;
  std::string fingerprint_;
  std::string name_;
};

// The size serialize_entry() would give, without building it.
uint64_t entry_size(const CompileKey& key, std::string_view fingerprint,
                    const Artifact& artifact, bool signed_entry = false);
// Signed by `signer` when given.
std::string serialize_entry(const CompileKey& key, std::string_view fingerprint,
                            const Artifact& artifact,
                            const SigningKey* signer = nullptr);
// The same entry signed by `signer` (replacing any signature it had), for a
// bundle signed as it is exported; nullopt when `bytes` do not parse.
std::optional<std::string> resign_entry(std::string_view bytes,
                                        const SigningKey& signer);

// The fields of an entry, pointing into the bytes they were parsed from.
struct ParsedEntry {
  uint32_t version = 0;
  std::string_view key_encoding, fingerprint, format, entry_point, binary;
  std::string_view signer;     // key id; empty: unsigned
  std::string_view signature;  // over `signed_bytes`
  std::string_view signed_bytes;
};
// Checks an entry's structure and checksum; nullopt (with the reason in
// `why`) when anything is off. Pure: the fuzz target calls it directly.
std::optional<ParsedEntry> parse_entry(std::string_view bytes,
                                       std::string* why);

// Whether `trust` (may be null: nothing required) accepts the entry's
// signature; nullopt when it does.
std::optional<RejectReason> check_entry_signature(const ParsedEntry& entry,
                                                  const EntryTrust* trust,
                                                  std::string* why);

// The artifact of an entry found where `key` and `fingerprint`'s entry
// belongs, and signed as `trust` requires (may be null), or nullopt with
// the reason ("checksum mismatch", "it belongs to another key or build
// ...", "it is not signed ..."), and its kind in `reason` when given.
std::optional<Artifact> entry_artifact(std::string_view bytes,
                                       const CompileKey& key,
                                       std::string_view fingerprint,
                                       std::string* why,
                                       const EntryTrust* trust = nullptr,
                                       RejectReason* reason = nullptr);

// What an entry says it is, once checked: its key, and the name it belongs
// under.
struct EntryIdentity {
  CompileKey key;
  std::string fingerprint;
  std::string name;
  std::string signer;  // the signer's key id; empty: unsigned
};
// Parses, decodes the key and computes the name (and checks the signature
// as `trust` requires, when given); nullopt with the reason when any step
// fails, and its kind in `reason` when given.
std::optional<EntryIdentity> identify_entry(std::string_view bytes,
                                            std::string* why,
                                            const EntryTrust* trust = nullptr,
                                            RejectReason* reason = nullptr);

}  // namespace jitwarm::detail
