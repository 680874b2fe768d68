// One runtime's use of a plugin library: the host table it was given, its
// registration and its precedence. Lives as long as any implementation or
// platform it registered (they hold it); its end is the plugin's
// unregister_all for this runtime (and shutdown, after the last runtime).
// It reaches the runtime through the parts its host table serves, which
// outlive it (runtime_impl.hpp), never through the plugin host.
//
// Every callback of the host table is a C entry point a plugin calls, so
// each is guarded (c_guard: no exception of the core's gets into a plugin);
// registrations are only staged (plugin_host.hpp commits them).
#pragma once

#include <jitwarm/jitwarm.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "disk_cache.hpp"
#include "log.hpp"
#include "mapped_libraries.hpp"
#include "platforms.hpp"
#include "registry.hpp"

namespace jitwarm::detail {

struct RegistrationStaging;  // plugin_host.hpp

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
  ~PluginLibrary();

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

}  // namespace jitwarm::detail
