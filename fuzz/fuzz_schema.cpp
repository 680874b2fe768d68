// Fuzz target: schema import (KernelSchema::from_c) from any C schema a
// plugin could hand the core (schema_bytes.hpp). A schema it accepts must
// then be usable: warming it with its defaults (what `jitwarm warmup` does
// for a kernel a manifest names without parameters) ends in keys whose
// inputs reproduce them, or in a clear error, never a crash.
#include <cstddef>
#include <cstdint>

#include "fuzz_check.hpp"
#include "schema_bytes.hpp"

using namespace jitwarm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::DecodedSchema decoded;
  fuzz::decode_schema(
      std::string_view(reinterpret_cast<const char*>(data), size), decoded);
  std::optional<KernelSchema> schema;
  try {
    schema = KernelSchema::from_c(decoded.schema, "fuzz");
  } catch (const Error& e) {
    fuzz::expect_clear_error(e);
    return 0;
  }
  try {
    WarmupRequest request;
    request.kernel_name = schema->name();
    const auto keys =
        enumerate_warmup_keys(*schema, request, "cuda:sm_90", "fuzz");
    for (std::size_t i = 0; i < keys.size() && i < 8; ++i)
      (void)warmup_inputs_for(*schema, keys[i]);
  } catch (const Error& e) {
    fuzz::expect_clear_error(e);
  }
  return 0;
}
