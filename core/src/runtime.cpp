// The runtime: platforms, the launch path, compile-through-cache, the JIT
// monitor, warmup execution, register_kernels, and the public C++ API.
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "errors.hpp"
#include "runtime_impl.hpp"

namespace jitwarm::detail {
namespace {

// The launch path's view of one artifact: the key in the owning
// implementation's parameter order. It owns its key: the view points into
// it, and it outlives every launch (the CompileKey a launch derived does not).
struct LaunchAttachment {
  explicit LaunchAttachment(const CompileKey& k) : key(k) {}
  CompileKey key;
  KeyViewStorage key_view;
};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

void make_key_view(const CompileKey& key, const ImplRecord& impl,
                   KeyViewStorage& out) {
  const auto& params = key.params();
  out.specs.clear();
  out.specs.reserve(impl.schema_index.size());
  for (uint32_t schema_index : impl.schema_index) {
    const ParamSpec& p = params.at(schema_index);
    jw_param_spec s{};
    s.struct_size = sizeof(jw_param_spec);
    s.name = p.name.c_str();
    s.kind = p.kind;
    s.dtype = p.dtype;
    s.alignment = p.alignment;
    s.num_stride_specs = static_cast<uint32_t>(p.stride_specs.size());
    for (std::size_t i = 0; i < p.stride_specs.size() && i < JW_MAX_RANK; ++i) {
      s.stride_specs[i] =
          jw_int_spec{p.stride_specs[i].type, p.stride_specs[i].value_class};
    }
    s.int_spec = jw_int_spec{p.int_spec.type, p.int_spec.value_class};
    s.float_type = p.float_type;
    s.scalar_kind = p.scalar_kind;
    s.constexpr_value = p.constexpr_value;
    out.specs.push_back(s);
  }
  out.text = key.text();
  out.view = jw_compile_key_view{};
  out.view.struct_size = sizeof(jw_compile_key_view);
  out.view.kernel_name = key.kernel_name().c_str();
  out.view.impl_name = key.impl_name().c_str();
  out.view.target = key.target().c_str();
  out.view.params = out.specs.data();
  out.view.num_params = static_cast<uint32_t>(out.specs.size());
  out.view.hash_lo = key.hash().lo;
  out.view.hash_hi = key.hash().hi;
  out.view.text = out.text.c_str();
}

// --------------------------------------------------------------------------
// Platforms
// --------------------------------------------------------------------------
PlatformRecord::~PlatformRecord() = default;

PlatformInfo PlatformRecord::info() const {
  PlatformInfo info;
  info.name = name;
  info.origin = origin;
  uint32_t flags = 0;
  TextCollector detail;
  const jw_text_sink sink = detail.sink();
  if (c.capabilities(c.user_data, &flags, &sink) == JW_OK) {
    info.can_compile = (flags & JW_PLATFORM_CAN_COMPILE) != 0;
    info.can_launch = (flags & JW_PLATFORM_CAN_LAUNCH) != 0;
  }
  info.detail = detail.text;
  int32_t count = 0;
  if (info.can_launch && c.device_count(c.user_data, &count) == JW_OK)
    info.device_count = count;
  return info;
}

const std::string& PlatformRecord::target(int32_t device) {
  if (device < 0 || device >= kMaxDevices) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "platform {}: device index {} is out of range", name, device);
  }
  if (const std::string* t = targets[device].load(std::memory_order_acquire))
    return *t;
  std::lock_guard lock(target_mutex);
  if (const std::string* t = targets[device].load(std::memory_order_acquire))
    return *t;
  TextCollector text;
  const jw_text_sink sink = text.sink();
  check_plugin_status(
      c.device_target(c.user_data, device, &sink),
      fmt::format("platform {}: target of device {}", name, device));
  if (text.text.rfind(name + ":", 0) != 0) {
    fail(JW_ERROR_INTERNAL,
         "platform {} reported target '{}' for device {}; expected '{}:...'",
         name, text.text, device, name);
  }
  target_storage.push_back(std::make_unique<std::string>(std::move(text.text)));
  targets[device].store(target_storage.back().get(), std::memory_order_release);
  return *target_storage.back();
}

