// The host-application half of the C ABI (jitwarm.h): thin wrappers over the
// C++ API, each behind c_guard so no exception crosses the boundary.
#include <jitwarm/jitwarm.h>
#include <jitwarm/jitwarm.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "c_api_trust.hpp"
#include "errors.hpp"
#include "runtime_impl.hpp"

struct jw_runtime {
  jitwarm::Runtime runtime;
  // Every directory jw_runtime_load_plugins searched, for the load report.
  std::vector<std::string> searched_directories;
};
struct jw_kernel_handle {
  jitwarm::KernelHandle handle;
};
struct jw_registration {
  jitwarm::RegistrationHandle handle;
};

namespace {

using jitwarm::detail::c_guard;
using jitwarm::detail::fail;

template <typename T>
void require(const T* p, const char* what) {
  if (p == nullptr) fail(JW_ERROR_INVALID_ARGUMENT, "{} is null", what);
}

}  // namespace

extern "C" {

JITWARM_EXPORT jw_status jw_runtime_create(jw_runtime** out_runtime) {
  return c_guard([&] {
    require(out_runtime, "out_runtime");
    *out_runtime = new jw_runtime{jitwarm::Runtime{}, {}};
  });
}

JITWARM_EXPORT void jw_runtime_destroy(jw_runtime* runtime) {
  delete runtime;
}

namespace {

jw_status load_plugins(jw_runtime* runtime,
                       jitwarm::PluginLoadOptions options) {
  return c_guard([&] {
    require(runtime, "runtime");
    const jitwarm::PluginLoadReport report =
        runtime->runtime.load_plugins(options);
    runtime->searched_directories.insert(runtime->searched_directories.end(),
                                         report.searched_directories.begin(),
                                         report.searched_directories.end());
  });
}

}  // namespace

JITWARM_EXPORT jw_status jw_runtime_load_plugins(jw_runtime* runtime,
                                                 const char* search_path,
                                                 int strict) {
  jitwarm::PluginLoadOptions options;
  options.strict = strict != 0;
  if (search_path != nullptr) {
    options.search_path = jitwarm::split_path_list(search_path);
  }
  return load_plugins(runtime, std::move(options));
}

JITWARM_EXPORT jw_status jw_runtime_load_plugin(jw_runtime* runtime,
                                                const char* path) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(path, "path");
    runtime->runtime.load_plugin(path, /*strict=*/true);
  });
}

JITWARM_EXPORT jw_status jw_kernel_find(jw_runtime* runtime, const char* name,
                                        jw_kernel_handle** out) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(name, "name");
    require(out, "out");
    *out = new jw_kernel_handle{runtime->runtime.kernel(name)};
  });
}

JITWARM_EXPORT void jw_kernel_release(jw_kernel_handle* kernel) {
  delete kernel;
}

JITWARM_EXPORT jw_status jw_kernel_launch(jw_kernel_handle* kernel,
                                          const char* platform, int32_t device,
                                          const jw_arg_value* args,
                                          uint32_t num_args, void* stream) {
  return c_guard([&] {
    require(kernel, "kernel");
    if (num_args > 0) require(args, "args");
    // Straight to the launch path: no LaunchOptions (and no string) per call.
    jitwarm::detail::RuntimeImpl::launch(
        kernel->handle, std::span<const jw_arg_value>(args, num_args),
        platform != nullptr ? std::string_view(platform) : std::string_view(),
        device, stream);
  });
}

JITWARM_EXPORT jw_status jw_register_kernels(
    jw_runtime* runtime, const jw_kernel_override* overrides,
    uint32_t num_overrides, jw_registration** out_registration) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_registration, "out_registration");
    if (num_overrides > 0) require(overrides, "overrides");
    std::vector<jitwarm::KernelOverride> list;
    for (uint32_t i = 0; i < num_overrides; ++i) {
      const jw_kernel_override& o = overrides[i];
      if (o.struct_size < sizeof(jw_kernel_override) ||
          o.kernel_name == nullptr) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "override {}: bad struct_size or no kernel name", i);
      }
      jitwarm::KernelOverride k;
      k.kernel_name = o.kernel_name;
      k.impl = o.impl;
      list.push_back(std::move(k));
    }
    *out_registration = new jw_registration{
        runtime->runtime.register_kernels(std::move(list), "C API")};
  });
}

JITWARM_EXPORT void jw_registration_release(jw_registration* registration) {
  delete registration;
}

JITWARM_EXPORT jw_status
jw_register_source_kernel(jw_runtime* runtime, const jw_source_kernel* kernel,
                          jw_registration** out_registration) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(kernel, "kernel");
    require(out_registration, "out_registration");
    if (kernel->struct_size < sizeof(jw_source_kernel) ||
        (kernel->descriptor == nullptr && kernel->descriptor_size > 0) ||
        (kernel->files == nullptr && kernel->num_files > 0)) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "jw_source_kernel: bad struct_size, descriptor or files");
    }
    jitwarm::SourceKernel source;
    source.origin = kernel->origin != nullptr ? kernel->origin : "host";
    source.descriptor.assign(
        kernel->descriptor != nullptr ? kernel->descriptor : "",
        kernel->descriptor_size);
    for (uint32_t i = 0; i < kernel->num_files; ++i) {
      const jw_source_file& f = kernel->files[i];
      if (f.name == nullptr || (f.text == nullptr && f.size > 0)) {
        fail(JW_ERROR_INVALID_ARGUMENT, "jw_source_kernel: file {} is null", i);
      }
      source.files.emplace_back(
          f.name, std::string(f.text != nullptr ? f.text : "", f.size));
    }
    *out_registration = new jw_registration{
        runtime->runtime.register_source_kernel(std::move(source))};
  });
}

}  // extern "C"

// ===========================================================================
// Host application API, continued (jitwarm.h, the section of that name).
// ===========================================================================
struct jw_compile_key {
  jitwarm::CompileKey key;
  std::string text;  // key.text(), kept so jw_compile_key_info can borrow it
};

struct jw_warmup_manifest {
  jitwarm::WarmupManifest manifest;
};

