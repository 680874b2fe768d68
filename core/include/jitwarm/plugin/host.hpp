// jitwarm/plugin/host.hpp — the host tables a plugin reports through, and
// small adapters for the core's services: log, set_error, text sinks.
//
// Every plugin library writes JITWARM_DEFINE_PLUGIN_HOST_API() once, in one
// of its source files: it defines host_api() and host_tables() for the
// library (they are declared here so every header of the SDK can use them).
#pragma once

#include <jitwarm/jitwarm.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::plugin {

// The host table messages go through: the newest one attached to
// host_tables() (a plugin that serves one runtime may set it directly).
const jw_host_api*& host_api();

// The host tables this plugin library is registered with. Several runtimes
// in one process each call register_all with their own table, and each
// table is invalid once its unregister_all returns (jitwarm.h), so a plugin
// keeps no single "host": register_all attaches its table, unregister_all
// detaches it, and messages (log, set_error) go through the newest table
// still attached, under a lock, so never through a table being detached.
class HostTables {
 public:
  void attach(const jw_host_api* host) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    attached_.push_back(host);
    host_api() = host;
  }
  void detach(const jw_host_api* host) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    attached_.erase(std::remove(attached_.begin(), attached_.end(), host),
                    attached_.end());
    host_api() = attached_.empty() ? nullptr : attached_.back();
  }
  // shutdown: no runtime uses the plugin any more.
  void detach_all() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    attached_.clear();
    host_api() = nullptr;
  }
  bool attached(const jw_host_api* host) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return std::find(attached_.begin(), attached_.end(), host) !=
           attached_.end();
  }
  // Calls use(host) with the current table, if there is one.
  template <typename Use>
  void with_current(Use&& use) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (const jw_host_api* host = host_api()) use(*host);
  }

 private:
  std::recursive_mutex mutex_;  // a host's log may call back in
  std::vector<const jw_host_api*> attached_;
};
HostTables& host_tables();

inline void log(jw_log_level level, const std::string& message) {
  host_tables().with_current([&](const jw_host_api& host) {
    if (host.log != nullptr) host.log(host.host_ctx, level, message.c_str());
  });
}

// Sets the host's per-thread error message (the detail a failed call's
// status comes with) through the current table, if there is one. Never
// throws: it is how failures are reported.
inline void set_error(const char* message) noexcept {
  try {
    host_tables().with_current([&](const jw_host_api& host) {
      if (host.set_error != nullptr) host.set_error(host.host_ctx, message);
    });
  } catch (...) {
    // The lock could not be taken: the status still says what failed.
  }
}

// Appends `text` to one of the core's text sinks (describe, capabilities'
// detail, device_target, ...); a null sink takes nothing.
inline void append(const jw_text_sink* sink, std::string_view text) {
  if (sink != nullptr && sink->append != nullptr) {
    sink->append(sink->ctx, text.data(), text.size());
  }
}

}  // namespace jitwarm::plugin

// Defines host_api() and host_tables() for one plugin library. Use once per
// plugin. Neither is ever destroyed: a plugin's threads may still report at
// exit.
#define JITWARM_DEFINE_PLUGIN_HOST_API()                           \
  const jw_host_api*& jitwarm::plugin::host_api() {                \
    static const jw_host_api* host = nullptr;                      \
    return host;                                                   \
  }                                                                \
  jitwarm::plugin::HostTables& jitwarm::plugin::host_tables() {    \
    static auto* const tables = new jitwarm::plugin::HostTables(); \
    return *tables;                                                \
  }