RuntimeImpl::RuntimeImpl(RuntimeOptions options)
    : logger(std::move(options.log)), registry(logger) {
  std::string cache_dir = options.cache_dir.empty()
                              ? env_or_empty("JITWARM_CACHE_DIR")
                              : options.cache_dir;
  if (!cache_dir.empty()) {
    uint64_t budget = 0;
    if (const std::string b = env_or_empty("JITWARM_CACHE_MAX_BYTES");
        !b.empty()) {
      budget = parse_byte_size(b);
    }
    disk_cache = std::make_shared<DiskCache>(
        cache_dir, env_or_empty("JITWARM_SYSTEM_CACHE_DIR"), budget, &logger);
    cache.set_store(disk_cache);
  }
  if (options.jit_monitor) {
    monitor_mode.store(*options.jit_monitor);
  } else if (const std::string m = env_or_empty("JITWARM_JIT_MONITOR");
             !m.empty()) {
    auto mode = parse_jit_monitor_mode(m);
    if (!mode)
      fail(JW_ERROR_INVALID_ARGUMENT,
           "JITWARM_JIT_MONITOR='{}': use off, warn or error", m);
    monitor_mode.store(*mode);
  }
  record_path_ = options.jit_record_path.empty()
                     ? env_or_empty("JITWARM_JIT_RECORD")
                     : options.jit_record_path;
}

RuntimeImpl::~RuntimeImpl() = default;

std::shared_ptr<PlatformRecord> RuntimeImpl::find_platform(
    std::string_view name) const {
  std::lock_guard lock(platforms_mutex_);
  for (const auto& p : platforms_) {
    if (p->name == name) return p;
  }
  return nullptr;
}

std::vector<std::shared_ptr<PlatformRecord>> RuntimeImpl::platform_records()
    const {
  std::lock_guard lock(platforms_mutex_);
  return platforms_;
}

std::string RuntimeImpl::default_platform() {
  if (const std::string* p = default_platform_.load(std::memory_order_acquire))
    return *p;
  std::vector<std::shared_ptr<PlatformRecord>> records = platform_records();
  std::vector<std::string> order = {"cuda", "hip", "cpu"};
  for (const auto& r : records) {
    if (std::find(order.begin(), order.end(), r->name) == order.end())
      order.push_back(r->name);
  }
  for (const auto& name : order) {
    for (const auto& r : records) {
      if (r->name != name) continue;
      const PlatformInfo info = r->info();
      if (info.can_launch && info.device_count > 0) {
        std::lock_guard lock(platforms_mutex_);
        default_platform_storage_.push_back(
            std::make_unique<std::string>(name));
        default_platform_.store(default_platform_storage_.back().get(),
                                std::memory_order_release);
        return name;
      }
    }
  }
  fail(JW_ERROR_NO_DEVICE, "no loaded platform can launch (platforms: {})",
       [&] {
         std::string names;
         for (const auto& r : records)
           names += (names.empty() ? "" : ", ") + r->name;
         return names.empty() ? std::string("none; load plugins first") : names;
       }());
}

std::string RuntimeImpl::target_for(std::string_view platform, int32_t device) {
  auto record = find_platform(platform);
  if (!record) fail(JW_ERROR_NOT_FOUND, "unknown platform '{}'", platform);
  return record->target(device);
}

// --------------------------------------------------------------------------
// Compile and launch
// --------------------------------------------------------------------------
const ImplRecord& RuntimeImpl::resolve(const KernelState& state,
                                       std::string_view platform,
                                       std::string* platform_name) {
  *platform_name =
      platform.empty() ? default_platform() : std::string(platform);
  const ImplRecord* impl = state.winner(*platform_name);
  if (impl == nullptr) {
    fail(JW_ERROR_NOT_FOUND,
         "{} has no implementation for platform {} (implemented on: {})",
         state.schema->name(), *platform_name, state.platform_list());
  }
  return *impl;
}

