// The plugin host: a runtime's side of plugin loading (plugin_host.cpp):
// finding candidates, probing them first where asked (plugin_probe.hpp),
// loading, the handshake, and committing each plugin's staged
// registration, every outcome a record in the load history.
//
// * One load at a time; a plugin name is loaded once per runtime (a second
//   library of that name is rejected as a duplicate).
// * All or nothing: a registration is staged during register_all and
//   committed (schemas to the registry, platforms to the platforms,
//   implementations to their stacks) only when everything in it is valid,
//   so a rejected plugin leaves no trace.
// * Each library a plugin lives in is kept by what it registered, and
//   reaches the runtime only through the parts it was given (the logger,
//   the registry, the platforms, the disk cache): they outlive every
//   library, this host does not. Libraries are never unloaded.
// * It must not launch or compile; a plugin that compiles source is handed
//   to the source kernels (source_kernels.hpp), which implement kernels
//   with it.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "log.hpp"
#include "platforms.hpp"
#include "plugin_load_history.hpp"
#include "registry.hpp"
#include "runtime_caches.hpp"
#include "source_kernels.hpp"

namespace jitwarm::detail {

// Registration staged during one plugin's register_all, committed only if
// everything in it is valid (a rejected plugin leaves no trace).
struct RegistrationStaging {
  std::vector<KernelSchema> schemas;
  std::vector<std::shared_ptr<ImplRecord>> impls;
  std::vector<std::shared_ptr<PlatformRecord>> platforms;
  std::vector<std::string> errors;
};

class PluginHost {
 public:
  PluginHost(const Logger& logger, Registry& registry, Platforms& platforms,
             const RuntimeCaches& caches, PluginLoadHistory& history,
             SourceKernels& source_kernels);
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  PluginLoadReport load_plugins(const PluginLoadOptions& options);
  // One file, probed first when JITWARM_PLUGIN_ISOLATION says so.
  PluginLoadRecord load_plugin(const std::string& path);

 private:
  // With its precedence decided; `history_index` receives its record's
  // place in the history.
  PluginLoadRecord load_plugin(const std::string& path, ImplSource source,
                               std::size_t* history_index = nullptr);
  // The record of a candidate whose probe died (plugin_probe.hpp): rejected
  // with `why`, never loaded here.
  PluginLoadRecord reject_unprobed(const std::string& path, ImplSource source,
                                   std::string why, std::size_t* history_index);
  void commit(RegistrationStaging& staging, const std::string& origin,
              PluginLoadRecord* record);

  const Logger& logger_;
  Registry& registry_;
  Platforms& platforms_;
  const RuntimeCaches& caches_;
  PluginLoadHistory& history_;
  SourceKernels& source_kernels_;

  // Plugin libraries by plugin name, to refuse a second copy.
  std::map<std::string, std::string> loaded_plugin_paths_;
  std::mutex load_mutex_;  // one plugin load at a time
};

}  // namespace jitwarm::detail