namespace {

using jitwarm::detail::raw_enum;

// The caller's struct `in` (R3: an older caller's is shorter; its missing
// fields read as zero). NULL gives all zeros.
template <typename Struct>
Struct read_sized(const Struct* in, const char* what) {
  Struct out{};
  if (in != nullptr) {
    if (in->struct_size < offsetof(Struct, next) + sizeof(in->next)) {
      fail(JW_ERROR_INVALID_ARGUMENT, "{}: struct_size {} is too small", what,
           in->struct_size);
    }
    std::memcpy(static_cast<void*>(&out), in,
                std::min<std::size_t>(in->struct_size, sizeof(Struct)));
  }
  out.struct_size = sizeof(Struct);
  return out;
}

// Writes `value` into the caller's struct `out` (R3 with the core as the
// writer): the fields both sides know, zeros beyond them, and the number of
// bytes filled in struct_size.
template <typename Struct>
void write_sized(Struct* out, const Struct& value, const char* what) {
  require(out, what);
  const uint32_t caller_size = out->struct_size;
  if (caller_size < offsetof(Struct, next) + sizeof(out->next)) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: struct_size {} is too small (set it to the struct's sizeof)",
         what, caller_size);
  }
  const std::size_t filled = std::min<std::size_t>(caller_size, sizeof(Struct));
  std::memcpy(static_cast<void*>(out), &value, filled);
  std::memset(reinterpret_cast<char*>(out) + filled, 0, caller_size - filled);
  out->struct_size = static_cast<uint32_t>(filled);
}

char* owned_string(std::string_view text) {
  auto* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

// The text or the JSON form of a report, as the caller asked; only the one
// asked for is made.
template <typename Text, typename Json>
std::string text_in(const jw_text_format& format, Text&& text, Json&& json) {
  switch (raw_enum(format)) {
    case JW_FORMAT_TEXT: return text();
    case JW_FORMAT_JSON: return json();
  }
  fail(JW_ERROR_INVALID_ARGUMENT,
       "unknown text format {} (use JW_FORMAT_TEXT or JW_FORMAT_JSON)",
       raw_enum(format));
}

// The core-allocated lists: the C struct is the base, the storage the rest;
// each free function deletes through the derived type.
struct OwnedStringList : jw_string_list {
  std::vector<std::string> strings;
  std::vector<const char*> pointers;
};

struct OwnedPlatformInfo : jw_platform_info {
  jitwarm::PlatformInfo info;
};
struct OwnedPlatformList : jw_platform_list {
  std::vector<std::unique_ptr<OwnedPlatformInfo>> platforms;
  std::vector<const jw_platform_info*> pointers;
};

struct OwnedCompileKeyList : jw_compile_key_list {
  std::vector<jw_compile_key*> pointers;
  ~OwnedCompileKeyList() {
    for (jw_compile_key* key : pointers) delete key;
  }
};

struct OwnedWarmupKeyResult : jw_warmup_key_result {
  jitwarm::WarmupKeyResult result;
};
struct OwnedWarmupResult : jw_warmup_result {
  std::vector<std::unique_ptr<OwnedWarmupKeyResult>> items;
  std::vector<const jw_warmup_key_result*> pointers;
};

jw_compile_key* new_compile_key(jitwarm::CompileKey key) {
  std::string text = key.text();
  return new jw_compile_key{std::move(key), std::move(text)};
}

jw_compile_key_list* new_compile_key_list(
    std::vector<jitwarm::CompileKey> keys) {
  auto list = std::make_unique<OwnedCompileKeyList>();
  // Reserved first, so no push_back can throw with a key in hand.
  list->pointers.reserve(keys.size());
  for (auto& key : keys)
    list->pointers.push_back(new_compile_key(std::move(key)));
  jw_compile_key_list& c = *list;
  c.struct_size = sizeof(jw_compile_key_list);
  c.next = nullptr;
  c.keys = list->pointers.data();
  c.count = static_cast<uint32_t>(list->pointers.size());
  return list.release();
}

struct OwnedTuneTiming : jw_tune_timing {
  std::string config;
  std::string error;
};
struct OwnedTuneResult : jw_tune_result {
  jitwarm::TuneResult result;
  std::string best;
  std::string text;
  std::vector<std::unique_ptr<OwnedTuneTiming>> items;
  std::vector<const jw_tune_timing*> pointers;
};

jw_tune_result* new_tune_result(jitwarm::TuneResult result) {
  auto owned = std::make_unique<OwnedTuneResult>();
  owned->best = jitwarm::tune_config_text(result.best);
  owned->text = result.to_text();
  owned->result = std::move(result);
  for (const jitwarm::TuneTiming& t : owned->result.timings) {
    auto item = std::make_unique<OwnedTuneTiming>();
    item->config = jitwarm::tune_config_text(t.config);
    item->error = t.error;
    jw_tune_timing& c = *item;
    c.struct_size = sizeof(jw_tune_timing);
    c.next = nullptr;
    c.config = item->config.c_str();
    c.seconds = t.seconds;
    c.error = item->error.c_str();
    owned->pointers.push_back(item.get());
    owned->items.push_back(std::move(item));
  }
  jw_tune_result& c = *owned;
  c.struct_size = sizeof(jw_tune_result);
  c.next = nullptr;
  c.key_text = owned->result.key_text.c_str();
  c.hash_lo = owned->result.key_hash.lo;
  c.hash_hi = owned->result.key_hash.hi;
  c.device_kind = owned->result.device_kind.c_str();
  c.best = owned->best.c_str();
  c.timings = owned->pointers.data();
  c.num_timings = static_cast<uint32_t>(owned->pointers.size());
  c.stored = owned->result.stored ? 1 : 0;
  c.text = owned->text.c_str();
  return owned.release();
}

// `mode` by reference: a C caller may pass any int, which only raw_enum may
// read (loading it as the enum would be undefined).
std::optional<jitwarm::JitMonitorMode> monitor_mode_of(
    const jw_jit_monitor_mode& mode, bool allow_default) {
  switch (raw_enum(mode)) {
    case JW_JIT_MONITOR_DEFAULT:
      if (allow_default) return std::nullopt;
      break;
    case JW_JIT_MONITOR_OFF: return jitwarm::JitMonitorMode::off;
    case JW_JIT_MONITOR_WARN: return jitwarm::JitMonitorMode::warn;
    case JW_JIT_MONITOR_ERROR: return jitwarm::JitMonitorMode::error;
  }
  fail(JW_ERROR_INVALID_ARGUMENT,
       "unknown JIT monitor mode {} (use JW_JIT_MONITOR_OFF, _WARN or _ERROR)",
       raw_enum(mode));
}

jitwarm::WarmupOptions warmup_options_of(const jw_warmup_options* in) {
  const jw_warmup_options c = read_sized(in, "warmup options");
  jitwarm::WarmupOptions options;
  if (c.platform != nullptr) options.platform = c.platform;
  if (c.target != nullptr) options.target = c.target;
  options.jobs = c.jobs == 0 ? 1 : c.jobs;
  if (c.batch_size != 0) options.batch_size = c.batch_size;
  if (c.device_kind != nullptr) options.device_kind = c.device_kind;
  switch (c.parallel) {
    case JW_WARMUP_THREADS:
      options.parallel = jitwarm::WarmupParallelism::threads;
      break;
    case JW_WARMUP_PROCESSES:
      options.parallel = jitwarm::WarmupParallelism::processes;
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
                           const jitwarm::CompileKey& key) {
      fn(ctx, done, total, key.text().c_str());
    };
  }
  return options;
}

