// Fuzz target: CompileKey::decode (compile-key encodings come from cache
// entries and, through them, from other machines). A decoded key must
// re-encode to the very bytes (decode accepts canonical encodings only),
// give its text and hash, and decode again to an equal key.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"

using namespace jitwarm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const CompileKey key = CompileKey::decode(bytes);
    if (key.encoding() != bytes)
      fuzz::finding("decoded key re-encodes differently");
    (void)key.text();
    (void)key.hash();
    if (!(CompileKey::decode(key.encoding()) == key))
      fuzz::finding("key does not decode back to itself: " + key.text());
  } catch (const Error& e) {
    fuzz::expect_clear_error(e);
  }
  return 0;
}
