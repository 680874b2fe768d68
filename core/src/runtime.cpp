// The runtime: its parts built from options and environment, wired
// together (runtime_impl.hpp lists them and why they come in that order),
// and the public C++ API, which forwards each call to the part that owns
// its job.
#include <jitwarm/jitwarm.hpp>

#include <cstdlib>

#include "errors.hpp"
#include "host_kernels.hpp"
#include "miss_explanation.hpp"
#include "runtime_impl.hpp"
#include "tuner.hpp"

namespace jitwarm::detail {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

JitMonitorMode monitor_mode_from(const RuntimeOptions& options) {
  if (options.jit_monitor) return *options.jit_monitor;
  const std::string m = env_or_empty("JITWARM_JIT_MONITOR");
  if (m.empty()) return JitMonitorMode::off;
  const auto mode = parse_jit_monitor_mode(m);
  if (!mode) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "JITWARM_JIT_MONITOR='{}': use off, warn or error", m);
  }
  return *mode;
}

}  // namespace

RuntimeImpl::RuntimeImpl(RuntimeOptions options)
    : logger_(std::move(options.log)),
      monitor_(logger_, monitor_mode_from(options),
               options.jit_record_path.empty()
                   ? env_or_empty("JITWARM_JIT_RECORD")
                   : options.jit_record_path),
      caches_(options, logger_),
      registry_(logger_),
      compiler_(caches_.cache(), monitor_, logger_),
      tune_results_(caches_.cache(), logger_),
      launcher_(registry_, platforms_, caches_.cache(), compiler_,
                tune_results_),
      warmup_(registry_, platforms_, caches_, compiler_, tune_results_,
              logger_),
      load_history_(logger_),
      source_kernels_(registry_, logger_, load_history_),
      plugin_host_(logger_, registry_, platforms_, caches_, load_history_,
                   source_kernels_) {
  // Compiles are counted before or after seal (cache_metrics.hpp); the
  // monitor outlives the cache's use of it (both are this runtime's).
  caches_.cache().set_sealed_query([this] { return monitor_.sealed(); });
}

RuntimeImpl::~RuntimeImpl() = default;

RegistrationHandle RuntimeImpl::registration(
    std::function<void(RuntimeImpl&)> release) {
  std::weak_ptr<RuntimeImpl> weak = weak_from_this();
  return RegistrationHandle([weak, release = std::move(release)] {
    if (const auto runtime = weak.lock()) release(*runtime);
  });
}

RuntimeImpl& impl_of(const Runtime& runtime) {
  return *runtime.impl_;
}

const PreparedLaunch* RuntimeImpl::find_prepared(
    const KernelHandle& handle, std::span<const jw_arg_value> args,
    std::string_view platform, int32_t device) {
  return handle.runtime_->launcher().find_prepared(*handle.slot_, args,
                                                   platform, device);
}

void RuntimeImpl::launch(const KernelHandle& handle,
                         std::span<const jw_arg_value> args,
                         std::string_view platform, int32_t device,
                         void* stream) {
  handle.runtime_->launcher().launch(*handle.slot_, args, platform, device,
                                     stream);
  // After each read of the registry (its guard has ended), states waiting
  // for their grace period may be freed (registry.hpp StateReaders).
  handle.runtime_->registry().collect_retired();
}

}  // namespace jitwarm::detail

// ===========================================================================
// Public API
// ===========================================================================
namespace jitwarm {

using detail::RuntimeImpl;

std::optional<JitMonitorMode> parse_jit_monitor_mode(std::string_view text) {
  if (text == "off") return JitMonitorMode::off;
  if (text == "warn") return JitMonitorMode::warn;
  if (text == "error") return JitMonitorMode::error;
  return std::nullopt;
}

KernelHandle::KernelHandle(std::shared_ptr<RuntimeImpl> runtime,
                           std::shared_ptr<detail::KernelSlot> slot)
    : runtime_(std::move(runtime)), slot_(std::move(slot)) {}

const std::string& KernelHandle::name() const {
  return slot_->name;
}

const KernelSchema& KernelHandle::schema() const {
  // The schema outlives any state that names it (the registry keeps it).
  const auto reading = runtime_->registry().read_guard();
  return *slot_->state.load(std::memory_order_acquire)->schema;
}

void KernelHandle::launch(std::span<const jw_arg_value> args,
                          const LaunchOptions& options) const {
  RuntimeImpl::launch(*this, args, options.platform, options.device,
                      options.stream);
}

bool KernelHandle::is_prepared(std::span<const jw_arg_value> args,
                               const LaunchOptions& options) const {
  const bool prepared =
      RuntimeImpl::find_prepared(*this, args, options.platform,
                                 options.device) != nullptr;
  runtime_->registry().collect_retired();
  return prepared;
}

CompileKey KernelHandle::key_for(std::span<const jw_arg_value> args,
                                 const LaunchOptions& options) const {
  CompileKey key = runtime_->launcher().key_for(*slot_, args, options.platform,
                                                options.device);
  runtime_->registry().collect_retired();
  return key;
}

TuneResult KernelHandle::tune(std::span<const jw_arg_value> args,
                              const TuneOptions& options) const {
  TuneResult result =
      detail::tune_launches(runtime_->launcher(), runtime_->platforms(),
                            runtime_->tune_results(), *slot_, args, options);
  // Launches prepared before hold the binary of the config they resolved
  // then: they prepare again, so that this runtime runs the winner too.
  if (options.store) runtime_->registry().refresh(slot_->name);
  runtime_->registry().collect_retired();  // as after a launch
  return result;
}

Runtime::Runtime(RuntimeOptions options)
    : impl_(std::make_shared<RuntimeImpl>(std::move(options))) {}
Runtime::~Runtime() = default;

PluginLoadReport Runtime::load_plugins(const PluginLoadOptions& options) {
  return impl_->plugin_host().load_plugins(options);
}

PluginLoadRecord Runtime::load_plugin(const std::string& path, bool strict) {
  PluginLoadRecord record = impl_->plugin_host().load_plugin(path);
  if (strict && !record.loaded) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "plugin {} rejected ({}): {}", path,
                 to_string(record.rejection), record.detail);
  }
  return record;
}