// Hands the result to the caller (when asked) and turns failed keys into
// JW_ERROR_COMPILE_FAILED, so a caller that passes no result still learns.
void finish_warmup(jitwarm::WarmupResult result, jw_warmup_result** out) {
  auto owned = std::make_unique<OwnedWarmupResult>();
  for (auto& key : result.keys) {
    auto item = std::make_unique<OwnedWarmupKeyResult>();
    item->result = std::move(key);
    jw_warmup_key_result& c = *item;
    c.struct_size = sizeof(jw_warmup_key_result);
    c.key_text = item->result.key_text.c_str();
    c.hash_lo = item->result.key_hash.lo;
    c.hash_hi = item->result.key_hash.hi;
    c.compiled = item->result.compiled ? 1 : 0;
    c.failed = item->result.failed ? 1 : 0;
    c.error = item->result.error.c_str();
    owned->pointers.push_back(item.get());
    owned->items.push_back(std::move(item));
  }
  jw_warmup_result& c = *owned;
  c.struct_size = sizeof(jw_warmup_result);
  c.keys = owned->pointers.data();
  c.num_keys = owned->pointers.size();
  c.compiled = result.compiled;
  c.cached = result.cached;
  c.failed = result.failed;
  c.seconds = result.seconds;
  const OwnedWarmupKeyResult* first_failure = nullptr;
  for (const auto& item : owned->items) {
    if (item->failed && first_failure == nullptr) first_failure = item.get();
  }
  const uint64_t total = c.num_keys;
  if (out != nullptr) *out = owned.release();
  if (first_failure != nullptr) {
    fail(JW_ERROR_COMPILE_FAILED,
         "warmup: {} of {} keys failed; the first, {}: {}", result.failed,
         total, first_failure->result.key_text, first_failure->result.error);
  }
}

std::string explanation_json(const jitwarm::KernelExplanation& e) {
  nlohmann::json j;
  j["kernel"] = e.kernel_name;
  j["schema_origin"] = e.schema_origin;
  j["platforms"] = nlohmann::json::array();
  for (const auto& p : e.platforms) {
    nlohmann::json replaced = nlohmann::json::array();
    for (const auto& r : p.replaced)
      replaced.push_back(
          {{"implementation", r.impl_name}, {"origin", r.origin}});
    j["platforms"].push_back({{"platform", p.platform},
                              {"implementation", p.winner.impl_name},
                              {"origin", p.winner.origin},
                              {"replaces", std::move(replaced)}});
  }
  return j.dump(2);
}

}  // namespace

extern "C" {

JITWARM_EXPORT void jw_string_free(char* text) {
  std::free(text);
}

JITWARM_EXPORT void jw_string_list_free(jw_string_list* list) {
  delete static_cast<OwnedStringList*>(list);
}

}  // extern "C"

namespace {

// The C options as the C++ ones (NULL: all defaults).
jitwarm::RuntimeOptions runtime_options_of(const jw_runtime_options* options) {
  const jw_runtime_options c = read_sized(options, "runtime options");
  jitwarm::RuntimeOptions o;
  if (c.cache_dir != nullptr) o.cache_dir = c.cache_dir;
  o.jit_monitor = monitor_mode_of(c.jit_monitor, /*allow_default=*/true);
  if (c.jit_record_path != nullptr) o.jit_record_path = c.jit_record_path;
  if (c.log != nullptr) {
    o.log = [fn = c.log, ctx = c.log_ctx](jw_log_level level,
                                          const std::string& message) {
      fn(ctx, level, message.c_str());
    };
  }
  o.no_cache_dir = c.no_cache_dir != 0;
  if (c.system_cache_dir != nullptr) o.system_cache_dir = c.system_cache_dir;
  if (c.cache_max_bytes != 0) o.cache_max_bytes = c.cache_max_bytes;
  if (c.remote_cache != nullptr) o.remote_cache = c.remote_cache;
  o.no_remote_cache = c.no_remote_cache != 0;
  o.remote_timeout = std::chrono::milliseconds(c.remote_timeout_ms);
  jitwarm::detail::apply_trust_options(c, o);
  return o;
}

}  // namespace

extern "C" {

JITWARM_EXPORT jw_status jw_runtime_create_with_options(
    const jw_runtime_options* options, jw_runtime** out_runtime) {
  return c_guard([&] {
    require(out_runtime, "out_runtime");
    *out_runtime =
        new jw_runtime{jitwarm::Runtime{runtime_options_of(options)}, {}};
  });
}

JITWARM_EXPORT jw_status jw_runtime_load_report(jw_runtime* runtime,
                                                jw_text_format format,
                                                char** out_text) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_text, "out_text");
    jitwarm::PluginLoadReport report;
    report.searched_directories = runtime->searched_directories;
    report.records = runtime->runtime.load_history();
    *out_text = owned_string(text_in(
        format, [&] { return report.to_text(); },
        [&] { return report.to_json(); }));
  });
}

JITWARM_EXPORT jw_status jw_runtime_kernel_names(jw_runtime* runtime,
                                                 jw_string_list** out_names) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_names, "out_names");
    auto list = std::make_unique<OwnedStringList>();
    list->strings = runtime->runtime.kernel_names();
    for (const auto& s : list->strings) list->pointers.push_back(s.c_str());
    jw_string_list& c = *list;
    c.struct_size = sizeof(jw_string_list);
    c.next = nullptr;
    c.items = list->pointers.data();
    c.count = static_cast<uint32_t>(list->pointers.size());
    *out_names = list.release();
  });
}

