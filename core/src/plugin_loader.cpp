// The plugin loader: finds candidate files, checks that each is a shared
// object for this machine, loads it with Boost.DLL, runs the version
// handshake, and stages the plugin's registrations so a rejected plugin
// leaves nothing behind. Every outcome becomes a PluginLoadRecord.
#include <boost/dll/shared_library.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "errors.hpp"
#include "runtime_impl.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;

// One loaded library and the host table it was given. Lives as long as any
// implementation or platform it registered (they hold it).
class PluginLibrary {
 public:
  PluginLibrary(RuntimeImpl& runtime, std::string path)
      : runtime_(runtime), path_(std::move(path)) {}
  ~PluginLibrary() {
    if (api_ != nullptr && api_->shutdown != nullptr) api_->shutdown();
    library_.unload();
  }

  boost::dll::shared_library library_;
  const jw_plugin_api* api_ = nullptr;
  jw_host_api host_{};
  RegistrationStaging* staging_ = nullptr;  // only during register_all
  std::shared_ptr<PluginLibrary>* self_ = nullptr;

  RuntimeImpl& runtime_;
  std::string path_;
  std::mutex config_mutex_;
  std::map<std::string, std::string> config_values_;

  void build_host_table();
};

namespace {

PluginLibrary& library_of(void* ctx) {
  return *static_cast<PluginLibrary*>(ctx);
}

// Host callbacks: each is a C entry point, so each is guarded.
void host_log(void* ctx, jw_log_level level, const char* message) {
  auto& lib = library_of(ctx);
  const std::string name = lib.api_ != nullptr && lib.api_->name != nullptr
                               ? lib.api_->name
                               : fs::path(lib.path_).filename().string();
  lib.runtime_.logger().log(
      level, fmt::format("[{}] {}", name, message ? message : ""));
}

void host_set_error(void*, const char* message) {
  set_last_error(message != nullptr ? message : "");
}

RegistrationStaging& staging_of(PluginLibrary& lib) {
  if (lib.staging_ == nullptr) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: registration is only allowed inside register_all", lib.path_);
  }
  return *lib.staging_;
}

// Records a staging error so the plugin is rejected even if it ignores the
// status it was given.
template <typename Body>
jw_status staged(PluginLibrary& lib, Body&& body) {
  const jw_status status = c_guard(body);
  if (status != JW_OK && lib.staging_ != nullptr) {
    lib.staging_->errors.push_back(last_error());
  }
  return status;
}

jw_status host_define_schema(void* ctx, const jw_kernel_schema* schema) {
  auto& lib = library_of(ctx);
  return staged(lib, [&] {
    RegistrationStaging& staging = staging_of(lib);
    if (schema == nullptr)
      fail(JW_ERROR_INVALID_ARGUMENT, "define_schema: schema is null");
    KernelSchema s = KernelSchema::from_c(*schema, lib.path_);
    lib.runtime_.registry().check_schema_is_new(s.name(), lib.path_);
    for (const auto& other : staging.schemas) {
      if (other.name() == s.name()) {
        fail(JW_ERROR_ALREADY_EXISTS, "kernel schema {} is defined twice by {}",
             s.name(), lib.path_);
      }
    }
    staging.schemas.push_back(std::move(s));
  });
}

jw_status host_register_impl(void* ctx, const jw_kernel_impl* impl) {
  auto& lib = library_of(ctx);
  return staged(lib, [&] {
    RegistrationStaging& staging = staging_of(lib);
    if (impl == nullptr)
      fail(JW_ERROR_INVALID_ARGUMENT, "register_impl: impl is null");
    staging.impls.push_back(ImplRecord::from_c(*impl, lib.path_, *lib.self_));
  });
}