std::vector<PluginLoadRecord> Runtime::load_history() const {
  return impl_->load_history().records();
}

KernelHandle Runtime::kernel(std::string_view name) const {
  return KernelHandle(impl_, impl_->registry().resolve(name));
}

std::vector<std::string> Runtime::kernel_names() const {
  return impl_->registry().kernel_names();
}

const KernelSchema& Runtime::schema(std::string_view name) const {
  return kernel(name).schema();
}

std::vector<ImplementationInfo> Runtime::implementations(
    std::string_view name) const {
  // Implementations waiting for their schema are found by the full name
  // they gave; the kernels defined, by any name resolve() takes.
  std::vector<ImplementationInfo> found =
      impl_->registry().implementations(name);
  if (!found.empty()) return found;
  return impl_->registry().implementations(
      impl_->registry().resolve(name)->name);
}

KernelExplanation Runtime::explain(std::string_view name) const {
  return impl_->registry().explain(impl_->registry().resolve(name)->name);
}

std::vector<PlatformInfo> Runtime::platforms() const {
  std::vector<PlatformInfo> out;
  for (const auto& p : impl_->platforms().all()) out.push_back(p->info());
  return out;
}

std::string Runtime::default_platform() const {
  return std::string(impl_->platforms().default_platform());
}

std::string Runtime::cpu_fallback_reason() const {
  return impl_->platforms().cpu_fallback_reason();
}

std::string Runtime::target_for(std::string_view platform,
                                int32_t device) const {
  return impl_->platforms().target_for(platform, device);
}

RegistrationHandle Runtime::register_kernels(
    std::vector<KernelOverride> overrides, std::string origin) {
  std::vector<uint64_t> tokens = detail::register_host_kernels(
      impl_->registry(), std::move(overrides), origin);
  return impl_->registration(
      [tokens = std::move(tokens)](RuntimeImpl& runtime) {
        runtime.registry().remove_batch(tokens);
      });
}

std::vector<SourceKernel> Runtime::source_kernels() const {
  return impl_->source_kernels().kernels();
}

RegistrationHandle Runtime::register_source_kernel(SourceKernel kernel) {
  if (kernel.origin.empty()) kernel.origin = "host";
  const std::weak_ptr<detail::SourceKernelState> added =
      impl_->source_kernels().add(std::move(kernel), detail::ImplSource::host,
                                  nullptr);
  return impl_->registration([added](RuntimeImpl& runtime) {
    if (const auto kernel = added.lock()) {
      runtime.source_kernels().remove(kernel);
    }
  });
}

WarmupResult Runtime::warmup(const std::vector<WarmupRequest>& requests,
                             const WarmupOptions& options) {
  WarmupResult result = impl_->warmup().warm(requests, options);
  impl_->registry().collect_retired();
  return result;
}

void WarmupResult::count_outcomes() {
  compiled = cached = failed = 0;
  for (const auto& k : keys) {
    if (k.failed) {
      ++failed;
    } else if (k.compiled) {
      ++compiled;
    } else {
      ++cached;
    }
  }
}

WarmupResult Runtime::warmup_keys(const std::vector<CompileKey>& keys,
                                  const WarmupOptions& options) {
  WarmupResult result = impl_->warmup().warm_keys(keys, options);
  impl_->registry().collect_retired();
  return result;
}

std::vector<CompileKey> Runtime::warmup_plan(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  return impl_->warmup().plan_keys(requests, options);
}

void Runtime::seal() {
  impl_->monitor().seal();
}
bool Runtime::sealed() const {
  return impl_->monitor().sealed();
}
void Runtime::set_jit_monitor(JitMonitorMode mode) {
  impl_->monitor().set_mode(mode);
}
JitMonitorMode Runtime::jit_monitor() const {
  return impl_->monitor().mode();
}
void Runtime::set_jit_record_path(std::string path) {
  impl_->monitor().set_record_path(std::move(path));
}
JitMonitorStats Runtime::jit_monitor_stats() const {
  return impl_->monitor().stats();
}

