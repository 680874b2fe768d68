// The C ABI of trust (jitwarm.h, "Trust"): the trust fields of
// jw_runtime_options, and jw_cache_keygen.
#include "c_api_trust.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "errors.hpp"

namespace jitwarm::detail {

void apply_trust_options(const jw_runtime_options& c, RuntimeOptions& options) {
  if (c.signing_key != nullptr) options.signing_key = c.signing_key;
  if (c.num_trusted_keys > 0 && c.trusted_keys == nullptr)
    fail(JW_ERROR_INVALID_ARGUMENT, "trusted_keys is null");
  for (uint32_t i = 0; i < c.num_trusted_keys; ++i) {
    if (c.trusted_keys[i] == nullptr)
      fail(JW_ERROR_INVALID_ARGUMENT, "trusted_keys[{}] is null", i);
    options.trusted_keys.emplace_back(c.trusted_keys[i]);
  }
  switch (raw_enum(c.remote_cache_mode)) {
    case JW_REMOTE_CACHE_MODE_DEFAULT: break;
    case JW_REMOTE_CACHE_READ_WRITE:
      options.remote_cache_mode = RemoteCacheMode::read_write;
      break;
    case JW_REMOTE_CACHE_READ_ONLY:
      options.remote_cache_mode = RemoteCacheMode::read_only;
      break;
    default:
      fail(JW_ERROR_INVALID_ARGUMENT, "remote_cache_mode {} is not a mode",
           raw_enum(c.remote_cache_mode));
  }
}

namespace {

struct OwnedKeyPair : jw_cache_key_pair {
  CacheKeyPair pair;
};

}  // namespace
}  // namespace jitwarm::detail

extern "C" {

JITWARM_EXPORT jw_status jw_cache_keygen(const char* path,
                                         jw_cache_key_pair** out_pair) {
  return jitwarm::detail::c_guard([&] {
    if (out_pair != nullptr) *out_pair = nullptr;
    if (path == nullptr)
      jitwarm::detail::fail(JW_ERROR_INVALID_ARGUMENT, "path is null");
    auto owned = std::make_unique<jitwarm::detail::OwnedKeyPair>();
    owned->pair = jitwarm::write_cache_key_pair(path);
    jw_cache_key_pair& c = *owned;
    c.struct_size = sizeof(jw_cache_key_pair);
    c.next = nullptr;
    c.secret_key_file = owned->pair.secret_key_file.c_str();
    c.public_key_file = owned->pair.public_key_file.c_str();
    c.public_key = owned->pair.public_key.c_str();
    c.key_id = owned->pair.key_id.c_str();
    if (out_pair != nullptr) *out_pair = owned.release();
  });
}

JITWARM_EXPORT void jw_cache_key_pair_free(jw_cache_key_pair* pair) {
  delete static_cast<jitwarm::detail::OwnedKeyPair*>(pair);
}

}  // extern "C"