jw_status host_register_platform(void* ctx, const jw_platform_desc* platform) {
  auto& lib = library_of(ctx);
  return staged(lib, [&] {
    RegistrationStaging& staging = staging_of(lib);
    if (platform == nullptr || platform->name == nullptr ||
        *platform->name == '\0') {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "register_platform: a platform needs a name");
    }
    if (platform->struct_size <
        offsetof(jw_platform_desc, synchronize) + sizeof(void*)) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "register_platform {}: struct_size {} is too small", platform->name,
           platform->struct_size);
    }
    if (platform->capabilities == nullptr ||
        platform->device_count == nullptr ||
        platform->device_target == nullptr) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "register_platform {}: capabilities, device_count and device_target "
           "are required",
           platform->name);
    }
    if (const PlatformRecord* existing =
            lib.runtime_.platforms().find(platform->name)) {
      fail(JW_ERROR_ALREADY_EXISTS, "platform {} is already registered by {}",
           platform->name, existing->origin);
    }
    auto record = std::make_shared<PlatformRecord>();
    std::memcpy(&record->c, platform, sizeof(jw_platform_desc));
    record->name = platform->name;
    record->c.name = record->name.c_str();
    record->origin = lib.path_;
    record->keep_alive = *lib.self_;
    staging.platforms.push_back(std::move(record));
  });
}

jw_status host_cache_get(void* ctx, const void* key, size_t key_size,
                         const jw_text_sink* out) {
  auto& lib = library_of(ctx);
  return c_guard([&] {
    DiskCache* disk = lib.runtime_.disk_cache();
    std::optional<std::string> value;
    if (disk)
      value = disk->get_blob(
          std::string_view(static_cast<const char*>(key), key_size));
    if (!value) fail(JW_ERROR_NOT_FOUND, "not in the plugin byte cache");
    if (out != nullptr && out->append != nullptr)
      out->append(out->ctx, value->data(), value->size());
  });
}

jw_status host_cache_put(void* ctx, const void* key, size_t key_size,
                         const void* value, size_t value_size) {
  auto& lib = library_of(ctx);
  return c_guard([&] {
    DiskCache* disk = lib.runtime_.disk_cache();
    if (disk) {
      disk->put_blob(
          std::string_view(static_cast<const char*>(key), key_size),
          std::string_view(static_cast<const char*>(value), value_size));
    }
  });
}

// get_config("cuda.extra_options") reads JITWARM_CUDA_EXTRA_OPTIONS.
const char* host_get_config(void* ctx, const char* name) {
  auto& lib = library_of(ctx);
  if (name == nullptr) return nullptr;
  std::string variable = "JITWARM_";
  for (const char* p = name; *p != '\0'; ++p) {
    const char c = *p;
    variable +=
        (c == '.' || c == '-') ? '_' : static_cast<char>(std::toupper(c));
  }
  const char* value = std::getenv(variable.c_str());
  if (value == nullptr) return nullptr;
  std::lock_guard lock(lib.config_mutex_);
  return lib.config_values_.insert_or_assign(variable, value)
      .first->second.c_str();
}

struct ElfCheck {
  bool ok = false;
  std::string why;
};

ElfCheck check_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {false, "cannot be read"};
  unsigned char header[64] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  if (in.gcount() < 20 || header[0] != 0x7f || header[1] != 'E' ||
      header[2] != 'L' || header[3] != 'F') {
    return {false, "not an ELF file"};
  }
  if (header[4] != (sizeof(void*) == 8 ? 2 : 1)) {
    return {false, fmt::format("ELF class {}-bit, this host is {}-bit",
                               header[4] == 2 ? 64 : 32, sizeof(void*) * 8)};
  }
  const unsigned type = header[16] | (header[17] << 8);
  const unsigned machine = header[18] | (header[19] << 8);
  if (type != 3 /* ET_DYN */) {
    return {false, fmt::format("ELF type {} is not a shared object", type)};
  }
#if defined(__x86_64__)
  constexpr unsigned kHostMachine = 62;  // EM_X86_64
#elif defined(__aarch64__)
  constexpr unsigned kHostMachine = 183;  // EM_AARCH64
#else
  constexpr unsigned kHostMachine = 0;
#endif
  if (kHostMachine != 0 && machine != kHostMachine) {
    return {false,
            fmt::format("built for ELF machine {}, this host is machine {}",
                        machine, kHostMachine)};
  }
  return {true, ""};
}

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

