// RuntimeImpl: what a jitwarm::Runtime owns, one concept per file:
//   runtime.cpp            construction, committing a plugin's registration,
//                          and the public C++ API (thin forwarding)
//   plugin_loader.cpp      plugin search, loading, the host services table
//   platforms.cpp          platforms and the default launch platform
//   launch.cpp             the launch path, top to bottom, and
//                          compile-through-cache
//   jit_monitor.cpp        seal, off/warn/error, record mode, counters
//   warmup_execution.cpp   planning and compiling warmup keys
//   host_kernels.cpp       register_kernels and host-function kernels
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "argument_signature.hpp"
#include "compile_cache.hpp"
#include "disk_cache.hpp"
#include "jit_monitor.hpp"
#include "log.hpp"
#include "platforms.hpp"
#include "registry.hpp"
#include "warmup_schedule.hpp"

namespace jitwarm::detail {

class PluginLibrary;
struct PreparedLaunch;

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
  // The record of a candidate whose probe died (plugin_probe.hpp): rejected
  // with `why`, never loaded here.
  PluginLoadRecord reject_unprobed(const std::string& path, ImplSource source,
                                   std::string why, std::size_t* history_index);
  PluginLoadReport load_plugins(const PluginLoadOptions& options);
  std::vector<PluginLoadRecord> load_history() const;
  void commit(RegistrationStaging& staging, const std::string& origin,
              PluginLoadRecord* record);
  // Amends the loaded plugins' records in the history.
  void note_dropped(const std::vector<DroppedImpl>& dropped);

  // --- launch path (launch.cpp)
  void launch(const KernelSlot& slot, std::span<const jw_arg_value> args,
              std::string_view platform, int32_t device, void* stream);
  // A handle's launch, as KernelHandle::launch does it (for the C API).
  static void launch(const KernelHandle& handle,
                     std::span<const jw_arg_value> args,
                     std::string_view platform, int32_t device, void* stream);
  // Steps 1 to 4 of a launch without its miss path: the prepared launch
  // these arguments would use, or nullptr (the launch-overhead bench times
  // signature and lookup with it).
  static const PreparedLaunch* find_prepared(const KernelHandle& handle,
                                             std::span<const jw_arg_value> args,
                                             std::string_view platform,
                                             int32_t device);
  const PreparedLaunch* find_prepared(const KernelSlot& slot,
                                      std::span<const jw_arg_value> args,
                                      std::string_view platform,
                                      int32_t device);
  CompileKey key_for(const KernelSlot& slot, std::span<const jw_arg_value> args,
                     std::string_view platform, int32_t device);
  // Compiles (or finds) `key` with `impl`; `from_launch` routes a real
  // compile through the JIT monitor.
  CompileCache::Lookup compile(const ImplRecord& impl,
                               const KernelSchema& schema,
                               const CompileKey& key, bool from_launch);
  // Warmup: `keys` of `impl` together (jw_kernel_impl.compile_batch, which
  // the implementation must have), one result per key.
  std::vector<CompileCache::BatchLookup> compile_batch(
      const ImplRecord& impl, const KernelSchema& schema,
      std::span<const CompileKey* const> keys);
  // How the cache compiles `key` with `impl` (compile's and the batch's).
  CompileCache::Compiler compiler_for(const ImplRecord& impl,
                                      const KernelSchema& schema,
                                      const CompileKey& key, bool from_launch);

  // --- warmup (warmup_execution.cpp)
  WarmupResult warmup(const std::vector<WarmupRequest>& requests,
                      const WarmupOptions& options);
  WarmupResult warmup_keys(const std::vector<CompileKey>& keys,
                           const WarmupOptions& options);
  std::vector<CompileKey> warmup_plan(
      const std::vector<WarmupRequest>& requests, const WarmupOptions& options);

  // --- host kernels (host_kernels.cpp)
  RegistrationHandle register_kernels(std::vector<KernelOverride> overrides,
                                      const std::string& origin);