JITWARM_EXPORT jw_status jw_runtime_explain(jw_runtime* runtime,
                                            const char* kernel_name,
                                            jw_text_format format,
                                            char** out_text) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(kernel_name, "kernel_name");
    require(out_text, "out_text");
    const jitwarm::KernelExplanation e = runtime->runtime.explain(kernel_name);
    *out_text = owned_string(text_in(
        format, [&] { return e.to_text(); },
        [&] { return explanation_json(e); }));
  });
}

JITWARM_EXPORT jw_status jw_runtime_platforms(jw_runtime* runtime,
                                              jw_platform_list** out_list) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_list, "out_list");
    auto list = std::make_unique<OwnedPlatformList>();
    for (auto& info : runtime->runtime.platforms()) {
      auto item = std::make_unique<OwnedPlatformInfo>();
      item->info = std::move(info);
      jw_platform_info& c = *item;
      c.struct_size = sizeof(jw_platform_info);
      c.next = nullptr;
      c.name = item->info.name.c_str();
      c.origin = item->info.origin.c_str();
      c.detail = item->info.detail.c_str();
      c.can_compile = item->info.can_compile ? 1 : 0;
      c.can_launch = item->info.can_launch ? 1 : 0;
      c.device_count = item->info.device_count;
      list->pointers.push_back(item.get());
      list->platforms.push_back(std::move(item));
    }
    jw_platform_list& c = *list;
    c.struct_size = sizeof(jw_platform_list);
    c.next = nullptr;
    c.items = list->pointers.data();
    c.count = static_cast<uint32_t>(list->pointers.size());
    *out_list = list.release();
  });
}

JITWARM_EXPORT void jw_platform_list_free(jw_platform_list* list) {
  delete static_cast<OwnedPlatformList*>(list);
}

JITWARM_EXPORT jw_status jw_runtime_default_platform(jw_runtime* runtime,
                                                     char** out_name) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_name, "out_name");
    *out_name = owned_string(runtime->runtime.default_platform());
  });
}

JITWARM_EXPORT jw_status jw_runtime_target_for(jw_runtime* runtime,
                                               const char* platform,
                                               int32_t device,
                                               char** out_target) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(platform, "platform");
    require(out_target, "out_target");
    *out_target = owned_string(runtime->runtime.target_for(platform, device));
  });
}

JITWARM_EXPORT jw_status jw_kernel_key_for(jw_kernel_handle* kernel,
                                           const char* platform, int32_t device,
                                           const jw_arg_value* args,
                                           uint32_t num_args,
                                           jw_compile_key** out_key) {
  return c_guard([&] {
    require(kernel, "kernel");
    require(out_key, "out_key");
    if (num_args > 0) require(args, "args");
    jitwarm::LaunchOptions options;
    if (platform != nullptr) options.platform = platform;
    options.device = device;
    *out_key = new_compile_key(kernel->handle.key_for(
        std::span<const jw_arg_value>(args, num_args), options));
  });
}

JITWARM_EXPORT void jw_tune_result_free(jw_tune_result* result) {
  delete static_cast<OwnedTuneResult*>(result);
}

JITWARM_EXPORT jw_status jw_kernel_tune(jw_kernel_handle* kernel,
                                        const jw_arg_value* args,
                                        uint32_t num_args,
                                        const jw_tune_options* options,
                                        jw_tune_result** out_result) {
  return c_guard([&] {
    require(kernel, "kernel");
    require(out_result, "out_result");
    *out_result = nullptr;
    if (num_args > 0) require(args, "args");
    const jw_tune_options c = read_sized(options, "tune options");
    jitwarm::TuneOptions tuning;
    if (c.platform != nullptr) tuning.launch.platform = c.platform;
    tuning.launch.device = c.device;
    tuning.launch.stream = c.stream;
    if (c.warmup_launches != 0) tuning.warmup_launches = c.warmup_launches;
    if (c.timed_launches != 0) tuning.timed_launches = c.timed_launches;
    tuning.store = c.no_store == 0;
    *out_result = new_tune_result(kernel->handle.tune(
        std::span<const jw_arg_value>(args, num_args), tuning));
  });
}

JITWARM_EXPORT jw_status jw_runtime_tune_result(jw_runtime* runtime,
                                                const jw_compile_key* key,
                                                const char* device_kind,
                                                jw_tune_result** out_result) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(key, "key");
    require(device_kind, "device_kind");
    require(out_result, "out_result");
    *out_result = nullptr;
    if (std::optional<jitwarm::TuneResult> found =
            runtime->runtime.tune_result(key->key, device_kind)) {
      *out_result = new_tune_result(std::move(*found));
    }
  });
}

JITWARM_EXPORT jw_status
jw_runtime_tune_candidates(jw_runtime* runtime, const jw_compile_key* key,
                           jw_compile_key_list** out_keys) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(key, "key");
    require(out_keys, "out_keys");
    const jitwarm::CompileKey untuned = key->key.with_config({});
    std::vector<jitwarm::CompileKey> keys;
    for (jitwarm::TuneConfig& config :
         runtime->runtime.tune_candidates(untuned)) {
      // The default config's key is the untuned key itself.
      keys.push_back(keys.empty() ? untuned
                                  : untuned.with_config(std::move(config)));
    }
    *out_keys = new_compile_key_list(std::move(keys));
  });
}

JITWARM_EXPORT jw_status jw_runtime_device_kind(jw_runtime* runtime,
                                                const char* platform,
                                                int32_t device,
                                                char** out_kind) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_kind, "out_kind");
    *out_kind = owned_string(runtime->runtime.device_kind(
        platform != nullptr ? platform : "", device));
  });
}

JITWARM_EXPORT jw_status jw_compile_key_get_info(
    const jw_compile_key* key, jw_compile_key_info* out_info) {
  return c_guard([&] {
    require(key, "key");
    jw_compile_key_info info{};
    info.struct_size = sizeof(info);
    info.text = key->text.c_str();
    info.kernel_name = key->key.kernel_name().c_str();
    info.impl_name = key->key.impl_name().c_str();
    info.target = key->key.target().c_str();
    info.encoding = key->key.encoding().data();
    info.encoding_size = key->key.encoding().size();
    info.hash_lo = key->key.hash().lo;
    info.hash_hi = key->key.hash().hi;
    write_sized(out_info, info, "out_info");
  });
}