void RuntimeImpl::set_record_path(std::string path) {
  std::lock_guard lock(monitor_mutex_);
  record_path_ = std::move(path);
}

void RuntimeImpl::on_launch_compile(const KernelSchema& schema,
                                    const CompileKey& key,
                                    std::string_view platform) {
  if (!sealed()) return;
  const JitMonitorMode mode = monitor_mode.load();
  {
    std::lock_guard lock(monitor_mutex_);
    if (!record_path_.empty() && recorded_keys_.insert(key.encoding()).second) {
      std::ofstream out(record_path_, std::ios::app);
      out << manifest_entry_for_key(schema, key, platform) << '\n';
      if (!out) {
        logger.log(JW_LOG_ERROR, fmt::format("JIT monitor: cannot append to {}",
                                             record_path_));
      }
    }
    if (mode == JitMonitorMode::warn &&
        warned_keys_.insert(key.encoding()).second) {
      logger.log(
          JW_LOG_WARNING,
          fmt::format(
              "JIT monitor: compiling {} on the launch path after warmup",
              key.text()));
    }
  }
  if (mode == JitMonitorMode::error) {
    fail(JW_ERROR_JIT_REFUSED,
         "JIT monitor: refusing to compile {} on the launch path after warmup "
         "was sealed "
         "(warm this key, or set the monitor to warn)",
         key.text());
  }
}

CompileCache::Lookup RuntimeImpl::compile(const ImplRecord& impl,
                                          const KernelSchema& schema,
                                          const CompileKey& key,
                                          bool from_launch) {
  CompileCache::Compiler compiler;
  if (from_launch) {
    compiler.before_compile = [&]() {
      on_launch_compile(schema, key, impl.platform);
    };
  }
  compiler.compile = [&]() {
    KeyViewStorage view;
    make_key_view(key, impl, view);
    struct Sink {
      Artifact artifact;
      int emitted = 0;
    } sink;
    jw_artifact_sink out{};
    out.struct_size = sizeof(out);
    out.ctx = &sink;
    out.emit = [](void* ctx, const jw_artifact_desc* a) -> jw_status {
      return c_guard([&] {
        if (a == nullptr ||
            a->struct_size < offsetof(jw_artifact_desc, entry_point)) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "emit: artifact is null or too small");
        }
        auto& s = *static_cast<Sink*>(ctx);
        if (a->binary_size > 0 && a->binary == nullptr) {
          fail(JW_ERROR_INVALID_ARGUMENT, "emit: binary is null");
        }
        s.artifact.binary.assign(static_cast<const char*>(a->binary),
                                 a->binary_size);
        s.artifact.format = a->format != nullptr ? a->format : "";
        s.artifact.entry_point =
            a->entry_point != nullptr ? a->entry_point : "";
        ++s.emitted;
      });
    };
    set_last_error("");
    check_plugin_status(impl.c.compile(impl.c.user_data, &view.view, &out),
                        fmt::format("compile of {}", key.text()));
    if (sink.emitted != 1) {
      fail(JW_ERROR_INTERNAL,
           "compile of {} emitted {} artifacts (expected exactly one)",
           key.text(), sink.emitted);
    }
    return std::move(sink.artifact);
  };
  if (impl.c.fingerprint != nullptr) {
    compiler.fingerprint = [&]() -> std::optional<std::string> {
      KeyViewStorage view;
      make_key_view(key, impl, view);
      TextCollector text;
      const jw_text_sink sink = text.sink();
      if (impl.c.fingerprint(impl.c.user_data, &view.view, &sink) != JW_OK)
        return std::nullopt;
      return text.text;
    };
  }
  compiler.finalize = [&](Artifact& artifact) {
    auto attachment = std::make_shared<LaunchAttachment>(key);
    make_key_view(attachment->key, impl, attachment->key_view);
    artifact.attachment = std::move(attachment);
  };
  return cache.get_or_compile(key, compiler);
}

