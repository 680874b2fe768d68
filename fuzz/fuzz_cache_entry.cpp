// Fuzz target: the disk cache's entry parser (detail::parse_entry), which
// reads whatever is found at an entry's path. Each input is parsed as it
// is, then again with its trailing checksum made correct, so that the
// structure behind the checksum is reached too; a parsed entry's key is
// decoded as a load would.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cache_entry.hpp"
#include "fuzz_check.hpp"

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
  try {
    (void)CompileKey::decode(entry->key_encoding).text();
  } catch (const Error& e) {
    fuzz::expect_clear_error(e);
  }
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
