#include "cache_entry.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <utility>

#include "byte_fields.hpp"

namespace jitwarm::detail {
namespace {

constexpr char kEntryMagic[8] = {'J', 'W', 'C', 'A', 'C', 'H', 'E', '\n'};

}  // namespace

std::string entry_name(const CompileKey& key, std::string_view fingerprint) {
  std::string material;
  put_u32(material, kEntryNameVersion);
  put_field(material, key.encoding());
  put_field(material, fingerprint);
  const XXH128_hash_t h = XXH3_128bits(material.data(), material.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

EntryRef::EntryRef(const CompileKey& key, std::string fingerprint)
    : key_(&key),
      fingerprint_(std::move(fingerprint)),
      name_(entry_name(key, fingerprint_)) {}

uint64_t entry_size(const CompileKey& key, std::string_view fingerprint,
                    const Artifact& artifact, bool signed_entry) {
  // Magic, version, seven sized fields, checksum.
  return sizeof(kEntryMagic) + 4 + 7 * 8 + key.encoding().size() +
         fingerprint.size() + artifact.format.size() +
         artifact.entry_point.size() + artifact.binary.size() +
         (signed_entry ? kKeyIdBytes + kSignatureBytes : 0) + 8;
}

namespace {

// An entry up to its binary: magic, version and the five fields, in the
// order the header comment gives.
std::string entry_fields(std::string_view key_encoding,
                         std::string_view fingerprint, std::string_view format,
                         std::string_view entry_point, std::string_view binary,
                         uint64_t reserve) {
  std::string out(kEntryMagic, sizeof(kEntryMagic));
  out.reserve(reserve);
  put_u32(out, kEntryFormatVersion);
  for (const std::string_view field :
       {key_encoding, fingerprint, format, entry_point, binary})
    put_field(out, field);
  return out;
}

// The signer and signature fields and the checksum after `out`, which holds
// an entry up to its binary.
void finish_entry(std::string& out, const SigningKey* signer) {
  if (signer != nullptr) {
    const std::string signature = sign_message(*signer, out);
    put_field(out, signer->public_key.id);
    put_field(out, signature);
  } else {
    put_field(out, {});
    put_field(out, {});
  }
  put_u64(out, XXH3_64bits(out.data(), out.size()));
}

}  // namespace

std::string serialize_entry(const CompileKey& key, std::string_view fingerprint,
                            const Artifact& artifact,
                            const SigningKey* signer) {
  std::string out =
      entry_fields(key.encoding(), fingerprint, artifact.format,
                   artifact.entry_point, artifact.binary,
                   entry_size(key, fingerprint, artifact, signer != nullptr));
  finish_entry(out, signer);
  return out;
}

std::optional<std::string> resign_entry(std::string_view bytes,
                                        const SigningKey& signer) {
  std::string why;
  const std::optional<ParsedEntry> e = parse_entry(bytes, &why);
  if (!e) return std::nullopt;
  std::string out =
      entry_fields(e->key_encoding, e->fingerprint, e->format, e->entry_point,
                   e->binary, bytes.size() + kKeyIdBytes + kSignatureBytes);
  finish_entry(out, &signer);
  return out;
}

std::optional<ParsedEntry> parse_entry(std::string_view bytes,
                                       std::string* why) {
  if (bytes.size() < sizeof(kEntryMagic) + 4 + 8 ||
      std::memcmp(bytes.data(), kEntryMagic, sizeof(kEntryMagic)) != 0) {
    *why = "bad magic";
    return std::nullopt;
  }
  Cursor c{bytes.substr(0, bytes.size() - 8), sizeof(kEntryMagic)};
  const uint64_t version = c.u(4);
  if (version < kOldestEntryFormatVersion || version > kEntryFormatVersion) {
    *why = fmt::format("format version {} (this build reads {} to {})", version,
                       kOldestEntryFormatVersion, kEntryFormatVersion);
    return std::nullopt;
  }
  ParsedEntry e;
  e.version = static_cast<uint32_t>(version);
  e.key_encoding = c.field();
  e.fingerprint = c.field();
  e.format = c.field();
  e.entry_point = c.field();
  e.binary = c.field();
  e.signed_bytes = bytes.substr(0, c.pos);
  if (version >= 2) {
    e.signer = c.field();
    e.signature = c.field();
    if (c.ok && !((e.signer.empty() && e.signature.empty()) ||
                  (e.signer.size() == kKeyIdBytes &&
                   e.signature.size() == kSignatureBytes))) {
      *why = "malformed signature fields";
      return std::nullopt;
    }
  }
  if (!c.at_end()) {
    *why = "truncated or malformed";
    return std::nullopt;
  }
  Cursor tail{bytes, bytes.size() - 8};
  const uint64_t stored = tail.u(8);
  if (stored != XXH3_64bits(bytes.data(), bytes.size() - 8)) {
    *why = "checksum mismatch";
    return std::nullopt;
  }
  return e;
}

std::optional<RejectReason> check_entry_signature(const ParsedEntry& entry,
                                                  const EntryTrust* trust,
                                                  std::string* why) {
  if (trust == nullptr) return std::nullopt;
  return trust->check(entry.signer, entry.signed_bytes, entry.signature, why);
}

std::optional<Artifact> entry_artifact(
    std::string_view bytes, const CompileKey& key, std::string_view fingerprint,
    std::string* why, const EntryTrust* trust, RejectReason* reason) {
  RejectReason ignored;
  if (reason == nullptr) reason = &ignored;
  *reason = RejectReason::corrupt;
  const std::optional<ParsedEntry> e = parse_entry(bytes, why);
  if (!e) return std::nullopt;
  if (e->key_encoding != key.encoding() || e->fingerprint != fingerprint) {
    *why = "it belongs to another key or build (hash collision or stale entry)";
    return std::nullopt;
  }
  if (const auto refused = check_entry_signature(*e, trust, why)) {
    *reason = *refused;
    return std::nullopt;
  }
  Artifact a;
  a.binary = std::string(e->binary);
  a.format = std::string(e->format);
  a.entry_point = std::string(e->entry_point);
  return a;
}

std::optional<EntryIdentity> identify_entry(std::string_view bytes,
                                            std::string* why,
                                            const EntryTrust* trust,
                                            RejectReason* reason) {
  RejectReason ignored;
  if (reason == nullptr) reason = &ignored;
  *reason = RejectReason::corrupt;
  const std::optional<ParsedEntry> e = parse_entry(bytes, why);
  if (!e) return std::nullopt;
  try {
    CompileKey key = CompileKey::decode(e->key_encoding);
    if (const auto refused = check_entry_signature(*e, trust, why)) {
      *reason = *refused;
      return std::nullopt;
    }
    std::string name = entry_name(key, e->fingerprint);
    return EntryIdentity{std::move(key), std::string(e->fingerprint),
                         std::move(name), std::string(e->signer)};
  } catch (const Error& error) {
    *why = fmt::format("its key does not decode ({})", error.what());
    return std::nullopt;
  }
}

}  // namespace jitwarm::detail
