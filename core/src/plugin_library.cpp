// The host table a plugin library is given, and the library's end
// (plugin_library.hpp).
#include "plugin_library.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "errors.hpp"
#include "plugin_calls.hpp"
#include "plugin_host.hpp"
#include "plugin_probe.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;

PluginLibrary::~PluginLibrary() {
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

namespace {

PluginLibrary& library_of(void* ctx) {
  return *static_cast<PluginLibrary*>(ctx);
}

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

// A registration callback: `body(library, staging)` runs only inside
// register_all, and an error it raises is recorded in the staging, so the
// plugin is rejected even if it ignores the status it was given.
template <typename Body>
jw_status staged(void* ctx, Body&& body) {
  PluginLibrary& lib = library_of(ctx);
  const jw_status status = c_guard([&] { body(lib, staging_of(lib)); });
  if (status != JW_OK && lib.staging_ != nullptr) {
    c_guard([&] { lib.staging_->errors.push_back(last_error()); });
  }
  return status;
}

jw_status host_define_schema(void* ctx, const jw_kernel_schema* schema) {
  return staged(ctx, [&](PluginLibrary& lib, RegistrationStaging& staging) {
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
  return staged(ctx, [&](PluginLibrary& lib, RegistrationStaging& staging) {
    if (impl == nullptr)
      fail(JW_ERROR_INVALID_ARGUMENT, "register_impl: impl is null");
    auto record = ImplRecord::from_c(*impl, lib.path_, *lib.self_);
    record->source = lib.source_;
    record->logger = &lib.logger_;
    staging.impls.push_back(std::move(record));
  });
}

jw_status host_register_platform(void* ctx, const jw_platform_desc* platform) {
  return staged(ctx, [&](PluginLibrary& lib, RegistrationStaging& staging) {
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

}  // namespace

void PluginLibrary::build_host_table() {
  host_ = jw_host_api{
      .struct_size = sizeof(jw_host_api),
      .next = nullptr,
      .abi_version = JITWARM_ABI_VERSION,
      .host_ctx = this,
      .log = host_log,
      .set_error = host_set_error,
      .define_schema = host_define_schema,
      .register_impl = host_register_impl,
      .register_platform = host_register_platform,
      .cache_get = host_cache_get,
      .cache_put = host_cache_put,
      .get_config = host_get_config,
  };
}

}  // namespace jitwarm::detail