CacheStats Runtime::cache_stats() const {
  return impl_->caches().cache().stats();
}

std::string Runtime::metrics_text() const {
  const detail::CompileCache& cache = impl_->caches().cache();
  return cache.metrics().render(cache.stats(), impl_->monitor().counts(),
                                impl_->monitor().sealed());
}

const CacheSettings& Runtime::cache_settings() const {
  return impl_->caches().settings();
}

bool Runtime::is_cached(const CompileKey& key) const {
  return impl_->caches().cache().find(key) != nullptr;
}

namespace {

// Calls `ask` with `key`'s implementation as the compile path would find it,
// under the registry's read guard (registry.hpp I2) for as long as it is
// asked. Throws Error(JW_ERROR_NOT_FOUND), starting with `what`, for a
// kernel or implementation not loaded.
template <typename Ask>
auto ask_key_impl(detail::RuntimeImpl& runtime, const CompileKey& key,
                  std::string_view what, Ask&& ask) {
  const std::string platform = key.target().substr(0, key.target().find(':'));
  const auto slot = runtime.registry().slot_of_key(key, what);
  auto answer = [&] {
    const auto reading = runtime.registry().read_guard();
    const detail::KernelState* state =
        slot->state.load(std::memory_order_acquire);
    const detail::KernelState::Platform* entry = state->find(platform);
    const detail::ImplRecord* impl = nullptr;
    if (entry != nullptr) {
      for (const auto& candidate : entry->stack) {
        if (candidate->impl_name == key.impl_name()) impl = candidate.get();
      }
    }
    if (impl == nullptr) {
      detail::fail(JW_ERROR_NOT_FOUND,
                   "{}: {} has no implementation '{}' on {}", what,
                   key.kernel_name(), key.impl_name(), platform);
    }
    return ask(*impl);
  }();
  runtime.registry().collect_retired();
  return answer;
}

}  // namespace

std::vector<TuneConfig> Runtime::tune_candidates(const CompileKey& key) const {
  return ask_key_impl(*impl_, key, "tune_candidates",
                      [&](const detail::ImplRecord& impl) {
                        return detail::tune_candidates(impl, key);
                      });
}

TuneResult Runtime::tune(std::string_view kernel,
                         std::span<const jw_arg_value> args,
                         const TuneOptions& options) {
  return this->kernel(kernel).tune(args, options);
}

std::optional<TuneResult> Runtime::tune_result(
    const CompileKey& key, std::string_view device_kind) const {
  return ask_key_impl(
      *impl_, key, "tune_result", [&](const detail::ImplRecord& impl) {
        return impl_->tune_results().find(impl, key, device_kind);
      });
}

std::string Runtime::device_kind(std::string_view platform,
                                 int32_t device) const {
  return impl_->platforms().device_kind(
      platform.empty() ? impl_->platforms().default_platform() : platform,
      device);
}

std::string TuneResult::to_text() const {
  std::string out =
      fmt::format("{}\n  on {}: best {}{}\n", key_text, device_kind,
                  tune_config_text(best), stored ? "" : " (not stored)");
  for (const TuneTiming& t : timings) {
    const std::string config = tune_config_text(t.config);
    if (!t.error.empty()) {
      out += fmt::format("  {:<40} failed: {}\n", config, t.error);
    } else {
      out += fmt::format("  {:<40} {:>12.3f} us{}\n", config, t.seconds * 1e6,
                         t.config == best ? "  <- best" : "");
    }
  }
  return out;
}

MissExplanation Runtime::explain_miss(const CompileKey& key) const {
  const std::optional<std::string> fingerprint = ask_key_impl(
      *impl_, key, "explain_miss", [&](const detail::ImplRecord& impl) {
        return detail::key_fingerprint(impl, key);
      });
  MissExplanation explanation;
  explanation.key = key.text();
  const std::shared_ptr<detail::DiskCache>& disk = impl_->caches().disk_cache();
  if (is_cached(key)) {
    explanation.would_hit = true;
  } else if (!fingerprint) {
    explanation.not_kept =
        "its implementation gives no fingerprint, so no persistent tier keeps "
        "it";
  } else if (!disk) {
    explanation.not_kept = "this runtime has no cache directory";
  } else {
    explanation = detail::explain_against(key, *fingerprint, *disk);
  }
  return explanation;
}

std::optional<Runtime::ArtifactInfo> Runtime::cached_artifact(
    const CompileKey& key) const {
  const detail::Artifact* artifact = impl_->caches().cache().find(key);
  if (artifact == nullptr) return std::nullopt;
  return ArtifactInfo{artifact->binary, artifact->format,
                      artifact->entry_point};
}

const jw_platform_desc& Runtime::platform(std::string_view name) const {
  detail::PlatformRecord* record = impl_->platforms().find(name);
  if (record == nullptr)
    detail::fail(JW_ERROR_NOT_FOUND, "unknown platform '{}'", name);
  return record->c;
}

void Runtime::log(jw_log_level level, const std::string& message) const {
  impl_->logger().log(level, message);
}

}  // namespace jitwarm