void reject(PluginLoadRecord& r, PluginRejection why, std::string detail) {
  r.loaded = false;
  r.rejection = why;
  r.detail = std::move(detail);
}

}  // namespace

void PluginLibrary::build_host_table() {
  host_.struct_size = sizeof(jw_host_api);
  host_.abi_version = JITWARM_ABI_VERSION;
  host_.host_ctx = this;
  host_.log = host_log;
  host_.set_error = host_set_error;
  host_.define_schema = host_define_schema;
  host_.register_impl = host_register_impl;
  host_.register_platform = host_register_platform;
  host_.cache_get = host_cache_get;
  host_.cache_put = host_cache_put;
  host_.get_config = host_get_config;
}

PluginLoadRecord RuntimeImpl::load_plugin(const std::string& path) {
  std::lock_guard load_lock(load_mutex_);
  PluginLoadRecord record;
  record.path = path;
  const auto finish = [&]() {
    std::lock_guard lock(history_mutex_);
    history_.push_back(record);
    const jw_log_level level = record.loaded ? JW_LOG_DEBUG : JW_LOG_WARNING;
    logger_.log(
        level,
        record.loaded
            ? fmt::format("plugin {} loaded from {}", record.plugin_name, path)
            : fmt::format("plugin {} rejected ({}): {}", path,
                          to_string(record.rejection), record.detail));
    return record;
  };

  if (!fs::is_regular_file(path)) {
    reject(record, PluginRejection::not_a_shared_object, "not a regular file");
    return finish();
  }
  if (ElfCheck elf = check_elf(path); !elf.ok) {
    reject(record, PluginRejection::not_a_shared_object, elf.why);
    return finish();
  }

  auto library = std::make_shared<PluginLibrary>(*this, path);
  library->self_ = &library;
  try {
    // RTLD_LOCAL: two plugins never see each other's symbols.
    library->library_.load(
        boost::dll::fs::path(path),
        boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
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

  if (!library->library_.has(JITWARM_PLUGIN_ENTRY_SYMBOL)) {
    reject(record, PluginRejection::missing_entry_symbol,
           fmt::format("does not export {}", JITWARM_PLUGIN_ENTRY_SYMBOL));
    return finish();
  }
  auto& negotiate = library->library_.get<jw_status(jw_plugin_negotiation*)>(
      JITWARM_PLUGIN_ENTRY_SYMBOL);

  jw_plugin_negotiation n{};
  n.struct_size = sizeof(n);
  n.core_max_version = JITWARM_ABI_VERSION;
  n.core_min_version = JITWARM_ABI_VERSION_MIN;
  set_last_error("");
  const jw_status status = negotiate(&n);
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
    library->api_ = nullptr;  // never registered: no shutdown
    reject(record, PluginRejection::duplicate,
           fmt::format("plugin {} is already loaded from {}",
                       record.plugin_name, it->second));
    return finish();
  }

  library->build_host_table();
  RegistrationStaging staging;
  library->staging_ = &staging;
  set_last_error("");
  const jw_status registered = library->api_->register_all(&library->host_);
  library->staging_ = nullptr;
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
    commit(staging, &record);
  } catch (const Error& e) {
    reject(record, PluginRejection::registration_failed, e.what());
    return finish();
  }
  library->self_ = nullptr;
  loaded_plugin_paths_.emplace(record.plugin_name, path);
  record.loaded = true;
  return finish();
}

