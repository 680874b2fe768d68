// The C API of a runtime's caches (jitwarm.h: "Counters", the cache
// settings of "Caches for fleets", external entries): forwards to
// jitwarm::Runtime and resolve_cache_settings.
#include "c_api_support.hpp"

namespace jitwarm::detail::c_api {
namespace {

struct OwnedCacheSettings : Owned<jw_cache_settings, CacheSettings> {
  using Owned::Owned;
  std::string source;
  std::vector<const char*> trusted_key_id_pointers;
};

using OwnedExternalEntry = Owned<jw_external_entry, ExternalEntry>;

jw_runtime_counters counters_of(const CacheStats& s) {
  jw_runtime_counters c{};
  c.struct_size = sizeof(c);
  c.cache_hits = s.hits;
  c.cache_misses = s.misses;
  c.compiles = s.compiles;
  c.disk_hits = s.disk_hits;
  c.disk_writes = s.disk_writes;
  c.disk_rejects = s.disk_rejects;
  c.compile_seconds = s.compile_seconds;
  c.cache_entries = s.entries;
  c.remote_hits = s.remote_hits;
  c.remote_misses = s.remote_misses;
  c.remote_rejects = s.remote_rejects;
  c.remote_errors = s.remote_errors;
  c.remote_writes = s.remote_writes;
  return c;
}

// A copy of the caller's entry; the pointers in it checked.
ExternalEntry external_entry_of(const jw_external_entry& entry) {
  require(entry.format, "entry->format");
  if (entry.binary_size > 0) require(entry.binary, "entry->binary");
  ExternalEntry stored;
  stored.binary.assign(static_cast<const char*>(entry.binary),
                       entry.binary_size);
  stored.format = entry.format;
  if (entry.entry_point != nullptr) stored.entry_point = entry.entry_point;
  return stored;
}

}  // namespace

jw_cache_settings* to_c(CacheSettings settings) {
  auto owned = std::make_unique<OwnedCacheSettings>(std::move(settings));
  const CacheSettings& s = owned->value;
  owned->source = std::string(to_string(s.directory_source));
  jw_cache_settings& c = *owned;
  c.directory = s.directory.c_str();
  c.directory_source = owned->source.c_str();
  c.default_directory = s.default_directory() ? 1 : 0;
  c.system_directory = s.system_directory.c_str();
  c.max_bytes = s.max_bytes;
  c.remote = s.remote_display.c_str();
  c.remote_source = s.remote_source.c_str();
  c.remote_timeout_ms = static_cast<uint32_t>(s.remote_timeout.count());
  c.problem = s.problem.c_str();
  c.persistent = s.persistent() ? 1 : 0;
  c.signing_key_id = s.signing_key_id.c_str();
  for (const std::string& id : s.trusted_key_ids)
    owned->trusted_key_id_pointers.push_back(id.c_str());
  c.trusted_key_ids = owned->trusted_key_id_pointers.data();
  c.num_trusted_keys =
      static_cast<uint32_t>(owned->trusted_key_id_pointers.size());
  c.remote_cache_mode = s.remote_mode == RemoteCacheMode::read_only
                            ? JW_REMOTE_CACHE_READ_ONLY
                            : JW_REMOTE_CACHE_READ_WRITE;
  return owned.release();
}

jw_external_entry* to_c(ExternalEntry entry) {
  auto owned = std::make_unique<OwnedExternalEntry>(std::move(entry));
  owned->binary = owned->value.binary.data();
  owned->binary_size = owned->value.binary.size();
  owned->format = owned->value.format.c_str();
  owned->entry_point = owned->value.entry_point.c_str();
  return owned.release();
}

}  // namespace jitwarm::detail::c_api

namespace c_api = jitwarm::detail::c_api;

extern "C" {

JITWARM_EXPORT jw_status jw_cache_settings_resolve(
    const jw_runtime_options* options, jw_cache_settings** out_settings) {
  return c_api::answer({}, out_settings, "out_settings", [&] {
    return jitwarm::resolve_cache_settings(c_api::runtime_options_of(options));
  });
}

JITWARM_EXPORT jw_status jw_runtime_cache_settings(
    jw_runtime* runtime, jw_cache_settings** out_settings) {
  return c_api::answer({{runtime, "runtime"}}, out_settings, "out_settings",
                       [&] { return runtime->runtime.cache_settings(); });
}

JITWARM_EXPORT void jw_cache_settings_free(jw_cache_settings* settings) {
  delete static_cast<c_api::OwnedCacheSettings*>(settings);
}

JITWARM_EXPORT jw_status jw_runtime_get_counters(jw_runtime* runtime,
                                                 jw_runtime_counters* out) {
  return c_api::act({{runtime, "runtime"}}, [&] {
    c_api::write_sized(out, c_api::counters_of(runtime->runtime.cache_stats()),
                       "out");
  });
}

JITWARM_EXPORT jw_status jw_runtime_metrics(jw_runtime* runtime,
                                            char** out_text) {
  return c_api::answer_or_null({{runtime, "runtime"}}, out_text, "out_text",
                               [&] { return runtime->runtime.metrics_text(); });
}

JITWARM_EXPORT jw_status jw_runtime_store_external_entry(
    jw_runtime* runtime, const jw_compile_key* key, const char* fingerprint,
    const jw_external_entry* entry, int32_t* out_stored) {
  const std::initializer_list<c_api::Required> inputs = {
      {runtime, "runtime"},
      {key, "key"},
      {fingerprint, "fingerprint"},
      {entry, "entry"}};
  return c_api::act(inputs, [&] {
    const jitwarm::ExternalEntry stored = c_api::external_entry_of(*entry);
    c_api::require(out_stored, "out_stored");
    const bool kept =
        runtime->runtime.store_external_entry(key->key, fingerprint, stored);
    *out_stored = kept ? 1 : 0;
  });
}

JITWARM_EXPORT jw_status jw_runtime_load_external_entry(
    jw_runtime* runtime, const jw_compile_key* key, const char* fingerprint,
    jw_external_entry** out_entry) {
  return c_api::answer_or_null(
      {{runtime, "runtime"}, {key, "key"}, {fingerprint, "fingerprint"}},
      out_entry, "out_entry", [&] {
        return runtime->runtime.load_external_entry(key->key, fingerprint);
      });
}

JITWARM_EXPORT void jw_external_entry_free(jw_external_entry* entry) {
  delete static_cast<c_api::OwnedExternalEntry*>(entry);
}

}  // extern "C"
