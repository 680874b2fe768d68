// The plugin loader: finds candidate files, checks that each is a complete
// shared object for this machine, loads it with Boost.DLL, runs the version
// handshake, and stages the plugin's registrations so a rejected plugin
// leaves nothing behind. Every outcome becomes a PluginLoadRecord.
//
// Every call into a plugin goes through plugin_calls.hpp (no exception gets
// past it); every host callback it is given is guarded the other way
// (c_guard). Libraries are never unloaded (MappedLibraries says why).
#include <link.h>
#include <boost/dll/shared_library.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "errors.hpp"
#include "plugin_calls.hpp"
#include "plugin_host.hpp"
#include "plugin_probe.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;

namespace {

// The process-wide side of plugin libraries (docs/plugin-abi.md P15).
//
// A library, once opened, is never closed: a plugin may have left a thread
// running in its code, a callback of it may still be referenced, and an
// exception it threw is destroyed by its own code. dlclose would unmap that
// code under their feet (a host that unloaded such a plugin died with
// SIGSEGV), so every handle the loader opens stays open until the process
// ends, and this table itself is never destroyed (not even at exit, when
// plugin threads may still run).
//
// The table also counts, per library, the runtimes registered with it:
// several runtimes in one process each call register_all with their own
// host table, each gets its own unregister_all, and shutdown runs only when
// the last of them is done. Lifecycle calls into one process's plugins
// (register_all, unregister_all, shutdown) never overlap.
class MappedLibraries {
 public:
  static MappedLibraries& instance() {
    static MappedLibraries* const table = new MappedLibraries();
    return *table;
  }
  // Opens `path` (RTLD_NOW | RTLD_LOCAL: two plugins never see each
  // other's symbols); throws what Boost.DLL throws. The first handle of a
  // library is kept for ever; a later open of the same library (another
  // runtime, a duplicate) only adds a reference, so closing that one again
  // unmaps nothing and the table does not grow with every load.
  boost::dll::shared_library& open(const std::string& path) {
    auto library = std::make_unique<boost::dll::shared_library>(
        boost::dll::fs::path(path),
        boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    std::lock_guard lock(mutex_);
    auto& kept = opened_[library->native()];
    if (!kept) kept = std::move(library);
    return *kept;
  }
  std::recursive_mutex& lifecycle_mutex() { return lifecycle_mutex_; }
  // Runtimes registered with the library of `native` handle (under
  // lifecycle_mutex()).
  int& users(const void* native) { return users_[native]; }

 private:
  MappedLibraries() = default;
  std::mutex mutex_;
  // By native handle (dlopen gives one handle per library).
  std::map<const void*, std::unique_ptr<boost::dll::shared_library>> opened_;
  std::recursive_mutex lifecycle_mutex_;
  std::map<const void*, int> users_;
};

}  // namespace

// One runtime's use of a plugin library: the host table it was given, its
// registration and its precedence. Lives as long as any implementation or
// platform it registered (they hold it); its end is the plugin's
// unregister_all for this runtime (and shutdown, after the last runtime).
// It reaches the runtime through the parts its host table serves, which
// outlive it (runtime_impl.hpp), never through the plugin host.
class PluginLibrary {
 public:
  PluginLibrary(const Logger& logger, Registry& registry, Platforms& platforms,
                DiskCache* disk_cache, std::string path, ImplSource source)
      : logger_(logger),
        registry_(registry),
        platforms_(platforms),
        disk_cache_(disk_cache),
        path_(std::move(path)),
        source_(source) {}
  ~PluginLibrary() {
    if (!counted_) return;
    MappedLibraries& mapped = MappedLibraries::instance();
    std::lock_guard lock(mapped.lifecycle_mutex());
    if (registered_ &&
        api_->struct_size >= offsetof(jw_plugin_api, unregister_all) +
                                 sizeof(api_->unregister_all) &&
        api_->unregister_all != nullptr) {
      note_plugin_stage("unregister_all");
      call_into_plugin(&logger_, path_, "unregister_all",
                       [&] { api_->unregister_all(&host_); });
    }
    if (--mapped.users(native_) == 0 && api_->shutdown != nullptr) {
      note_plugin_stage("shutdown");
      call_into_plugin(&logger_, path_, "shutdown", [&] { api_->shutdown(); });
    }
  }

