// The C API of warmup, seal and the JIT monitor (jitwarm.h: "Warmup",
// "Seal and the JIT monitor", and shards of a warmup plan): manifests,
// warmup options and results, forwarded to jitwarm::Runtime.
#include "c_api_support.hpp"

namespace jitwarm::detail::c_api {
namespace {

using OwnedKeyResult = Owned<jw_warmup_key_result, WarmupKeyResult>;
struct OwnedWarmupResult : jw_warmup_result {
  OwnedItems<OwnedKeyResult> items;
};

WarmupOptions warmup_options_of(const jw_warmup_options* in) {
  const jw_warmup_options c = read_sized(in, "warmup options");
  WarmupOptions options;
  if (c.platform != nullptr) options.platform = c.platform;
  if (c.target != nullptr) options.target = c.target;
  options.jobs = c.jobs == 0 ? 1 : c.jobs;
  if (c.batch_size != 0) options.batch_size = c.batch_size;
  if (c.device_kind != nullptr) options.device_kind = c.device_kind;
  switch (c.parallel) {
    case JW_WARMUP_THREADS:
      options.parallel = WarmupParallelism::threads;
      break;
    case JW_WARMUP_PROCESSES:
      options.parallel = WarmupParallelism::processes;
      break;
    default:
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup options: unknown parallel {} (use JW_WARMUP_THREADS or "
           "JW_WARMUP_PROCESSES)",
           c.parallel);
  }
  if (c.progress != nullptr) {
    options.progress = [fn = c.progress, ctx = c.progress_ctx](
                           std::size_t done, std::size_t total,
                           const CompileKey& key) {
      fn(ctx, done, total, key.text().c_str());
    };
  }
  return options;
}

// Hands the result to the caller (when asked) and turns failed keys into
// JW_ERROR_COMPILE_FAILED, so a caller that passes no result still learns.
void finish_warmup(WarmupResult result, jw_warmup_result** out) {
  auto owned = std::make_unique<OwnedWarmupResult>();
  for (auto& key : result.keys) {
    OwnedKeyResult& item = owned->items.add(std::move(key));
    item.key_text = item.value.key_text.c_str();
    item.hash_lo = item.value.key_hash.lo;
    item.hash_hi = item.value.key_hash.hi;
    item.compiled = item.value.compiled ? 1 : 0;
    item.failed = item.value.failed ? 1 : 0;
    item.error = item.value.error.c_str();
  }
  jw_warmup_result& c = *owned;
  set_header(c);
  c.keys = owned->items.data();
  c.num_keys = owned->items.count();
  c.compiled = result.compiled;
  c.cached = result.cached;
  c.failed = result.failed;
  c.seconds = result.seconds;
  const OwnedKeyResult* first_failure = nullptr;
  for (const auto& item : owned->items.items) {
    if (item->failed && first_failure == nullptr) first_failure = item.get();
  }
  const uint64_t total = c.num_keys;
  if (out != nullptr) *out = owned.release();
  if (first_failure != nullptr) {
    fail(JW_ERROR_COMPILE_FAILED,
         "warmup: {} of {} keys failed; the first, {}: {}", result.failed,
         total, first_failure->value.key_text, first_failure->value.error);
  }
}

jw_jit_monitor_mode c_monitor_mode(JitMonitorMode mode) {
  switch (mode) {
    case JitMonitorMode::off: return JW_JIT_MONITOR_OFF;
    case JitMonitorMode::warn: return JW_JIT_MONITOR_WARN;
    case JitMonitorMode::error: return JW_JIT_MONITOR_ERROR;
  }
  return JW_JIT_MONITOR_OFF;
}

}  // namespace
}  // namespace jitwarm::detail::c_api

namespace c_api = jitwarm::detail::c_api;

