// Fuzz target: the disk cache's entry parser (detail::parse_entry), which
// reads whatever is found at an entry's path. Each input is parsed as it
// is, then again with its trailing checksum made correct, so that the
// structure behind the checksum is reached too; a parsed entry's key is
// decoded as a load would, and its signature checked against the one key
// the seeds are signed with (fuzz_key.hpp): every refusal has a reason, and
// only an entry that names the trusted key can be a bad signature.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cache_entry.hpp"
#include "fuzz_check.hpp"
#include "fuzz_key.hpp"

using namespace jitwarm;

namespace {

void parse(std::string_view bytes) {
  std::string why;
  const std::optional<detail::ParsedEntry> entry =
      detail::parse_entry(bytes, &why);
  if (!entry) {
    if (why.empty()) fuzz::finding("entry refused without a reason");
    return;
  }
  const auto inside = [&](std::string_view field) {
    return field.empty() ||
           (field.data() >= bytes.data() &&
            field.data() + field.size() <= bytes.data() + bytes.size());
  };
  if (!inside(entry->key_encoding) || !inside(entry->fingerprint) ||
      !inside(entry->format) || !inside(entry->entry_point) ||
      !inside(entry->binary)) {
    fuzz::finding("a parsed field points outside the entry");
  }
  if (!inside(entry->signer) || !inside(entry->signature) ||
      !inside(entry->signed_bytes)) {
    fuzz::finding("a signature field points outside the entry");
  }
  try {
    (void)CompileKey::decode(entry->key_encoding).text();
  } catch (const Error& e) {
    fuzz::expect_clear_error(e);
  }
  static const detail::EntryTrust trust(std::nullopt,
                                        {fuzz::fuzz_signing_key().public_key});
  const std::optional<detail::RejectReason> refused =
      detail::check_entry_signature(*entry, &trust, &why);
  if (refused) {
    if (why.empty()) fuzz::finding("signature refused without a reason");
    if (*refused == detail::RejectReason::bad_signature &&
        entry->signer != fuzz::fuzz_signing_key().public_key.id) {
      fuzz::finding("a bad signature from a key that is not trusted");
    }
  }
  detail::RejectReason reason = detail::RejectReason::corrupt;
  if (!detail::identify_entry(bytes, &why, &trust, &reason) && why.empty())
    fuzz::finding("identify_entry refused without a reason");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  parse(bytes);
  if (bytes.size() >= 8) {
    const uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
    for (int i = 0; i < 8; ++i)
      bytes[bytes.size() - 8 + i] = static_cast<char>(sum >> (8 * i));
    parse(bytes);
  }
  return 0;
}