JITWARM_EXPORT jw_status jw_compile_key_decode(const void* encoding,
                                               size_t encoding_size,
                                               jw_compile_key** out_key) {
  return c_guard([&] {
    if (encoding_size > 0) require(encoding, "encoding");
    require(out_key, "out_key");
    *out_key = new_compile_key(jitwarm::CompileKey::decode(
        std::string_view(static_cast<const char*>(encoding), encoding_size)));
  });
}

JITWARM_EXPORT void jw_compile_key_free(jw_compile_key* key) {
  delete key;
}

JITWARM_EXPORT void jw_compile_key_list_free(jw_compile_key_list* list) {
  delete static_cast<OwnedCompileKeyList*>(list);
}

JITWARM_EXPORT jw_status jw_runtime_is_cached(jw_runtime* runtime,
                                              const jw_compile_key* key,
                                              int32_t* out_cached) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(key, "key");
    require(out_cached, "out_cached");
    *out_cached = runtime->runtime.is_cached(key->key) ? 1 : 0;
  });
}

JITWARM_EXPORT jw_status jw_runtime_explain_miss(jw_runtime* runtime,
                                                 const jw_compile_key* key,
                                                 char** out_text) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(key, "key");
    require(out_text, "out_text");
    *out_text = owned_string(runtime->runtime.explain_miss(key->key).to_text());
  });
}

JITWARM_EXPORT jw_status jw_specialize_integer(jw_scalar value,
                                               int32_t do_not_specialize,
                                               jw_int_spec* out_spec) {
  return c_guard([&] {
    require(out_spec, "out_spec");
    __int128 v = 0;
    switch (raw_enum(value.kind)) {
      case JW_SCALAR_INT: v = value.value.i; break;
      case JW_SCALAR_UINT: v = value.value.u; break;
      default:
        fail(JW_ERROR_INVALID_ARGUMENT,
             "jw_specialize_integer takes JW_SCALAR_INT or JW_SCALAR_UINT, "
             "got scalar kind {}",
             raw_enum(value.kind));
    }
    const jitwarm::IntSpec spec =
        jitwarm::specialize_integer(v, do_not_specialize != 0);
    *out_spec = jw_int_spec{spec.type, spec.value_class};
  });
}

JITWARM_EXPORT jw_status jw_scalar_specialization_rep(jw_int_spec spec,
                                                      jw_scalar* out_value) {
  return c_guard([&] {
    require(out_value, "out_value");
    const int type = raw_enum(spec.type);
    const int value_class = raw_enum(spec.value_class);
    if (type < JW_INT_I32 || type > JW_INT_U64) {
      fail(JW_ERROR_INVALID_ARGUMENT, "unknown integer type {}", type);
    }
    if (value_class < JW_INT_CLASS_NONE || value_class > JW_INT_CLASS_DIV16) {
      fail(JW_ERROR_INVALID_ARGUMENT, "unknown integer value class {}",
           value_class);
    }
    const __int128 rep = jitwarm::scalar_specialization_rep(
        jitwarm::IntSpec{static_cast<jw_int_type>(type),
                         static_cast<jw_int_class>(value_class)});
    *out_value = rep > INT64_MAX
                     ? jitwarm::scalar_uint(static_cast<uint64_t>(rep))
                     : jitwarm::scalar_int(static_cast<int64_t>(rep));
  });
}

JITWARM_EXPORT jw_status jw_warmup_manifest_load(const char* path,
                                                 jw_warmup_manifest** out) {
  return c_guard([&] {
    require(path, "path");
    require(out, "out");
    *out = new jw_warmup_manifest{jitwarm::load_warmup_manifest(path)};
  });
}

JITWARM_EXPORT jw_status jw_warmup_manifest_parse(const char* toml_text,
                                                  size_t length,
                                                  const char* source_name,
                                                  jw_warmup_manifest** out) {
  return c_guard([&] {
    if (length > 0) require(toml_text, "toml_text");
    require(out, "out");
    *out = new jw_warmup_manifest{jitwarm::parse_warmup_manifest(
        std::string_view(toml_text, length),
        source_name != nullptr ? source_name : "<manifest text>")};
  });
}

JITWARM_EXPORT void jw_warmup_manifest_free(jw_warmup_manifest* manifest) {
  delete manifest;
}

JITWARM_EXPORT void jw_warmup_result_free(jw_warmup_result* result) {
  delete static_cast<OwnedWarmupResult*>(result);
}

JITWARM_EXPORT jw_status jw_runtime_warmup(jw_runtime* runtime,
                                           const jw_warmup_manifest* manifest,
                                           const jw_warmup_options* options,
                                           jw_warmup_result** out_result) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(manifest, "manifest");
    if (out_result != nullptr) *out_result = nullptr;
    finish_warmup(runtime->runtime.warmup(manifest->manifest.requests,
                                          warmup_options_of(options)),
                  out_result);
  });
}

JITWARM_EXPORT jw_status jw_runtime_warmup_plan(
    jw_runtime* runtime, const jw_warmup_manifest* manifest,
    const jw_warmup_options* options, jw_compile_key_list** out_keys) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(manifest, "manifest");
    require(out_keys, "out_keys");
    *out_keys = new_compile_key_list(runtime->runtime.warmup_plan(
        manifest->manifest.requests, warmup_options_of(options)));
  });
}

JITWARM_EXPORT jw_status jw_runtime_warmup_keys(
    jw_runtime* runtime, const jw_compile_key* const* keys, uint32_t num_keys,
    const jw_warmup_options* options, jw_warmup_result** out_result) {
  return c_guard([&] {
    require(runtime, "runtime");
    if (num_keys > 0) require(keys, "keys");
    if (out_result != nullptr) *out_result = nullptr;
    std::vector<jitwarm::CompileKey> list;
    list.reserve(num_keys);
    for (uint32_t i = 0; i < num_keys; ++i) {
      if (keys[i] == nullptr)
        fail(JW_ERROR_INVALID_ARGUMENT, "keys[{}] is null", i);
      list.push_back(keys[i]->key);
    }
    finish_warmup(
        runtime->runtime.warmup_keys(list, warmup_options_of(options)),
        out_result);
  });
}

JITWARM_EXPORT jw_status jw_runtime_seal(jw_runtime* runtime) {
  return c_guard([&] {
    require(runtime, "runtime");
    runtime->runtime.seal();
  });
}

