// The C API of tuning (jitwarm.h: "Tuning", docs/tuning.md): forwards to
// KernelHandle::tune and the runtime's tuning queries.
#include <span>

#include "c_api_support.hpp"

namespace jitwarm::detail::c_api {
namespace {

struct OwnedTuneTiming : jw_tune_timing {
  std::string config_text;
  std::string error_text;
};
struct OwnedTuneResult : Owned<jw_tune_result, TuneResult> {
  using Owned::Owned;
  std::string best;
  std::string text;
  OwnedItems<OwnedTuneTiming, jw_tune_timing> timings;
};

// Into `tuning`, made by the caller: a TuneOptions returned by value would
// have the library export its destructor beside the API.
void read_tune_options(const jw_tune_options* options, TuneOptions& tuning) {
  const jw_tune_options c = read_sized(options, "tune options");
  if (c.platform != nullptr) tuning.launch.platform = c.platform;
  tuning.launch.device = c.device;
  tuning.launch.stream = c.stream;
  if (c.warmup_launches != 0) tuning.warmup_launches = c.warmup_launches;
  if (c.timed_launches != 0) tuning.timed_launches = c.timed_launches;
  tuning.store = c.no_store == 0;
}

// The key's candidates as keys: the untuned key (the default config) first.
std::vector<CompileKey> candidate_keys(const Runtime& runtime,
                                       const CompileKey& key) {
  const CompileKey untuned = key.with_config({});
  std::vector<CompileKey> keys;
  for (TuneConfig& config : runtime.tune_candidates(untuned)) {
    // The default config's key is the untuned key itself.
    keys.push_back(keys.empty() ? untuned
                                : untuned.with_config(std::move(config)));
  }
  return keys;
}

}  // namespace

jw_tune_result* to_c(TuneResult result) {
  auto owned = std::make_unique<OwnedTuneResult>(std::move(result));
  const TuneResult& r = owned->value;
  owned->best = tune_config_text(r.best);
  owned->text = r.to_text();
  for (const TuneTiming& t : r.timings) {
    OwnedTuneTiming& item = owned->timings.add();
    item.config_text = tune_config_text(t.config);
    item.error_text = t.error;
    item.config = item.config_text.c_str();
    item.seconds = t.seconds;
    item.error = item.error_text.c_str();
  }
  jw_tune_result& c = *owned;
  c.key_text = r.key_text.c_str();
  c.hash_lo = r.key_hash.lo;
  c.hash_hi = r.key_hash.hi;
  c.device_kind = r.device_kind.c_str();
  c.best = owned->best.c_str();
  c.timings = owned->timings.data();
  c.num_timings = owned->timings.count();
  c.stored = r.stored ? 1 : 0;
  c.text = owned->text.c_str();
  return owned.release();
}

}  // namespace jitwarm::detail::c_api

namespace c_api = jitwarm::detail::c_api;

extern "C" {

JITWARM_EXPORT void jw_tune_result_free(jw_tune_result* result) {
  delete static_cast<c_api::OwnedTuneResult*>(result);
}

JITWARM_EXPORT jw_status jw_kernel_tune(jw_kernel_handle* kernel,
                                        const jw_arg_value* args,
                                        uint32_t num_args,
                                        const jw_tune_options* options,
                                        jw_tune_result** out_result) {
  return c_api::answer_or_null(
      {{kernel, "kernel"}}, out_result, "out_result", [&] {
        if (num_args > 0) c_api::require(args, "args");
        jitwarm::TuneOptions tuning;
        c_api::read_tune_options(options, tuning);
        return kernel->handle.tune(
            std::span<const jw_arg_value>(args, num_args), tuning);
      });
}

JITWARM_EXPORT jw_status jw_runtime_tune_result(jw_runtime* runtime,
                                                const jw_compile_key* key,
                                                const char* device_kind,
                                                jw_tune_result** out_result) {
  return c_api::answer_or_null(
      {{runtime, "runtime"}, {key, "key"}, {device_kind, "device_kind"}},
      out_result, "out_result",
      [&] { return runtime->runtime.tune_result(key->key, device_kind); });
}

JITWARM_EXPORT jw_status
jw_runtime_tune_candidates(jw_runtime* runtime, const jw_compile_key* key,
                           jw_compile_key_list** out_keys) {
  return c_api::answer(
      {{runtime, "runtime"}, {key, "key"}}, out_keys, "out_keys",
      [&] { return c_api::candidate_keys(runtime->runtime, key->key); });
}

JITWARM_EXPORT jw_status jw_runtime_device_kind(jw_runtime* runtime,
                                                const char* platform,
                                                int32_t device,
                                                char** out_kind) {
  return c_api::answer({{runtime, "runtime"}}, out_kind, "out_kind", [&] {
    return runtime->runtime.device_kind(platform != nullptr ? platform : "",
                                        device);
  });
}

}  // extern "C"