  // --- kernels from source (source_kernels.cpp)
  // A loaded plugin that compiles source, for this runtime.
  struct SourceCompiler {
    std::shared_ptr<void> library;  // keeps the plugin library
    const jw_host_api* host;        // this runtime's table for it
    decltype(jw_plugin_api::implement_source_kernel) implement;
    std::string path;
  };
  void note_source_compiler(SourceCompiler compiler);
  // `record` (optional) says what became of it.
  RegistrationHandle add_source_kernel(SourceKernel kernel, ImplSource source,
                                       KernelFileRecord* record);
  void load_kernel_directories(const std::vector<std::string>& directories,
                               PluginLoadReport& report);
  std::vector<SourceKernel> source_kernels();

  Logger& logger() { return logger_; }
  Registry& registry() { return registry_; }
  Platforms& platforms() { return platforms_; }
  CompileCache& cache() { return cache_; }
  JitMonitor& monitor() { return monitor_; }
  DiskCache* disk_cache() { return disk_cache_.get(); }
  const CacheSettings& cache_settings() const { return cache_settings_; }

  // One key warmup compiles, with the implementation that wins for it.
  struct WarmupWork {
    std::shared_ptr<const KernelSchema> schema;
    std::shared_ptr<ImplRecord> impl;
    CompileKey key;
  };
  // Warms one unit (keys of `work` compiled together, or one key) into
  // `keys` (indexed like `work`), calling `report` with each key's index
  // once its result is in.
  void warm_unit(const std::vector<WarmupWork>& work,
                 std::span<const std::size_t> unit,
                 std::vector<WarmupKeyResult>& keys,
                 const std::function<void(std::size_t)>& report);
  // What `schedule` deals, in as many worker processes as it deals for
  // (warmup_processes.cpp).
  void warm_in_processes(const std::vector<WarmupWork>& work,
                         WarmupSchedule& schedule,
                         std::vector<WarmupKeyResult>& keys,
                         const std::function<void(std::size_t)>& report);

 private:
  friend class PluginLibrary;
  struct SourceKernelState {
    SourceKernel kernel;
    ImplSource source;
    std::vector<uint64_t> tokens;  // its implementations in the registry
  };
  struct SourceImplementation;
  SourceImplementation implement(const SourceCompiler& compiler,
                                 const SourceKernelState& state);
  void define_source_schema(const KernelSchema& schema);

  std::vector<WarmupWork> plan(const std::vector<WarmupRequest>& requests,
                               const WarmupOptions& options);
  WarmupResult compile_all(const std::vector<WarmupWork>& work,
                           const WarmupOptions& options);
  // The winner on `platform` (empty: the default platform), or throws.
  const KernelState::Platform& resolve(const KernelState& state,
                                       std::string_view* platform);
  // The launch path's steps 3 and 4 (launch.cpp): the prepared launch of
  // these arguments on `device`, validated once. For a launch a hit counts
  // as one and a miss is prepared; otherwise (find_prepared) a miss is
  // nullptr and nothing is counted.
  const PreparedLaunch* find_or_prepare(const KernelState& state,
                                        const KernelState::Platform& entry,
                                        std::string_view platform,
                                        std::span<const jw_arg_value> args,
                                        int32_t device, bool for_launch);
  // The launch path's miss: derive the key, compile through the cache,
  // prepare with the implementation, publish.
  const PreparedLaunch& prepare(const KernelState& state,
                                const KernelState::Platform& entry,
                                std::string_view platform, int32_t device,
                                const ArgumentSignature& signature);

  Logger logger_;  // first: the registry logs through it
  Registry registry_;
  Platforms platforms_;
  CompileCache cache_;
  CacheSettings cache_settings_;
  std::shared_ptr<DiskCache> disk_cache_;     // may be null
  std::shared_ptr<RemoteTier> remote_cache_;  // may be null
  JitMonitor monitor_;

  // Kernels from source and the plugins that implement them.
  std::mutex source_mutex_;
  std::vector<SourceCompiler> source_compilers_;
  std::vector<std::shared_ptr<SourceKernelState>> source_kernels_;
  std::vector<RegistrationHandle> kept_registrations_;  // kernel directories
  // The descriptors kernel directories gave (canonical paths), so a second
  // load_plugins reports them as duplicates instead of stacking them again.
  std::set<std::string> loaded_kernel_files_;

  mutable std::mutex history_mutex_;
  std::vector<PluginLoadRecord> history_;
  // Plugin libraries by plugin name, to refuse a second copy.
  std::map<std::string, std::string> loaded_plugin_paths_;
  std::mutex load_mutex_;  // one plugin load at a time
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
