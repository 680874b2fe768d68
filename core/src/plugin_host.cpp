// The plugin loader (plugin_host.hpp): finds candidate files
// (plugin_candidates.hpp), checks that each is a complete shared object for
// this machine (plugin_file_check.hpp), loads it with Boost.DLL
// (mapped_libraries.hpp), runs the version handshake, and stages the
// plugin's registrations (plugin_library.hpp) so a rejected plugin leaves
// nothing behind. Every outcome becomes a PluginLoadRecord.
//
// Every call into a plugin goes through plugin_calls.hpp (no exception gets
// past it); every host callback it is given is guarded the other way
// (c_guard). Libraries are never unloaded (mapped_libraries.hpp says why).
#include "plugin_host.hpp"

#include <filesystem>

#include "errors.hpp"
#include "mapped_libraries.hpp"
#include "plugin_calls.hpp"
#include "plugin_candidates.hpp"
#include "plugin_file_check.hpp"
#include "plugin_library.hpp"
#include "plugin_probe.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

// "libfoo.so.1" from "...(dlerror system message: /x/libfoo.so.1: cannot open
// shared object file: No such file or directory)...".
std::optional<std::string> missing_library_in(const std::string& message) {
  const std::string marker = ": cannot open shared object file";
  const auto at = message.find(marker);
  if (at == std::string::npos) return std::nullopt;
  auto start = message.find_last_of(" (", at);
  start = start == std::string::npos ? 0 : start + 1;
  return message.substr(start, at - start);
}

std::string dlerror_text(const std::string& what) {
  const std::string marker = "dlerror system message: ";
  const auto at = what.find(marker);
  if (at == std::string::npos) return what;
  auto end = what.rfind(')');
  if (end == std::string::npos || end < at) end = what.size();
  return what.substr(at + marker.size(), end - at - marker.size());
}

}  // namespace

PluginHost::PluginHost(const Logger& logger, Registry& registry,
                       Platforms& platforms, const RuntimeCaches& caches,
                       PluginLoadHistory& history,
                       SourceKernels& source_kernels)
    : logger_(logger),
      registry_(registry),
      platforms_(platforms),
      caches_(caches),
      history_(history),
      source_kernels_(source_kernels) {}

PluginLoadRecord PluginHost::load_plugin(const std::string& path) {
  const ImplSource source = source_of(path, {installed_plugin_directory()});
  if (plugin_isolation(false)) {
    if (std::optional<std::string> why =
            probe_plugins({path}, PluginLoadOptions{}.probe_timeout_seconds)
                .front()) {
      return reject_unprobed(path, source, std::move(*why), nullptr);
    }
  }
  return load_plugin(path, source);
}

PluginLoadRecord PluginHost::reject_unprobed(const std::string& path,
                                             ImplSource source, std::string why,
                                             std::size_t* history_index) {
  PluginLoadRecord record;
  record.path = path;
  record.precedence = std::string(to_string(source));
  reject(record, PluginRejection::crashed_in_probe, std::move(why));
  logger_.log(JW_LOG_WARNING,
              fmt::format("plugin {} rejected ({}): {}", path,
                          to_string(record.rejection), record.detail));
  const std::size_t index = history_.add(record);
  if (history_index != nullptr) *history_index = index;
  return record;
}