CompileKey RuntimeImpl::key_for(const KernelSlot& slot,
                                std::span<const jw_arg_value> args,
                                const LaunchOptions& options) {
  const auto reading = registry.read_guard();  // registry.hpp I2
  const KernelState* state = slot.state.load(std::memory_order_acquire);
  std::string platform;
  const ImplRecord& impl = resolve(*state, options.platform, &platform);
  return derive_key(*state->schema, args, target_for(platform, options.device),
                    impl.impl_name);
}

void RuntimeImpl::launch(const KernelSlot& slot,
                         std::span<const jw_arg_value> args,
                         const LaunchOptions& options) {
  // I2 (registry.hpp): this state stays valid while the guard lives.
  const auto reading = registry.read_guard();
  const KernelState* state = slot.state.load(std::memory_order_acquire);
  std::string platform;
  const ImplRecord& impl = resolve(*state, options.platform, &platform);
  auto record = find_platform(platform);
  if (!record) fail(JW_ERROR_NOT_FOUND, "unknown platform '{}'", platform);
  const KernelSchema& schema = *state->schema;
  for (const jw_arg_value& a : args) {
    if (a.kind == JW_VALUE_WARMUP_TENSOR) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "{}: warmup tensors (metadata without storage) cannot be launched",
           schema.name());
    }
  }
  const CompileKey key =
      derive_key(schema, args, record->target(options.device), impl.impl_name);
  const Artifact* cached = cache.hit(key);
  const Artifact& artifact =
      cached != nullptr
          ? *cached
          : *compile(impl, schema, key, /*from_launch=*/true).artifact;
  const auto& attachment =
      *static_cast<const LaunchAttachment*>(artifact.attachment.get());

  // Arguments in the implementation's order, defaults filled in.
  const auto& params = schema.params();
  std::vector<jw_arg_value> ordered;
  std::span<const jw_arg_value> impl_args = args;
  if (!impl.positional || args.size() != params.size()) {
    ordered.resize(impl.schema_index.size());
    for (std::size_t i = 0; i < impl.schema_index.size(); ++i) {
      const uint32_t s = impl.schema_index[i];
      if (s < args.size()) {
        ordered[i] = args[s];
      } else {
        ordered[i] = jw_arg_value{};
        ordered[i].struct_size = sizeof(jw_arg_value);
        ordered[i].kind = JW_VALUE_SCALAR;
        ordered[i].value.scalar = params[s].default_value;
      }
    }
    impl_args = ordered;
  }
  jw_artifact_view view{};
  view.struct_size = sizeof(view);
  view.key = &attachment.key_view.view;
  view.binary = artifact.binary.data();
  view.binary_size = artifact.binary.size();
  view.format = artifact.format.c_str();
  view.entry_point = artifact.entry_point.c_str();
  view.artifact_id = artifact.id;
  set_last_error("");
  const jw_status status =
      impl.c.launch(impl.c.user_data, &view, impl_args.data(),
                    static_cast<uint32_t>(impl_args.size()), options.stream);
  if (status != JW_OK)
    check_plugin_status(status, fmt::format("launch of {}", key.text()));
}

