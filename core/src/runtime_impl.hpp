// RuntimeImpl: what a jitwarm::Runtime owns — registry, platforms, loaded
// plugin libraries, the compile cache, the JIT monitor — and the launch path.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "compile_cache.hpp"
#include "disk_cache.hpp"
#include "log.hpp"
#include "registry.hpp"

namespace jitwarm::detail {

class PluginLibrary;

// A platform registered by a plugin, with its per-device targets cached so
// the launch path reads them without a lock.
struct PlatformRecord {
  static constexpr int kMaxDevices = 64;
  jw_platform_desc c{};
  std::string name;
  std::string origin;
  std::shared_ptr<void> keep_alive;
  std::array<std::atomic<const std::string*>, kMaxDevices> targets{};
  std::mutex target_mutex;  // only for filling `targets`
  std::vector<std::unique_ptr<std::string>> target_storage;

  ~PlatformRecord();
  PlatformInfo info() const;
  const std::string& target(int32_t device);
};

// Registration staged during one plugin's register_all, committed only if
// everything in it is valid (a rejected plugin leaves no trace).
struct RegistrationStaging {
  std::vector<KernelSchema> schemas;
  std::vector<std::shared_ptr<ImplRecord>> impls;
  std::vector<std::shared_ptr<PlatformRecord>> platforms;
  std::vector<std::string> errors;
};

class RuntimeImpl : public std::enable_shared_from_this<RuntimeImpl> {
 public:
  explicit RuntimeImpl(RuntimeOptions options);
  ~RuntimeImpl();

  // --- plugins (plugin_loader.cpp)
  PluginLoadRecord load_plugin(const std::string& path);
  // With its precedence decided; `history_index` receives its record's
  // place in `history`.
  PluginLoadRecord load_plugin(const std::string& path, ImplSource source,
                               std::size_t* history_index = nullptr);
  PluginLoadReport load_plugins(const PluginLoadOptions& options);
  void commit(RegistrationStaging& staging, const std::string& origin,
              PluginLoadRecord* record);
  // Amends the loaded plugins' records in `history`.
  void note_dropped(const std::vector<DroppedImpl>& dropped);

  // --- registry and platforms
  std::shared_ptr<PlatformRecord> find_platform(std::string_view name) const;
  std::vector<std::shared_ptr<PlatformRecord>> platform_records() const;
  std::string default_platform();
  std::string target_for(std::string_view platform, int32_t device);

  // --- launch path and compile
  void launch(const KernelSlot& slot, std::span<const jw_arg_value> args,
              const LaunchOptions& options);
  CompileKey key_for(const KernelSlot& slot, std::span<const jw_arg_value> args,
                     const LaunchOptions& options);
  // Compiles (or finds) `key` with `impl`; `from_launch` routes a real
  // compile through the JIT monitor.
  CompileCache::Lookup compile(const ImplRecord& impl,
                               const KernelSchema& schema,
                               const CompileKey& key, bool from_launch);

  // --- warmup
  WarmupResult warmup(const std::vector<WarmupRequest>& requests,
                      const WarmupOptions& options);
  WarmupResult warmup_keys(const std::vector<CompileKey>& keys,
                           const WarmupOptions& options);
  std::vector<CompileKey> warmup_plan(
      const std::vector<WarmupRequest>& requests, const WarmupOptions& options);

  // --- JIT monitor
  void seal() { sealed_.store(true); }
  bool sealed() const { return sealed_.load(); }
  std::atomic<JitMonitorMode> monitor_mode{JitMonitorMode::off};
  void set_record_path(std::string path);

  Logger logger;  // first: the registry logs through it
  Registry registry;
  CompileCache cache;
  std::shared_ptr<DiskCache> disk_cache;  // may be null
  std::vector<PluginLoadRecord> history;
  mutable std::mutex history_mutex;

  // Plugin libraries by plugin name, to refuse a second copy.
  std::map<std::string, std::string> loaded_plugin_paths;
  std::mutex load_mutex;  // one plugin load at a time

 private:
  struct WarmupWork {
    std::shared_ptr<const KernelSchema> schema;
    std::shared_ptr<ImplRecord> impl;
    CompileKey key;
  };
  std::vector<WarmupWork> plan(const std::vector<WarmupRequest>& requests,
                               const WarmupOptions& options);
  WarmupResult compile_all(const std::vector<WarmupWork>& work,
                           const WarmupOptions& options);
  const ImplRecord& resolve(const KernelState& state, std::string_view platform,
                            std::string* platform_name);
  void on_launch_compile(const KernelSchema& schema, const CompileKey& key,
                         std::string_view platform);

  mutable std::mutex platforms_mutex_;
  std::vector<std::shared_ptr<PlatformRecord>> platforms_;
  std::atomic<const std::string*> default_platform_{nullptr};
  std::vector<std::unique_ptr<std::string>> default_platform_storage_;

  std::atomic<bool> sealed_{false};
  std::mutex monitor_mutex_;
  std::set<std::string> warned_keys_;
  std::string record_path_;
  std::set<std::string> recorded_keys_;
};

// Builds the view of a key an implementation receives (its parameter order).
// The view points into `key`'s strings: keep that key alive as long as the
// view (the launch path's copy lives in the artifact's attachment).
struct KeyViewStorage {
  std::vector<jw_param_spec> specs;
  std::string text;
  jw_compile_key_view view{};
};
void make_key_view(const CompileKey& key, const ImplRecord& impl,
                   KeyViewStorage& out);

}  // namespace jitwarm::detail