PluginLoadRecord PluginHost::load_plugin(const std::string& path,
                                         ImplSource source,
                                         std::size_t* history_index) {
  std::lock_guard load_lock(load_mutex_);
  PluginLoadRecord record;
  record.path = path;
  record.precedence = std::string(to_string(source));
  const auto finish = [&]() {
    const std::size_t index = history_.add(record);
    if (history_index != nullptr) *history_index = index;
    const jw_log_level level = record.loaded ? JW_LOG_DEBUG : JW_LOG_WARNING;
    logger_.log(
        level,
        record.loaded
            ? fmt::format("plugin {} loaded from {}", record.plugin_name, path)
            : fmt::format("plugin {} rejected ({}): {}", path,
                          to_string(record.rejection), record.detail));
    return record;
  };

  if (std::string why = why_not_a_plugin_file(path); !why.empty()) {
    reject(record, PluginRejection::not_a_shared_object, std::move(why));
    return finish();
  }

  auto library = std::make_shared<PluginLibrary>(
      logger_, registry_, platforms_, caches_.disk_cache().get(), path, source);
  library->self_ = &library;
  try {
    note_plugin_stage("its static constructors");
    library->library_ = &MappedLibraries::instance().open(path);
  } catch (const std::exception& e) {
    // boost::dll reports through boost::dll::fs::system_error, which is
    // std::system_error with BOOST_DLL_USE_STD_FS.
    const std::string text = dlerror_text(e.what());
    if (auto missing = missing_library_in(text)) {
      reject(record, PluginRejection::missing_dependency,
             fmt::format("missing library {} ({})", *missing, text));
    } else {
      reject(record, PluginRejection::load_failed, text);
    }
    return finish();
  }
  library->native_ = library->library_->native();

  if (!library->library_->has(JITWARM_PLUGIN_ENTRY_SYMBOL)) {
    reject(record, PluginRejection::missing_entry_symbol,
           fmt::format("does not export {}", JITWARM_PLUGIN_ENTRY_SYMBOL));
    return finish();
  }
  auto& negotiate = library->library_->get<jw_status(jw_plugin_negotiation*)>(
      JITWARM_PLUGIN_ENTRY_SYMBOL);

  jw_plugin_negotiation n{};
  n.struct_size = sizeof(n);
  n.core_max_version = JITWARM_ABI_VERSION;
  n.core_min_version = JITWARM_ABI_VERSION_MIN;
  set_last_error("");
  jw_status status = JW_OK;
  try {
    note_plugin_stage(JITWARM_PLUGIN_ENTRY_SYMBOL);
    status = negotiate(&n);
  } catch (...) {
    reject(record, PluginRejection::negotiation_failed,
           fmt::format("{} threw {} (a plugin must not throw across the C "
                       "ABI; docs/plugin-abi.md P14)",
                       JITWARM_PLUGIN_ENTRY_SYMBOL, current_exception_text()));
    return finish();
  }
  record.abi_version = n.plugin_version;
  // Versions first: a plugin that cannot speak ours may also return an
  // error, and the report should still carry both numbers.
  if (n.plugin_version != 0 && n.plugin_version > JITWARM_ABI_VERSION) {
    reject(record, PluginRejection::abi_too_new,
           fmt::format(
               "plugin requires ABI version {}; this core speaks {} to {}",
               n.plugin_version, JITWARM_ABI_VERSION_MIN, JITWARM_ABI_VERSION));
    return finish();
  }
  if (status == JW_OK && n.plugin_version < JITWARM_ABI_VERSION_MIN) {
    reject(record, PluginRejection::abi_too_old,
           fmt::format(
               "plugin speaks ABI version {}; this core requires {} to {}",
               n.plugin_version, JITWARM_ABI_VERSION_MIN, JITWARM_ABI_VERSION));
    return finish();
  }
  if (status != JW_OK) {
    const std::string why = last_error();
    reject(record, PluginRejection::negotiation_failed,
           fmt::format("{} returned {}{}", JITWARM_PLUGIN_ENTRY_SYMBOL,
                       jw_status_name(status),
                       why.empty() ? std::string() : ": " + why));
    return finish();
  }
  if (n.plugin == nullptr ||
      n.plugin->struct_size < offsetof(jw_plugin_api, shutdown) ||
      n.plugin->register_all == nullptr) {
    reject(record, PluginRejection::negotiation_failed,
           "the handshake returned no usable function table");
    return finish();
  }
  library->api_ = n.plugin;
  record.plugin_name = n.plugin->name != nullptr ? n.plugin->name : "";
  record.plugin_version = n.plugin->version != nullptr ? n.plugin->version : "";
  if (record.plugin_name.empty())
    record.plugin_name = fs::path(path).stem().string();
  if (auto it = loaded_plugin_paths_.find(record.plugin_name);
      it != loaded_plugin_paths_.end()) {
    reject(record, PluginRejection::duplicate,
           fmt::format("plugin {} is already loaded from {}",
                       record.plugin_name, it->second));
    return finish();
  }

  library->build_host_table();
  RegistrationStaging staging;
  library->staging_ = &staging;
  set_last_error("");
  jw_status registered = JW_OK;
  std::string thrown;
  {
    MappedLibraries& mapped = MappedLibraries::instance();
    std::lock_guard lifecycle(mapped.lifecycle_mutex());
    ++mapped.users(library->native_);
    library->counted_ = true;  // from here on its end calls shutdown
    try {
      note_plugin_stage("register_all");
      registered = library->api_->register_all(&library->host_);
    } catch (...) {
      registered = JW_ERROR_INTERNAL;
      thrown = current_exception_text();
    }
    library->registered_ = registered == JW_OK;
  }
  library->staging_ = nullptr;
  if (!thrown.empty()) {
    reject(record, PluginRejection::registration_failed,
           fmt::format("register_all threw {} (a plugin must not throw across "
                       "the C ABI; docs/plugin-abi.md P14)",
                       thrown));
    return finish();
  }
  if (registered != JW_OK || !staging.errors.empty()) {
    std::string why = staging.errors.empty() ? std::string(last_error())
                                             : staging.errors.front();
    if (why.empty()) why = "no detail given";
    reject(record, PluginRejection::registration_failed,
           fmt::format("register_all returned {}: {}",
                       jw_status_name(registered), why));
    return finish();
  }
  try {
    commit(staging, path, &record);
  } catch (const Error& e) {
    reject(record, PluginRejection::registration_failed, e.what());
    return finish();
  }
  library->self_ = nullptr;
  loaded_plugin_paths_.emplace(record.plugin_name, path);
  record.loaded = true;
  if (library->api_->struct_size >=
          offsetof(jw_plugin_api, implement_source_kernel) +
              sizeof(library->api_->implement_source_kernel) &&
      library->api_->implement_source_kernel != nullptr) {
    source_kernels_.note_compiler(
        SourceCompiler{library, &library->host_,
                       library->api_->implement_source_kernel, path});
  }
  return finish();
}