// --------------------------------------------------------------------------
// Warmup execution
// --------------------------------------------------------------------------
std::vector<RuntimeImpl::WarmupWork> RuntimeImpl::plan(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  std::vector<WarmupWork> work;
  std::set<std::string> seen;
  for (const WarmupRequest& request : requests) {
    // An explicit platform (or target) from the caller wins over the
    // manifest's, so one manifest can warm several platforms.
    std::string platform = options.platform;
    if (platform.empty() && !options.target.empty()) {
      platform = options.target.substr(0, options.target.find(':'));
    }
    if (platform.empty())
      platform =
          !request.platform.empty() ? request.platform : default_platform();
    std::string target = options.target;
    if (target.empty()) {
      try {
        target = target_for(platform, 0);
      } catch (const Error& e) {
        fail(e.status(),
             "warmup on {}: no target given and none detected ({}); pass a "
             "target "
             "such as {}:sm_90",
             platform, e.what(), platform);
      }
    }
    if (target.rfind(platform + ":", 0) != 0) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup target '{}' is not a {} target ('{}:...')", target, platform,
           platform);
    }
    auto slot = registry.slot(request.kernel_name);
    if (!slot)
      fail(JW_ERROR_NOT_FOUND, "warmup: unknown kernel '{}'",
           request.kernel_name);
    const auto reading = registry.read_guard();  // registry.hpp I2
    const KernelState* state = slot->state.load(std::memory_order_acquire);
    std::shared_ptr<ImplRecord> impl;
    for (const auto& p : state->platforms) {
      if (p.name == platform && !p.stack.empty()) impl = p.stack.front();
    }
    if (!impl) {
      fail(JW_ERROR_NOT_FOUND,
           "warmup: {} has no implementation for platform {} (implemented on: "
           "{})",
           request.kernel_name, platform, state->platform_list());
    }
    for (CompileKey& key : enumerate_warmup_keys(*state->schema, request,
                                                 target, impl->impl_name)) {
      if (seen.insert(key.encoding()).second) {
        work.push_back(WarmupWork{state->schema, impl, std::move(key)});
      }
    }
  }
  return work;
}

WarmupResult RuntimeImpl::warmup(const std::vector<WarmupRequest>& requests,
                                 const WarmupOptions& options) {
  return compile_all(plan(requests, options), options);
}

std::vector<CompileKey> RuntimeImpl::warmup_plan(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  std::vector<CompileKey> keys;
  for (auto& w : plan(requests, options)) keys.push_back(std::move(w.key));
  return keys;
}

WarmupResult RuntimeImpl::warmup_keys(const std::vector<CompileKey>& keys,
                                      const WarmupOptions& options) {
  std::vector<WarmupWork> work;
  for (const CompileKey& key : keys) {
    const auto colon = key.target().find(':');
    const std::string platform = key.target().substr(0, colon);
    auto slot = registry.slot(key.kernel_name());
    if (!slot)
      fail(JW_ERROR_NOT_FOUND, "warmup: unknown kernel '{}'",
           key.kernel_name());
    const auto reading = registry.read_guard();  // registry.hpp I2
    const KernelState* state = slot->state.load(std::memory_order_acquire);
    std::shared_ptr<ImplRecord> impl;
    for (const auto& p : state->platforms) {
      if (p.name == platform && !p.stack.empty()) impl = p.stack.front();
    }
    if (!impl || impl->impl_name != key.impl_name()) {
      fail(JW_ERROR_NOT_FOUND,
           "warmup: key {} was made for '{}', but {} on {} is now '{}'",
           key.text(), key.impl_name(), key.kernel_name(), platform,
           impl ? impl->impl_name : std::string("not implemented"));
    }
    work.push_back(WarmupWork{state->schema, impl, key});
  }
  return compile_all(work, options);
}

