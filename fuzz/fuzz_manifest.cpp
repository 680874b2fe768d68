// Fuzz target: warmup manifests, parsed (parse_warmup_manifest) and planned
// (enumerate_warmup_keys) against the kernel set's schemas, as `jitwarm
// warmup --manifest` does. A request for a kernel outside the set is
// planned against a set schema chosen by its name, so its axes are
// exercised whatever the name. For the first keys of each request, record
// mode's round trip must hold: the entry manifest_entry_for_key writes
// parses and plans back to that one key (warmup_inputs_for, inside it, also
// checks that the key's inputs reproduce it).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "fuzz_check.hpp"
#include "kernel_set_schemas.hpp"

using namespace jitwarm;

namespace {

constexpr const char* kTarget = "cuda:sm_90";
constexpr std::size_t kRoundTrips = 8;  // per request: enough, and fast

const KernelSchema& schema_for(const std::string& name) {
  const auto& schemas = fuzz::kernel_set_schemas();
  for (const KernelSchema& s : schemas) {
    if (s.name() == name || s.short_name() == name) return s;
  }
  return schemas[std::hash<std::string>{}(name) % schemas.size()];
}

void round_trip(const KernelSchema& schema, const CompileKey& key) {
  try {
    const std::string entry = manifest_entry_for_key(schema, key, "cuda");
    const WarmupManifest back = parse_warmup_manifest(entry, "recorded.toml");
    if (back.requests.size() != 1)
      fuzz::finding("recorded entry: not one request");
    const auto again =
        enumerate_warmup_keys(schema, back.requests[0], kTarget, "fuzz");
    if (again.size() != 1 || !(again[0] == key))
      fuzz::finding("recorded entry does not warm its key " + key.text());
  } catch (const Error& e) {
    fuzz::finding(std::string("record mode round trip of ") + key.text() +
                  ": " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  WarmupManifest manifest;
  try {
    manifest = parse_warmup_manifest(text, "fuzz.toml");
  } catch (const Error& e) {
    fuzz::expect_clear_error(e);
    return 0;
  }
  for (const WarmupRequest& request : manifest.requests) {
    const KernelSchema& schema = schema_for(request.kernel_name);
    std::vector<CompileKey> keys;
    try {
      keys = enumerate_warmup_keys(schema, request, kTarget, "fuzz");
    } catch (const Error& e) {
      fuzz::expect_clear_error(e);
      continue;
    }
    for (std::size_t i = 0; i < keys.size() && i < kRoundTrips; ++i)
      round_trip(schema, keys[i]);
  }
  return 0;
}
