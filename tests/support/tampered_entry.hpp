// A cache entry tampered with as someone who can write a cache tier, but
// holds no signing key, can: a byte of its binary changed and its checksum
// made right again, so only a signature can tell (docs/operators.md,
// "Trust").
#pragma once

#define XXH_INLINE_ALL
#include <doctest/doctest.h>
#include <xxhash.h>

#include <string>

#include "cache_entry.hpp"

namespace jitwarm::test {

inline std::string tampered(std::string bytes) {
  std::string why;
  const std::optional<detail::ParsedEntry> e = detail::parse_entry(bytes, &why);
  REQUIRE_MESSAGE(e, why);
  REQUIRE_FALSE(e->binary.empty());
  const auto at = static_cast<std::size_t>(e->binary.data() - bytes.data());
  bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
  const uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
  for (int i = 0; i < 8; ++i)
    bytes[bytes.size() - 8 + i] = static_cast<char>(sum >> (8 * i));
  return bytes;
}

}  // namespace jitwarm::test