WarmupResult RuntimeImpl::compile_all(const std::vector<WarmupWork>& work,
                                      const WarmupOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  WarmupResult result;
  result.keys.resize(work.size());
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  std::size_t done = 0;
  const auto worker = [&]() {
    for (std::size_t i = next.fetch_add(1); i < work.size();
         i = next.fetch_add(1)) {
      const WarmupWork& w = work[i];
      WarmupKeyResult& r = result.keys[i];
      r.key_text = w.key.text();
      r.key_hash = w.key.hash();
      try {
        // The inputs a real launch would pass must give this very key.
        (void)warmup_inputs_for(*w.schema, w.key);
        r.compiled =
            compile(*w.impl, *w.schema, w.key, /*from_launch=*/false).compiled;
      } catch (const std::exception& e) {
        r.failed = true;
        r.error = e.what();
      }
      if (options.progress) {
        std::lock_guard lock(progress_mutex);
        options.progress(++done, work.size(), w.key);
      }
    }
  };
  const unsigned jobs = std::max(
      1u, std::min<unsigned>(options.jobs, static_cast<unsigned>(work.size())));
  if (jobs <= 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }
  result.count_outcomes();
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

// --------------------------------------------------------------------------
// Host kernels (register_kernels with a C++ function)
// --------------------------------------------------------------------------
namespace {

struct HostKernelState {
  HostKernel kernel;
};

jw_kernel_impl host_kernel_impl(const std::string& kernel_name,
                                HostKernelState* state) {
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(impl);
  impl.kernel_name = kernel_name.c_str();
  impl.platform = state->kernel.platform.c_str();
  impl.impl_name = state->kernel.impl_name.c_str();
  impl.user_data = state;
  impl.compile = [](void* user, const jw_compile_key_view*,
                    const jw_artifact_sink* out) {
    // A host function has nothing to compile; its artifact names it.
    auto* s = static_cast<HostKernelState*>(user);
    jw_artifact_desc a{};
    a.struct_size = sizeof(a);
    a.binary = s->kernel.impl_name.data();
    a.binary_size = s->kernel.impl_name.size();
    a.format = "host-function";
    a.entry_point = s->kernel.impl_name.c_str();
    return out->emit(out->ctx, &a);
  };
  impl.launch = [](void* user, const jw_artifact_view*,
                   const jw_arg_value* args, uint32_t n, void* stream) {
    return c_guard([&] {
      static_cast<HostKernelState*>(user)->kernel.launch(
          std::span<const jw_arg_value>(args, n), stream);
    });
  };
  impl.destroy = [](void* user) { delete static_cast<HostKernelState*>(user); };
  return impl;
}

}  // namespace
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
  const auto reading = runtime_->registry.read_guard();
  return *slot_->state.load(std::memory_order_acquire)->schema;
}

// After each read of the registry (its guard has ended), states waiting for
// their grace period may be freed (registry.hpp StateReaders).
void KernelHandle::launch(std::span<const jw_arg_value> args,
                          const LaunchOptions& options) const {
  runtime_->launch(*slot_, args, options);
  runtime_->registry.collect_retired();
}

CompileKey KernelHandle::key_for(std::span<const jw_arg_value> args,
                                 const LaunchOptions& options) const {
  CompileKey key = runtime_->key_for(*slot_, args, options);
  runtime_->registry.collect_retired();
  return key;
}

Runtime::Runtime(RuntimeOptions options)
    : impl_(std::make_shared<RuntimeImpl>(std::move(options))) {}
Runtime::~Runtime() = default;

PluginLoadReport Runtime::load_plugins(const PluginLoadOptions& options) {
  return impl_->load_plugins(options);
}

PluginLoadRecord Runtime::load_plugin(const std::string& path, bool strict) {
  PluginLoadRecord record = impl_->load_plugin(path);
  if (strict && !record.loaded) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "plugin {} rejected ({}): {}", path,
                 to_string(record.rejection), record.detail);
  }
  return record;
}

const std::vector<PluginLoadRecord>& Runtime::load_history() const {
  return impl_->history;
}

KernelHandle Runtime::kernel(std::string_view name) const {
  auto slot = impl_->registry.slot(name);
  if (!slot) {
    std::string known;
    for (const auto& n : impl_->registry.kernel_names())
      known += (known.empty() ? "" : ", ") + n;
    detail::fail(
        JW_ERROR_NOT_FOUND, "unknown kernel '{}' (known kernels: {})", name,
        known.empty() ? std::string("none; load plugins first") : known);
  }
  return KernelHandle(impl_, std::move(slot));
}

std::vector<std::string> Runtime::kernel_names() const {
  return impl_->registry.kernel_names();
}

const KernelSchema& Runtime::schema(std::string_view name) const {
  return kernel(name).schema();
}

std::vector<ImplementationInfo> Runtime::implementations(
    std::string_view name) const {
  return impl_->registry.implementations(name);
}