JITWARM_EXPORT jw_status jw_runtime_is_sealed(jw_runtime* runtime,
                                              int32_t* out_sealed) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_sealed, "out_sealed");
    *out_sealed = runtime->runtime.sealed() ? 1 : 0;
  });
}

JITWARM_EXPORT jw_status jw_runtime_set_jit_monitor(jw_runtime* runtime,
                                                    jw_jit_monitor_mode mode) {
  return c_guard([&] {
    require(runtime, "runtime");
    runtime->runtime.set_jit_monitor(
        *monitor_mode_of(mode, /*allow_default=*/false));
  });
}

JITWARM_EXPORT jw_status
jw_runtime_get_jit_monitor(jw_runtime* runtime, jw_jit_monitor_mode* out_mode) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_mode, "out_mode");
    switch (runtime->runtime.jit_monitor()) {
      case jitwarm::JitMonitorMode::off: *out_mode = JW_JIT_MONITOR_OFF; break;
      case jitwarm::JitMonitorMode::warn:
        *out_mode = JW_JIT_MONITOR_WARN;
        break;
      case jitwarm::JitMonitorMode::error:
        *out_mode = JW_JIT_MONITOR_ERROR;
        break;
    }
  });
}

JITWARM_EXPORT jw_status jw_runtime_set_jit_record_path(jw_runtime* runtime,
                                                        const char* path) {
  return c_guard([&] {
    require(runtime, "runtime");
    runtime->runtime.set_jit_record_path(path != nullptr ? path : "");
  });
}

JITWARM_EXPORT jw_status jw_runtime_metrics(jw_runtime* runtime,
                                            char** out_text) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_text, "out_text");
    *out_text = nullptr;
    *out_text = owned_string(runtime->runtime.metrics_text());
  });
}

JITWARM_EXPORT jw_status jw_runtime_get_counters(jw_runtime* runtime,
                                                 jw_runtime_counters* out) {
  return c_guard([&] {
    require(runtime, "runtime");
    const jitwarm::CacheStats s = runtime->runtime.cache_stats();
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
    write_sized(out, c, "out");
  });
}

}  // extern "C"

