// Little-endian integers and length-prefixed fields: what the compile key,
// the cache entry, the plugin blob and the bundle formats are written in
// (and the schema fuzzer's byte format, fuzz/schema_bytes.hpp). put_le and
// get_le are the one codec; each format's reader checks lengths its own way
// (compile_key.cpp's Reader throws with its own messages). Reading never
// trusts a length: a Cursor that runs out of bytes (or meets a field larger
// than its bound) stops, and says so through `ok`, instead of reading past
// its input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jitwarm::detail {

// The low `bytes` (at most 8) bytes of `v`, least significant first.
inline void put_le(std::string& out, uint64_t v, int bytes) {
  char buffer[8];
  for (int i = 0; i < bytes; ++i) buffer[i] = static_cast<char>(v >> (8 * i));
  out.append(buffer, static_cast<std::size_t>(bytes));
}
// The `bytes` (at most 8) bytes at `in`, least significant first; the
// caller has checked that they are there.
inline uint64_t get_le(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  }
  return v;
}

inline void put_u32(std::string& out, uint32_t v) {
  put_le(out, v, 4);
}
inline void put_u64(std::string& out, uint64_t v) {
  put_le(out, v, 8);
}
// A u64 length, then the bytes.
inline void put_field(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

struct Cursor {
  std::string_view in;
  std::size_t pos = 0;
  bool ok = true;
  // No field a jitwarm format writes comes near this; a corrupt length
  // larger than it stops the cursor before anything is allocated.
  uint64_t max_field = 1ull << 30;

  uint64_t u(int bytes) {
    if (!ok || in.size() - pos < static_cast<std::size_t>(bytes)) {
      ok = false;
      return 0;
    }
    const uint64_t v = get_le(in.data() + pos, bytes);
    pos += bytes;
    return v;
  }
  std::string_view field() {
    const uint64_t n = u(8);
    if (!ok || n > max_field || in.size() - pos < n) {
      ok = false;
      return {};
    }
    std::string_view s = in.substr(pos, n);
    pos += n;
    return s;
  }
  bool at_end() const { return ok && pos == in.size(); }
};

}  // namespace jitwarm::detail