KernelExplanation Runtime::explain(std::string_view name) const {
  return impl_->registry.explain(name);
}

std::vector<PlatformInfo> Runtime::platforms() const {
  std::vector<PlatformInfo> out;
  for (const auto& p : impl_->platform_records()) out.push_back(p->info());
  return out;
}

std::string Runtime::default_platform() const {
  return impl_->default_platform();
}

std::string Runtime::target_for(std::string_view platform,
                                int32_t device) const {
  return impl_->target_for(platform, device);
}

RegistrationHandle Runtime::register_kernels(
    std::vector<KernelOverride> overrides, std::string origin) {
  std::vector<std::shared_ptr<detail::ImplRecord>> records;
  const std::string full_origin = "host: " + origin;
  for (auto& o : overrides) {
    if (o.impl.has_value() == o.host.has_value()) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "register_kernels: override of '{}' needs exactly one of "
                   "impl or host",
                   o.kernel_name);
    }
    if (o.impl) {
      jw_kernel_impl c = *o.impl;
      if (c.kernel_name == nullptr) c.kernel_name = o.kernel_name.c_str();
      records.push_back(detail::ImplRecord::from_c(c, full_origin, nullptr));
    } else {
      if (!o.host->launch) {
        detail::fail(JW_ERROR_INVALID_ARGUMENT,
                     "register_kernels: '{}' has no launch function",
                     o.kernel_name);
      }
      auto* state = new detail::HostKernelState{std::move(*o.host)};
      if (state->kernel.impl_name.empty())
        state->kernel.impl_name = "host:" + origin;
      std::vector<const char*> names;
      for (const auto& n : state->kernel.param_names)
        names.push_back(n.c_str());
      jw_kernel_impl c = detail::host_kernel_impl(o.kernel_name, state);
      c.param_names = names.empty() ? nullptr : names.data();
      c.num_param_names = static_cast<uint32_t>(names.size());
      try {
        records.push_back(detail::ImplRecord::from_c(c, full_origin, nullptr));
      } catch (...) {
        delete state;
        throw;
      }
    }
  }
  std::vector<uint64_t> tokens = impl_->registry.add_batch(std::move(records));
  std::weak_ptr<RuntimeImpl> weak = impl_;
  return RegistrationHandle([weak, tokens = std::move(tokens)]() {
    if (auto runtime = weak.lock()) runtime->registry.remove_batch(tokens);
  });
}

WarmupResult Runtime::warmup(const std::vector<WarmupRequest>& requests,
                             const WarmupOptions& options) {
  WarmupResult result = impl_->warmup(requests, options);
  impl_->registry.collect_retired();
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
  WarmupResult result = impl_->warmup_keys(keys, options);
  impl_->registry.collect_retired();
  return result;
}

std::vector<CompileKey> Runtime::warmup_plan(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  return impl_->warmup_plan(requests, options);
}

void Runtime::seal() {
  impl_->seal();
}
bool Runtime::sealed() const {
  return impl_->sealed();
}
void Runtime::set_jit_monitor(JitMonitorMode mode) {
  impl_->monitor_mode.store(mode);
}
JitMonitorMode Runtime::jit_monitor() const {
  return impl_->monitor_mode.load();
}
void Runtime::set_jit_record_path(std::string path) {
  impl_->set_record_path(std::move(path));
}

CacheStats Runtime::cache_stats() const {
  return impl_->cache.stats();
}

bool Runtime::is_cached(const CompileKey& key) const {
  return impl_->cache.find(key) != nullptr;
}

const jw_platform_desc& Runtime::platform(std::string_view name) const {
  auto record = impl_->find_platform(name);
  if (!record) detail::fail(JW_ERROR_NOT_FOUND, "unknown platform '{}'", name);
  return record->c;
}

void Runtime::log(jw_log_level level, const std::string& message) const {
  impl_->logger.log(level, message);
}

}  // namespace jitwarm
