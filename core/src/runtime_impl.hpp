// RuntimeImpl: what a jitwarm::Runtime is, as parts a reader can name, each
// with its own header saying what it owns and what it must not touch:
//
//   logger              log.hpp                one sink, one threshold
//   JIT monitor         jit_monitor.hpp        seal, off/warn/error, record
//   caches              runtime_caches.hpp     memory cache, disk and remote
//                                              tiers, the settings they came
//                                              from
//   registry            registry.hpp           schemas, stacks, snapshots
//   platforms           platforms.hpp          platforms, default platform
//   compile service     compile_service.hpp    a key compiled through the
//                                              cache, past the monitor
//   tuning results      tune_results.hpp       winning configs per key and
//                                              device kind, as cache entries
//   launcher            launcher.hpp           the launch path (launcher.cpp)
//   warmup              warmup_execution.hpp   plan, compile, worker
//                                              processes
//   plugin load history plugin_load_history.hpp the record of every candidate
//   source kernels      source_kernels.hpp     source compilers, kernels from
//                                              source, kernel directories
//   plugin host         plugin_host.hpp        loading plugins, committing
//                                              their registrations
// and host overrides (host_kernels.hpp), which keep no state.
//
// RuntimeImpl owns the parts, builds them in dependency order (each takes
// the parts it uses as constructor references) and destroys them in
// reverse, which is what keeps every reference valid:
//  * The logger is first: every part logs through it, and so does a plugin
//    library when the registry, platforms or source kernels drop the last
//    reference to it (its unregister_all and shutdown).
//  * The monitor before the caches: a bad JITWARM_JIT_MONITOR is the error
//    a runtime reports before any cache setting's.
//  * The caches before the registry and the platforms: prepared launches
//    (in the registry's states) point into the cache's artifacts, and a
//    plugin's unregister_all may still use the byte cache.
//  * The load history before the source kernels and the plugin host, which
//    amend and append its records; the source kernels before the plugin
//    host, which hands them the plugins that compile source.
// No part holds the whole runtime; only what the runtime hands out does: a
// KernelHandle shares it, and a registration handle, which may outlive it,
// holds it weakly and keeps it alive while it releases (registration()).
// runtime.cpp is construction and the public C++ API, each call forwarded
// to the part that owns its job.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "compile_service.hpp"
#include "jit_monitor.hpp"
#include "launcher.hpp"
#include "log.hpp"
#include "platforms.hpp"
#include "plugin_host.hpp"
#include "plugin_load_history.hpp"
#include "registry.hpp"
#include "runtime_caches.hpp"
#include "source_kernels.hpp"
#include "tune_results.hpp"
#include "warmup_execution.hpp"

namespace jitwarm::detail {

struct PreparedLaunch;

class RuntimeImpl : public std::enable_shared_from_this<RuntimeImpl> {
 public:
  explicit RuntimeImpl(RuntimeOptions options);
  ~RuntimeImpl();
  RuntimeImpl(const RuntimeImpl&) = delete;
  RuntimeImpl& operator=(const RuntimeImpl&) = delete;

  // A handle's launch, as KernelHandle::launch does it (for the C API).
  static void launch(const KernelHandle& handle,
                     std::span<const jw_arg_value> args,
                     std::string_view platform, int32_t device, void* stream);
  // Launcher::find_prepared for a handle (for the bench and tests).
  static const PreparedLaunch* find_prepared(const KernelHandle& handle,
                                             std::span<const jw_arg_value> args,
                                             std::string_view platform,
                                             int32_t device);

  // A handle whose release runs `release` on this runtime while it lives.
  RegistrationHandle registration(std::function<void(RuntimeImpl&)> release);

  Logger& logger() { return logger_; }
  JitMonitor& monitor() { return monitor_; }
  RuntimeCaches& caches() { return caches_; }
  Registry& registry() { return registry_; }
  Platforms& platforms() { return platforms_; }
  TuneResults& tune_results() { return tune_results_; }
  Launcher& launcher() { return launcher_; }
  WarmupExecution& warmup() { return warmup_; }
  PluginLoadHistory& load_history() { return load_history_; }
  SourceKernels& source_kernels() { return source_kernels_; }
  PluginHost& plugin_host() { return plugin_host_; }

 private:
  Logger logger_;
  JitMonitor monitor_;
  RuntimeCaches caches_;
  Registry registry_;
  Platforms platforms_;
  CompileService compiler_;
  TuneResults tune_results_;
  Launcher launcher_;
  WarmupExecution warmup_;
  PluginLoadHistory load_history_;
  SourceKernels source_kernels_;
  PluginHost plugin_host_;
};

}  // namespace jitwarm::detail