  boost::dll::shared_library* library_ = nullptr;  // never closed
  const jw_plugin_api* api_ = nullptr;
  jw_host_api host_{};
  RegistrationStaging* staging_ = nullptr;  // only during register_all
  std::shared_ptr<PluginLibrary>* self_ = nullptr;
  // Counted in MappedLibraries' users (register_all was called).
  bool counted_ = false;
  const void* native_ = nullptr;
  bool registered_ = false;  // register_all returned JW_OK

  const Logger& logger_;
  Registry& registry_;
  Platforms& platforms_;
  DiskCache* disk_cache_;  // the plugin byte cache; may be null
  std::string path_;
  ImplSource source_;
  std::mutex config_mutex_;
  std::map<std::string, std::string> config_values_;

  void build_host_table();
};

namespace {

PluginLibrary& library_of(void* ctx) {
  return *static_cast<PluginLibrary*>(ctx);
}

// Host callbacks: each is a C entry point a plugin calls, so each is guarded
// (no exception of the core's gets into a plugin).
void host_log(void* ctx, jw_log_level level, const char* message) {
  auto& lib = library_of(ctx);
  try {
    const std::string name = lib.api_ != nullptr && lib.api_->name != nullptr
                                 ? lib.api_->name
                                 : fs::path(lib.path_).filename().string();
    lib.logger_.log(level,
                    fmt::format("[{}] {}", name, message ? message : ""));
  } catch (...) {
    // Out of memory, or the host's log sink threw: the line is lost.
  }
}

void host_set_error(void*, const char* message) {
  try {
    set_last_error(message != nullptr ? message : "");
  } catch (...) {
    // Out of memory: the previous detail stays.
  }
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
    c_guard([&] { lib.staging_->errors.push_back(last_error()); });
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
    lib.registry_.check_schema_is_new(s.name(), lib.path_);
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
    auto record = ImplRecord::from_c(*impl, lib.path_, *lib.self_);
    record->source = lib.source_;
    record->logger = &lib.logger_;
    staging.impls.push_back(std::move(record));
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
    if (const PlatformRecord* existing = lib.platforms_.find(platform->name)) {
      fail(JW_ERROR_ALREADY_EXISTS, "platform {} is already registered by {}",
           platform->name, existing->origin);
    }
    // The core calls the platform through guards that hold its own table.
    auto guarded = std::make_shared<GuardedPlatform>();
    // Only the fields its struct_size covers: a plugin built before an
    // appended field leaves it null.
    std::memcpy(
        &guarded->plugin, platform,
        std::min<std::size_t>(platform->struct_size, sizeof(jw_platform_desc)));
    guarded->name = platform->name;
    guarded->plugin.name = guarded->name.c_str();
    guarded->origin = lib.path_;
    guarded->keep_alive = *lib.self_;
    auto record = std::make_shared<PlatformRecord>();
    record->c = guarded_platform_table(*guarded);
    record->name = guarded->name;
    record->c.name = record->name.c_str();
    record->origin = lib.path_;
    record->keep_alive = std::move(guarded);
    staging.platforms.push_back(std::move(record));
  });
}