// ===========================================================================
// Caches for fleets (jitwarm.h, the section of that name).
// ===========================================================================
namespace {

struct OwnedCacheSettings : jw_cache_settings {
  jitwarm::CacheSettings settings;
  std::string source;
  std::vector<const char*> trusted_key_id_pointers;
};

jw_cache_settings* new_cache_settings(jitwarm::CacheSettings settings) {
  auto owned = std::make_unique<OwnedCacheSettings>();
  owned->settings = std::move(settings);
  const jitwarm::CacheSettings& s = owned->settings;
  owned->source = std::string(jitwarm::to_string(s.directory_source));
  jw_cache_settings& c = *owned;
  c.struct_size = sizeof(jw_cache_settings);
  c.next = nullptr;
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
  c.remote_cache_mode = s.remote_mode == jitwarm::RemoteCacheMode::read_only
                            ? JW_REMOTE_CACHE_READ_ONLY
                            : JW_REMOTE_CACHE_READ_WRITE;
  return owned.release();
}

struct OwnedBundleTarget : jw_cache_bundle_target {
  std::string name;
};
struct OwnedBundleEntry : jw_cache_bundle_entry {
  jitwarm::CacheBundleEntry entry;
};
struct OwnedBundleSummary : jw_cache_bundle_summary {
  jitwarm::CacheBundleSummary summary;
  std::vector<std::unique_ptr<OwnedBundleTarget>> target_items;
  std::vector<const jw_cache_bundle_target*> target_pointers;
  std::vector<std::unique_ptr<OwnedBundleEntry>> entry_items;
  std::vector<const jw_cache_bundle_entry*> entry_pointers;
};

jw_cache_bundle_summary* new_bundle_summary(jitwarm::CacheBundleSummary s) {
  auto owned = std::make_unique<OwnedBundleSummary>();
  owned->summary = std::move(s);
  const jitwarm::CacheBundleSummary& summary = owned->summary;
  for (const auto& [target, n] : summary.targets) {
    auto item = std::make_unique<OwnedBundleTarget>();
    item->name = target;
    item->struct_size = sizeof(jw_cache_bundle_target);
    item->next = nullptr;
    item->target = item->name.c_str();
    item->entries = n;
    owned->target_pointers.push_back(item.get());
    owned->target_items.push_back(std::move(item));
  }
  for (const auto& e : summary.manifest) {
    auto item = std::make_unique<OwnedBundleEntry>();
    item->entry = e;
    item->struct_size = sizeof(jw_cache_bundle_entry);
    item->next = nullptr;
    item->key = item->entry.key.c_str();
    item->target = item->entry.target.c_str();
    item->bytes = item->entry.bytes;
    owned->entry_pointers.push_back(item.get());
    owned->entry_items.push_back(std::move(item));
  }
  jw_cache_bundle_summary& c = *owned;
  c.struct_size = sizeof(jw_cache_bundle_summary);
  c.next = nullptr;
  c.bundle = summary.bundle.c_str();
  c.cache_dir = summary.cache_dir.c_str();
  c.entries = summary.entries;
  c.written = summary.written;
  c.present = summary.present;
  c.skipped_corrupt = summary.skipped_corrupt;
  c.entry_bytes = summary.entry_bytes;
  c.file_bytes = summary.file_bytes;
  c.targets = owned->target_pointers.data();
  c.num_targets = static_cast<uint32_t>(owned->target_pointers.size());
  c.manifest = owned->entry_pointers.data();
  c.num_entries = owned->entry_pointers.size();
  c.sha256 = summary.sha256.c_str();
  c.signer = summary.signer.c_str();
  return owned.release();
}

// targets[0, count): the C lists of targets the cache calls take.
std::vector<std::string> target_list(const char* const* targets,
                                     uint32_t count) {
  if (count > 0) require(targets, "targets");
  std::vector<std::string> out;
  for (uint32_t i = 0; i < count; ++i) {
    if (targets[i] == nullptr)
      fail(JW_ERROR_INVALID_ARGUMENT, "targets[{}] is null", i);
    out.emplace_back(targets[i]);
  }
  return out;
}

struct OwnedEntryInfo : jw_cache_entry_info {
  jitwarm::CacheEntryInfo info;
};

struct OwnedListing : jw_cache_listing {
  jitwarm::CacheListing listing;
  std::vector<std::unique_ptr<OwnedEntryInfo>> items;
  std::vector<const jw_cache_entry_info*> pointers;
  std::vector<const char*> paths, reasons;
};

jw_cache_listing* new_listing(jitwarm::CacheListing listing) {
  auto owned = std::make_unique<OwnedListing>();
  owned->listing = std::move(listing);
  for (const jitwarm::CacheEntryInfo& e : owned->listing.entries) {
    auto item = std::make_unique<OwnedEntryInfo>();
    item->info = e;
    item->struct_size = sizeof(jw_cache_entry_info);
    item->next = nullptr;
    item->key = item->info.key.c_str();
    item->kernel = item->info.kernel.c_str();
    item->implementation = item->info.implementation.c_str();
    item->target = item->info.target.c_str();
    item->bytes = item->info.bytes;
    item->system = item->info.system ? 1 : 0;
    owned->pointers.push_back(item.get());
    owned->items.push_back(std::move(item));
  }
  for (const jitwarm::CorruptCacheEntry& e : owned->listing.corrupt) {
    owned->paths.push_back(e.path.c_str());
    owned->reasons.push_back(e.why.c_str());
  }
  jw_cache_listing& c = *owned;
  c.struct_size = sizeof(jw_cache_listing);
  c.next = nullptr;
  c.cache_dir = owned->listing.cache_dir.c_str();
  c.entries = owned->pointers.data();
  c.num_entries = owned->pointers.size();
  c.corrupt_paths = owned->paths.data();
  c.corrupt_reasons = owned->reasons.data();
  c.num_corrupt = owned->paths.size();
  return owned.release();
}

struct OwnedReport : jw_cache_report {
  jitwarm::CacheReport report;
  std::vector<jw_cache_bundle_use> bundle_items;
  std::vector<const jw_cache_bundle_use*> bundle_pointers;
  std::vector<const char*> bundle_problem_texts;
  std::vector<const char*> files;
  std::vector<std::unique_ptr<OwnedBundleTarget>> target_items;
  std::vector<const jw_cache_bundle_target*> target_pointers;
};

jw_cache_report* new_report(jitwarm::CacheReport report) {
  auto owned = std::make_unique<OwnedReport>();
  owned->report = std::move(report);
  const jitwarm::CacheReport& r = owned->report;
  for (const std::string& f : r.corrupt_files)
    owned->files.push_back(f.c_str());
  for (const auto& [target, n] : r.removed_by_target) {
    auto item = std::make_unique<OwnedBundleTarget>();
    item->name = target;
    item->struct_size = sizeof(jw_cache_bundle_target);
    item->next = nullptr;
    item->target = item->name.c_str();
    item->entries = n;
    owned->target_pointers.push_back(item.get());
    owned->target_items.push_back(std::move(item));
  }
  owned->bundle_items.reserve(r.bundles.size());  // pointers into it stay
  for (const jitwarm::CacheBundleUse& b : r.bundles) {
    owned->bundle_items.push_back(jw_cache_bundle_use{
        sizeof(jw_cache_bundle_use), nullptr, b.name.c_str(), b.id.c_str(),
        b.imported, b.entries, b.entries_ever_hit});
    owned->bundle_pointers.push_back(&owned->bundle_items.back());
  }
  for (const std::string& p : r.bundle_problems)
    owned->bundle_problem_texts.push_back(p.c_str());
  jw_cache_report& c = *owned;
  c.struct_size = sizeof(jw_cache_report);
  c.next = nullptr;
  c.cache_dir = r.cache_dir.c_str();
  c.entries = r.entries;
  c.bytes = r.bytes;
  c.system_entries = r.system_entries;
  c.system_bytes = r.system_bytes;
  c.corrupt = r.corrupt;
  c.corrupt_files = owned->files.data();
  c.num_corrupt_files = owned->files.size();
  c.removed = r.removed;
  c.removed_bytes = r.removed_bytes;
  c.removed_by_target = owned->target_pointers.data();
  c.num_removed_targets = static_cast<uint32_t>(owned->target_pointers.size());
  c.bundles = owned->bundle_pointers.data();
  c.num_bundles = static_cast<uint32_t>(owned->bundle_pointers.size());
  c.bundle_problems = owned->bundle_problem_texts.data();
  c.num_bundle_problems =
      static_cast<uint32_t>(owned->bundle_problem_texts.size());
  return owned.release();
}

// One cache action: its report to `out`.
template <typename Action>
jw_status report_to(jw_cache_report** out, Action&& action) {
  return c_guard([&] {
    require(out, "out_report");
    *out = nullptr;
    *out = new_report(action());
  });
}

}  // namespace

extern "C" {

JITWARM_EXPORT jw_status jw_cache_settings_resolve(
    const jw_runtime_options* options, jw_cache_settings** out_settings) {
  return c_guard([&] {
    require(out_settings, "out_settings");
    *out_settings = new_cache_settings(
        jitwarm::resolve_cache_settings(runtime_options_of(options)));
  });
}

JITWARM_EXPORT jw_status jw_runtime_cache_settings(
    jw_runtime* runtime, jw_cache_settings** out_settings) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(out_settings, "out_settings");
    *out_settings = new_cache_settings(runtime->runtime.cache_settings());
  });
}

JITWARM_EXPORT void jw_cache_settings_free(jw_cache_settings* settings) {
  delete static_cast<OwnedCacheSettings*>(settings);
}

namespace {

struct OwnedExternalEntry : jw_external_entry {
  jitwarm::ExternalEntry entry;
};

}  // namespace

JITWARM_EXPORT jw_status jw_compile_key_create(const char* kernel_name,
                                               const char* impl_name,
                                               const char* target,
                                               jw_compile_key** out_key) {
  return c_guard([&] {
    require(kernel_name, "kernel_name");
    require(impl_name, "impl_name");
    require(target, "target");
    require(out_key, "out_key");
    *out_key = new_compile_key(
        jitwarm::CompileKey(kernel_name, impl_name, target, {}));
  });
}

JITWARM_EXPORT jw_status jw_runtime_store_external_entry(
    jw_runtime* runtime, const jw_compile_key* key, const char* fingerprint,
    const jw_external_entry* entry, int32_t* out_stored) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(key, "key");
    require(fingerprint, "fingerprint");
    require(entry, "entry");
    require(entry->format, "entry->format");
    if (entry->binary_size > 0) require(entry->binary, "entry->binary");
    require(out_stored, "out_stored");
    jitwarm::ExternalEntry stored;
    stored.binary.assign(static_cast<const char*>(entry->binary),
                         entry->binary_size);
    stored.format = entry->format;
    if (entry->entry_point != nullptr) stored.entry_point = entry->entry_point;
    *out_stored =
        runtime->runtime.store_external_entry(key->key, fingerprint, stored)
            ? 1
            : 0;
  });
}