PluginLoadReport RuntimeImpl::load_plugins(const PluginLoadOptions& options) {
  PluginLoadReport report;
  const std::vector<std::string> path = options.search_path.empty()
                                            ? default_plugin_search_path()
                                            : options.search_path;
  std::vector<std::string> candidates;
  std::set<std::string> seen;
  for (const std::string& entry : path) {
    if (entry.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      report.searched_directories.push_back(entry);
      std::vector<std::string> files;
      for (const auto& f : fs::directory_iterator(entry, ec)) {
        const std::string name = f.path().filename().string();
        if (f.is_regular_file(ec) && name.size() > 3 && name.ends_with(".so")) {
          files.push_back(f.path().string());
        }
      }
      std::sort(files.begin(), files.end());
      for (auto& f : files) {
        if (seen.insert(fs::weakly_canonical(f, ec).string()).second)
          candidates.push_back(f);
      }
    } else if (fs::exists(entry, ec)) {
      if (seen.insert(fs::weakly_canonical(entry, ec).string()).second) {
        candidates.push_back(entry);
      }
    } else {
      report.searched_directories.push_back(entry + " (not found)");
    }
  }
  for (const auto& candidate : candidates)
    report.records.push_back(load_plugin(candidate));
  if (options.strict && report.rejected_count() > 0) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "strict plugin loading: {} candidate(s) rejected\n{}",
         report.rejected_count(), report.to_text());
  }
  return report;
}

}  // namespace jitwarm::detail

namespace jitwarm {

std::string_view to_string(PluginRejection rejection) {
  switch (rejection) {
    case PluginRejection::none: return "none";
    case PluginRejection::not_a_shared_object: return "not a shared object";
    case PluginRejection::missing_dependency: return "missing dependency";
    case PluginRejection::load_failed: return "load failed";
    case PluginRejection::missing_entry_symbol: return "missing entry symbol";
    case PluginRejection::negotiation_failed: return "negotiation failed";
    case PluginRejection::abi_too_old: return "ABI too old";
    case PluginRejection::abi_too_new: return "ABI too new";
    case PluginRejection::registration_failed: return "registration failed";
    case PluginRejection::duplicate: return "duplicate";
  }
  return "unknown";
}

std::size_t PluginLoadReport::loaded_count() const {
  return static_cast<std::size_t>(std::count_if(
      records.begin(), records.end(), [](const auto& r) { return r.loaded; }));
}

std::size_t PluginLoadReport::rejected_count() const {
  return records.size() - loaded_count();
}

std::string PluginLoadReport::to_text() const {
  std::string out;
  for (const auto& d : searched_directories)
    out += fmt::format("searched {}\n", d);
  for (const auto& r : records) {
    if (r.loaded) {
      out += fmt::format("loaded    {} ({} {}, ABI {})\n", r.path,
                         r.plugin_name, r.plugin_version, r.abi_version);
      if (!r.schemas.empty())
        out += fmt::format("          defines {} kernel schema(s)\n",
                           r.schemas.size());
      if (!r.kernels.empty())
        out += fmt::format("          implements {} kernel(s)\n",
                           r.kernels.size());
      for (const auto& p : r.platforms)
        out += fmt::format("          platform {}\n", p);
    } else {
      out += fmt::format("rejected  {}\n          {}: {}\n", r.path,
                         to_string(r.rejection), r.detail);
    }
  }
  out +=
      fmt::format("{} loaded, {} rejected\n", loaded_count(), rejected_count());
  return out;
}

std::string PluginLoadReport::to_json() const {
  nlohmann::json j;
  j["searched"] = searched_directories;
  j["loaded"] = loaded_count();
  j["rejected"] = rejected_count();
  j["plugins"] = nlohmann::json::array();
  for (const auto& r : records) {
    nlohmann::json p;
    p["path"] = r.path;
    p["status"] = r.loaded ? "loaded" : "rejected";
    p["reason"] = r.loaded ? "" : std::string(to_string(r.rejection));
    p["detail"] = r.detail;
    p["name"] = r.plugin_name;
    p["version"] = r.plugin_version;
    p["abi_version"] = r.abi_version;
    p["schemas"] = r.schemas;
    p["kernels"] = r.kernels;
    p["platforms"] = r.platforms;
    j["plugins"].push_back(std::move(p));
  }
  return j.dump(2);
}

std::string installed_plugin_directory() {
  return JITWARM_INSTALLED_PLUGIN_DIR;
}

std::vector<std::string> default_plugin_search_path() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("JITWARM_PLUGIN_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view part = rest.substr(0, colon);
      if (!part.empty()) out.emplace_back(part);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  out.push_back(installed_plugin_directory());
  return out;
}

}  // namespace jitwarm