jw_status host_cache_get(void* ctx, const void* key, size_t key_size,
                         const jw_text_sink* out) {
  auto& lib = library_of(ctx);
  return c_guard([&] {
    DiskCache* disk = lib.disk_cache_;
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
    DiskCache* disk = lib.disk_cache_;
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
  try {
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
  } catch (...) {
    return nullptr;  // out of memory: as if unset
  }
}

struct ElfCheck {
  bool ok = false;
  std::string why;
};

// a + b <= limit, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// Checks that `path` is an ELF shared object for this machine and that
// every part of it the dynamic loader maps (program headers and the
// segments they describe) or that tools read (section headers, sections)
// lies inside the file. A truncated library passes dlopen's own checks and
// then faults with SIGBUS when a page past the end of the file is touched,
// so this runs before dlopen. (A file truncated between this check and
// dlopen is not covered: plugin directories are not written while loading.)
ElfCheck check_elf(const std::string& path) {
  using Ehdr = ElfW(Ehdr);
  using Phdr = ElfW(Phdr);
  using Shdr = ElfW(Shdr);
  std::error_code error;
  const uint64_t size = fs::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  if (error || !in) return {false, "cannot be read"};
  unsigned char header[sizeof(Ehdr)] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got < 20 || header[0] != 0x7f || header[1] != 'E' || header[2] != 'L' ||
      header[3] != 'F') {
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
  if (got < sizeof(Ehdr)) {
    return {false, fmt::format("truncated: {} bytes, shorter than an ELF "
                               "header ({} bytes)",
                               size, sizeof(Ehdr))};
  }
  Ehdr ehdr;
  std::memcpy(&ehdr, header, sizeof(ehdr));
  const auto read_at = [&](uint64_t offset, void* out, std::size_t bytes) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
    return static_cast<std::size_t>(in.gcount()) == bytes;
  };

  // Program headers: what dlopen maps.
  if (ehdr.e_phnum == 0 || ehdr.e_phentsize != sizeof(Phdr)) {
    return {false, fmt::format("ELF header names {} program headers of {} "
                               "bytes; a shared object has them, of {} bytes",
                               ehdr.e_phnum, ehdr.e_phentsize, sizeof(Phdr))};
  }
  if (!fits(ehdr.e_phoff, uint64_t{ehdr.e_phnum} * sizeof(Phdr), size)) {
    return {false, fmt::format("truncated: its program headers end past the "
                               "end of the file ({} bytes)",
                               size)};
  }
  bool loadable = false;
  for (unsigned i = 0; i < ehdr.e_phnum; ++i) {
    Phdr phdr;
    if (!read_at(ehdr.e_phoff + uint64_t{i} * sizeof(Phdr), &phdr,
                 sizeof(phdr))) {
      return {false, "cannot be read"};
    }
    loadable = loadable || phdr.p_type == PT_LOAD;
    if (!fits(phdr.p_offset, phdr.p_filesz, size)) {
      return {false,
              fmt::format("truncated: segment {} (type {:#x}) covers bytes "
                          "{} to {}, but the file has {} bytes",
                          i, phdr.p_type, phdr.p_offset,
                          phdr.p_offset + phdr.p_filesz, size)};
    }
  }
  if (!loadable) return {false, "has no loadable segment"};

  // Section headers, when there are any (a stripped-down object may have
  // none; the loader does not need them).
  if (ehdr.e_shoff != 0) {
    if (ehdr.e_shentsize != sizeof(Shdr)) {
      return {false, fmt::format("section headers of {} bytes; expected {}",
                                 ehdr.e_shentsize, sizeof(Shdr))};
    }
    uint64_t count = ehdr.e_shnum;
    Shdr first;
    if (!fits(ehdr.e_shoff, sizeof(Shdr), size) ||
        !read_at(ehdr.e_shoff, &first, sizeof(first))) {
      return {false, fmt::format("truncated: its section headers start past "
                                 "the end of the file ({} bytes)",
                                 size)};
    }
    if (count == 0) count = first.sh_size;  // extended numbering
    if (!fits(ehdr.e_shoff, count * sizeof(Shdr), size) ||
        count > size / sizeof(Shdr)) {
      return {false, fmt::format("truncated: its {} section headers end past "
                                 "the end of the file ({} bytes)",
                                 count, size)};
    }
    for (uint64_t i = 0; i < count; ++i) {
      Shdr shdr;
      if (!read_at(ehdr.e_shoff + i * sizeof(Shdr), &shdr, sizeof(shdr))) {
        return {false, "cannot be read"};
      }
      if (shdr.sh_type != SHT_NOBITS &&
          !fits(shdr.sh_offset, shdr.sh_size, size)) {
        return {false,
                fmt::format("truncated: section {} covers bytes {} to {}, "
                            "but the file has {} bytes",
                            i, shdr.sh_offset, shdr.sh_offset + shdr.sh_size,
                            size)};
      }
    }
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

// Why `path` cannot be a plugin file before it is even read, or "": a
// directory named like a plugin, a symbolic link to nothing.
std::string not_a_file_why(const std::string& path) {
  std::error_code error;
  const fs::file_status link = fs::symlink_status(path, error);
  if (error || !fs::exists(link)) return "does not exist";
  if (fs::is_symlink(link)) {
    const fs::path target = fs::read_symlink(path, error);
    if (!fs::exists(path, error)) {
      return fmt::format("a symbolic link to {}, which does not exist",
                         target.string());
    }
  }
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) return "a directory, not a shared object";
  if (!fs::is_regular_file(status)) return "not a regular file";
  return "";
}

std::string canonical_text(const std::string& path) {
  std::error_code error;
  const fs::path canonical = fs::weakly_canonical(path, error);
  return error ? path : canonical.string();
}

// Bundled plugins are the files that live in a bundled directory (the
// installed plugin directory), however they were named.
ImplSource source_of(const std::string& file,
                     const std::vector<std::string>& bundled_directories) {
  const std::string directory =
      fs::path(canonical_text(file)).parent_path().string();
  for (const std::string& bundled : bundled_directories) {
    if (!bundled.empty() && canonical_text(bundled) == directory) {
      return ImplSource::bundled_plugin;
    }
  }
  return ImplSource::user_plugin;
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

  if (std::string why = not_a_file_why(path); !why.empty()) {
    reject(record, PluginRejection::not_a_shared_object, std::move(why));
    return finish();
  }
  if (ElfCheck elf = check_elf(path); !elf.ok) {
    reject(record, PluginRejection::not_a_shared_object, elf.why);
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
  std::vector<std::string> candidates;
  std::set<std::string> seen;
  for (const std::string& entry : path) {
    if (entry.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      report.searched_directories.push_back(entry);
      std::vector<std::string> files;
      // Everything named like a plugin is a candidate, files or not: a
      // directory or a dangling link of that name is reported rejected
      // (load_plugin says what it is), never silently passed over.
      for (const auto& f : fs::directory_iterator(entry, ec)) {
        const std::string name = f.path().filename().string();
        if (name.size() > 3 && name.ends_with(".so")) {
          files.push_back(f.path().string());
        }
      }
      // Byte-wise by file name: later files load later, and so win over
      // earlier ones of the same precedence (P10).
      std::sort(files.begin(), files.end());
      for (auto& f : files) {
        if (seen.insert(canonical_text(f)).second) candidates.push_back(f);
      }
    } else if (fs::exists(entry, ec)) {
      if (seen.insert(canonical_text(entry)).second) {
        candidates.push_back(entry);
      }
    } else {
      report.searched_directories.push_back(entry + " (not found)");
    }
  }
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
    case PluginRejection::crashed_in_probe: return "crashed in probe";
  }
  return "unknown";
}

std::size_t PluginLoadReport::loaded_count() const {
  const auto loaded = [](const auto& r) { return r.loaded; };
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), loaded) +
      std::count_if(kernel_files.begin(), kernel_files.end(), loaded));
}