void PluginHost::commit(RegistrationStaging& staging, const std::string& origin,
                        PluginLoadRecord* record) {
  // Validate what can still fail before changing anything: implementations
  // must bind to their schema (when it is known).
  for (const auto& impl : staging.impls) {
    const KernelSchema* schema = nullptr;
    for (const auto& s : staging.schemas) {
      if (s.name() == impl->kernel_name) schema = &s;
    }
    std::shared_ptr<KernelSlot> slot;
    if (schema == nullptr && (slot = registry_.slot(impl->kernel_name))) {
      // The registry keeps the schema for its life, beyond the guard.
      const auto reading = registry_.read_guard();  // registry_.hpp I2
      schema = slot->state.load(std::memory_order_acquire)->schema.get();
    }
    if (schema != nullptr) bind_to_schema(*impl, *schema);
  }
  // Implementations of other plugins that waited for one of these schemas
  // and do not fit it are dropped: their plugins' records must say so.
  std::vector<DroppedImpl> dropped;
  for (auto& s : staging.schemas) {
    if (record != nullptr) record->schemas.push_back(s.name());
    for (DroppedImpl& d : registry_.define_schema(std::move(s))) {
      dropped.push_back(std::move(d));
    }
  }
  history_.note_dropped(dropped);
  platforms_.add(staging.platforms);
  for (auto& p : staging.platforms) {
    if (record == nullptr) continue;
    // Loading never counts devices: that would initialize the driver, and a
    // process that loaded plugins may still fork (`jitwarm plugins` and
    // Runtime::platforms() count them).
    const PlatformInfo info = p->capabilities();
    std::string state = info.can_launch    ? std::string("launch")
                        : info.can_compile ? std::string("compile-only")
                                           : std::string("unavailable");
    record->platforms.push_back(
        info.detail.empty()
            ? fmt::format("{}: {}", p->name, state)
            : fmt::format("{}: {} ({})", p->name, state, info.detail));
  }
  for (auto& impl : staging.impls) {
    if (record != nullptr)
      record->kernels.push_back(impl->kernel_name + " [" + impl->platform +
                                "]");
    registry_.add(std::move(impl), /*allow_pending=*/true);
  }
  (void)origin;
}

PluginLoadReport PluginHost::load_plugins(const PluginLoadOptions& options) {
  PluginLoadReport report;
  const std::vector<std::string> path = options.search_path.empty()
                                            ? default_plugin_search_path()
                                            : options.search_path;
  const std::vector<std::string> bundled =
      options.bundled_directories.empty()
          ? std::vector<std::string>{installed_plugin_directory()}
          : options.bundled_directories;
  const std::vector<std::string> candidates =
      find_plugin_candidates(path, report.searched_directories);
  // A candidate that crashes, exits or hangs in a child process is not
  // loaded here (plugin_probe.hpp).
  std::vector<std::optional<std::string>> probed(candidates.size());
  if (plugin_isolation(options.isolate)) {
    probed = probe_plugins(candidates, options.probe_timeout_seconds);
  }
  std::vector<std::size_t> history_index(candidates.size(), SIZE_MAX);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string& candidate = candidates[i];
    const ImplSource source = source_of(candidate, bundled);
    if (!probed[i] && options.vet) probed[i] = options.vet(candidate);
    if (probed[i]) {
      reject_unprobed(candidate, source, std::move(*probed[i]),
                      &history_index[i]);
    } else {
      load_plugin(candidate, source, &history_index[i]);
    }
  }
  // A later candidate may have dropped an earlier one's implementation
  // (note_dropped): report the records as they stand now.
  {
    const std::vector<PluginLoadRecord> records = history_.records();
    for (std::size_t index : history_index) {
      report.records.push_back(records.at(index));
    }
  }
  // Kernels from source last: every plugin that compiles them is loaded.
  source_kernels_.load_kernel_directories(
      options.kernel_path.empty() ? default_kernel_path() : options.kernel_path,
      report);
  if (options.strict && report.rejected_count() > 0) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "strict plugin loading: {} candidate(s) rejected\n{}",
         report.rejected_count(), report.to_text());
  }
  return report;
}

}  // namespace jitwarm::detail