extern "C" {

JITWARM_EXPORT jw_status jw_warmup_manifest_load(const char* path,
                                                 jw_warmup_manifest** out) {
  return c_api::answer({{path, "path"}}, out, "out", [&] {
    return new jw_warmup_manifest{jitwarm::load_warmup_manifest(path)};
  });
}

JITWARM_EXPORT jw_status jw_warmup_manifest_parse(const char* toml_text,
                                                  size_t length,
                                                  const char* source_name,
                                                  jw_warmup_manifest** out) {
  return c_api::answer(
      {c_api::elements(toml_text, length, "toml_text")}, out, "out", [&] {
        return new jw_warmup_manifest{jitwarm::parse_warmup_manifest(
            std::string_view(toml_text, length),
            source_name != nullptr ? source_name : "<manifest text>")};
      });
}

JITWARM_EXPORT void jw_warmup_manifest_free(jw_warmup_manifest* manifest) {
  delete manifest;
}

JITWARM_EXPORT void jw_warmup_result_free(jw_warmup_result* result) {
  delete static_cast<c_api::OwnedWarmupResult*>(result);
}

JITWARM_EXPORT jw_status jw_runtime_warmup(jw_runtime* runtime,
                                           const jw_warmup_manifest* manifest,
                                           const jw_warmup_options* options,
                                           jw_warmup_result** out_result) {
  return c_api::act({{runtime, "runtime"}, {manifest, "manifest"}}, [&] {
    if (out_result != nullptr) *out_result = nullptr;
    c_api::finish_warmup(
        runtime->runtime.warmup(manifest->manifest.requests,
                                c_api::warmup_options_of(options)),
        out_result);
  });
}

JITWARM_EXPORT jw_status jw_runtime_warmup_plan(
    jw_runtime* runtime, const jw_warmup_manifest* manifest,
    const jw_warmup_options* options, jw_compile_key_list** out_keys) {
  return c_api::answer({{runtime, "runtime"}, {manifest, "manifest"}}, out_keys,
                       "out_keys", [&] {
                         return runtime->runtime.warmup_plan(
                             manifest->manifest.requests,
                             c_api::warmup_options_of(options));
                       });
}

JITWARM_EXPORT jw_status jw_runtime_warmup_keys(
    jw_runtime* runtime, const jw_compile_key* const* keys, uint32_t num_keys,
    const jw_warmup_options* options, jw_warmup_result** out_result) {
  return c_api::act(
      {{runtime, "runtime"}, c_api::elements(keys, num_keys, "keys")}, [&] {
        if (out_result != nullptr) *out_result = nullptr;
        const std::vector<jitwarm::CompileKey> list =
            c_api::compile_keys_of(keys, num_keys, "keys");
        c_api::finish_warmup(runtime->runtime.warmup_keys(
                                 list, c_api::warmup_options_of(options)),
                             out_result);
      });
}

JITWARM_EXPORT jw_status jw_warmup_shard(const jw_compile_key* const* plan,
                                         uint32_t num_keys, uint32_t shard,
                                         uint32_t count,
                                         jw_compile_key_list** out_keys) {
  return c_api::answer(
      {c_api::elements(plan, num_keys, "plan")}, out_keys, "out_keys", [&] {
        return jitwarm::warmup_shard(
            c_api::compile_keys_of(plan, num_keys, "plan"), shard, count);
      });
}

JITWARM_EXPORT jw_status jw_runtime_seal(jw_runtime* runtime) {
  return c_api::act({{runtime, "runtime"}}, [&] { runtime->runtime.seal(); });
}

JITWARM_EXPORT jw_status jw_runtime_is_sealed(jw_runtime* runtime,
                                              int32_t* out_sealed) {
  return c_api::answer({{runtime, "runtime"}}, out_sealed, "out_sealed",
                       [&] { return runtime->runtime.sealed(); });
}

JITWARM_EXPORT jw_status jw_runtime_set_jit_monitor(jw_runtime* runtime,
                                                    jw_jit_monitor_mode mode) {
  return c_api::act({{runtime, "runtime"}}, [&] {
    runtime->runtime.set_jit_monitor(
        *c_api::monitor_mode_of(mode, /*allow_default=*/false));
  });
}

JITWARM_EXPORT jw_status
jw_runtime_get_jit_monitor(jw_runtime* runtime, jw_jit_monitor_mode* out_mode) {
  return c_api::answer({{runtime, "runtime"}}, out_mode, "out_mode", [&] {
    return c_api::c_monitor_mode(runtime->runtime.jit_monitor());
  });
}

JITWARM_EXPORT jw_status jw_runtime_set_jit_record_path(jw_runtime* runtime,
                                                        const char* path) {
  return c_api::act({{runtime, "runtime"}}, [&] {
    runtime->runtime.set_jit_record_path(path != nullptr ? path : "");
  });
}

}  // extern "C"