std::size_t PluginLoadReport::rejected_count() const {
  return records.size() + kernel_files.size() - loaded_count();
}

std::string PluginLoadReport::to_text() const {
  std::string out;
  for (const auto& d : searched_directories)
    out += fmt::format("searched {}\n", d);
  for (const auto& r : records) {
    if (r.loaded) {
      out += fmt::format("loaded    {} ({} {}, ABI {}, {})\n", r.path,
                         r.plugin_name, r.plugin_version, r.abi_version,
                         r.precedence);
      if (!r.schemas.empty())
        out += fmt::format("          defines {} kernel schema(s)\n",
                           r.schemas.size());
      if (!r.kernels.empty())
        out += fmt::format("          implements {} kernel(s)\n",
                           r.kernels.size());
      for (const auto& d : r.dropped)
        out += fmt::format("          dropped {}\n", d);
      for (const auto& p : r.platforms)
        out += fmt::format("          platform {}\n", p);
    } else {
      out += fmt::format("rejected  {}\n          {}: {}\n", r.path,
                         to_string(r.rejection), r.detail);
    }
  }
  for (const auto& d : kernel_directories)
    out += fmt::format("kernels   {}\n", d);
  for (const auto& k : kernel_files) {
    if (k.loaded) {
      std::string platforms;
      for (const auto& p : k.platforms)
        platforms += (platforms.empty() ? "" : ", ") + p;
      out += fmt::format("kernel    {}\n          {} on {}\n", k.path, k.kernel,
                         platforms);
    } else {
      out += fmt::format("rejected  {}\n          {}\n", k.path, k.detail);
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
    p["dropped"] = r.dropped;
    p["precedence"] = r.precedence;
    j["plugins"].push_back(std::move(p));
  }
  j["kernel_directories"] = kernel_directories;
  j["kernels"] = nlohmann::json::array();
  for (const auto& k : kernel_files) {
    j["kernels"].push_back({{"path", k.path},
                            {"status", k.loaded ? "loaded" : "rejected"},
                            {"kernel", k.kernel},
                            {"platforms", k.platforms},
                            {"detail", k.detail}});
  }
  return j.dump(2);
}

}  // namespace jitwarm