JITWARM_EXPORT jw_status jw_runtime_load_external_entry(
    jw_runtime* runtime, const jw_compile_key* key, const char* fingerprint,
    jw_external_entry** out_entry) {
  return c_guard([&] {
    require(runtime, "runtime");
    require(key, "key");
    require(fingerprint, "fingerprint");
    require(out_entry, "out_entry");
    *out_entry = nullptr;
    std::optional<jitwarm::ExternalEntry> found =
        runtime->runtime.load_external_entry(key->key, fingerprint);
    if (!found) return;
    auto owned = std::make_unique<OwnedExternalEntry>();
    owned->entry = std::move(*found);
    jw_external_entry& c = *owned;
    c.struct_size = sizeof(jw_external_entry);
    c.next = nullptr;
    c.binary = owned->entry.binary.data();
    c.binary_size = owned->entry.binary.size();
    c.format = owned->entry.format.c_str();
    c.entry_point = owned->entry.entry_point.c_str();
    *out_entry = owned.release();
  });
}

JITWARM_EXPORT void jw_external_entry_free(jw_external_entry* entry) {
  delete static_cast<OwnedExternalEntry*>(entry);
}

JITWARM_EXPORT void jw_cache_bundle_summary_free(
    jw_cache_bundle_summary* summary) {
  delete static_cast<OwnedBundleSummary*>(summary);
}

JITWARM_EXPORT jw_status jw_cache_export_bundle(
    const char* bundle_path, const char* const* targets, uint32_t num_targets,
    const jw_runtime_options* cache, jw_cache_bundle_summary** out_summary) {
  return c_guard([&] {
    require(bundle_path, "bundle_path");
    if (out_summary != nullptr) *out_summary = nullptr;
    const std::vector<std::string> wanted = target_list(targets, num_targets);
    jitwarm::CacheBundleSummary s = jitwarm::export_cache_bundle(
        bundle_path, wanted, runtime_options_of(cache));
    if (out_summary != nullptr) *out_summary = new_bundle_summary(std::move(s));
  });
}

JITWARM_EXPORT jw_status
jw_cache_import_bundle(const char* bundle_path, const jw_runtime_options* cache,
                       jw_cache_bundle_summary** out_summary) {
  return jw_cache_import_bundle_pinned(bundle_path, cache, nullptr,
                                       out_summary);
}

JITWARM_EXPORT jw_status jw_cache_import_bundle_pinned(
    const char* bundle_path, const jw_runtime_options* cache,
    const char* sha256, jw_cache_bundle_summary** out_summary) {
  return c_guard([&] {
    require(bundle_path, "bundle_path");
    if (out_summary != nullptr) *out_summary = nullptr;
    jitwarm::CacheBundleSummary s =
        jitwarm::import_cache_bundle(bundle_path, runtime_options_of(cache),
                                     sha256 != nullptr ? sha256 : "");
    if (out_summary != nullptr) *out_summary = new_bundle_summary(std::move(s));
  });
}

JITWARM_EXPORT void jw_cache_listing_free(jw_cache_listing* listing) {
  delete static_cast<OwnedListing*>(listing);
}

JITWARM_EXPORT void jw_cache_report_free(jw_cache_report* report) {
  delete static_cast<OwnedReport*>(report);
}

JITWARM_EXPORT jw_status jw_cache_list(const char* const* targets,
                                       uint32_t num_targets,
                                       const jw_runtime_options* cache,
                                       jw_cache_listing** out_listing) {
  return c_guard([&] {
    require(out_listing, "out_listing");
    *out_listing = nullptr;
    *out_listing = new_listing(jitwarm::list_cache(
        target_list(targets, num_targets), runtime_options_of(cache)));
  });
}

JITWARM_EXPORT jw_status jw_cache_stats(const jw_runtime_options* cache,
                                        jw_cache_report** out_report) {
  return report_to(out_report, [&] {
    return jitwarm::cache_directory_stats(runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_cache_verify(const jw_runtime_options* cache,
                                         jw_cache_report** out_report) {
  return report_to(out_report, [&] {
    return jitwarm::verify_cache(runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_cache_prune(const jw_runtime_options* cache,
                                        jw_cache_report** out_report) {
  return report_to(out_report, [&] {
    return jitwarm::prune_cache(runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_cache_clear(const char* const* targets,
                                        uint32_t num_targets,
                                        const jw_runtime_options* cache,
                                        jw_cache_report** out_report) {
  return report_to(out_report, [&] {
    return jitwarm::clear_cache(target_list(targets, num_targets),
                                runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_warmup_shard(const jw_compile_key* const* plan,
                                         uint32_t num_keys, uint32_t shard,
                                         uint32_t count,
                                         jw_compile_key_list** out_keys) {
  return c_guard([&] {
    if (num_keys > 0) require(plan, "plan");
    require(out_keys, "out_keys");
    std::vector<jitwarm::CompileKey> keys;
    keys.reserve(num_keys);
    for (uint32_t i = 0; i < num_keys; ++i) {
      if (plan[i] == nullptr)
        fail(JW_ERROR_INVALID_ARGUMENT, "plan[{}] is null", i);
      keys.push_back(plan[i]->key);
    }
    *out_keys = new_compile_key_list(jitwarm::warmup_shard(keys, shard, count));
  });
}

JITWARM_EXPORT jw_status jw_runtime_load_plugins_with_options(
    jw_runtime* runtime, const jw_plugin_load_options* options) {
  jitwarm::PluginLoadOptions load;
  const jw_status read = c_guard([&] {
    const jw_plugin_load_options o =
        read_sized(options, "jw_plugin_load_options");
    load.strict = o.strict != 0;
    load.isolate = o.isolate != 0;
    if (o.probe_timeout_ms != 0) {
      load.probe_timeout_seconds = o.probe_timeout_ms / 1000.0;
    }
    if (o.search_path != nullptr) {
      load.search_path = jitwarm::split_path_list(o.search_path);
    }
  });
  if (read != JW_OK) return read;
  return load_plugins(runtime, std::move(load));
}

}  // extern "C"
