// Helpers for the plugin side of the C ABI: the one place where C++
// exceptions become status codes, the host tables a plugin reports through,
// and small adapters for the core's sinks.
//
// Plugins include only jitwarm.h and this header; they never link libjitwarm.
#pragma once

#include <jitwarm/jitwarm.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::plugin {

// An error with a status, thrown inside a plugin and turned into a return
// value by guarded().
class PluginError : public std::runtime_error {
 public:
  PluginError(jw_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  jw_status status() const noexcept { return status_; }

 private:
  jw_status status_;
};

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

// Runs `body` and converts any exception into a status plus the host's
// per-thread error message (every C entry point of a plugin goes through
// this, so no exception ever crosses the boundary).
template <typename Body>
jw_status guarded(Body&& body) noexcept {
  auto report = [](jw_status status, const char* message) {
    try {
      host_tables().with_current([&](const jw_host_api& host) {
        if (host.set_error != nullptr) host.set_error(host.host_ctx, message);
      });
    } catch (...) {
      // The lock could not be taken: the status still says what failed.
    }
    return status;
  };
  try {
    body();
    return JW_OK;
  } catch (const PluginError& e) {
    return report(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return report(JW_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return report(JW_ERROR_INTERNAL, e.what());
  } catch (...) {
    return report(JW_ERROR_INTERNAL, "unknown exception");
  }
}

inline void append(const jw_text_sink* sink, std::string_view text) {
  if (sink != nullptr && sink->append != nullptr) {
    sink->append(sink->ctx, text.data(), text.size());
  }
}

// Throws PluginError when a host call fails, with the context given.
inline void check_host(jw_status status, std::string_view what) {
  if (status != JW_OK) {
    throw PluginError(status, std::string(what) + " failed");
  }
}

// The version handshake as every bundled plugin answers it: the newest
// version both sides speak, with `api` as the function table. This build
// speaks [JITWARM_ABI_VERSION_MIN, JITWARM_ABI_VERSION].
inline jw_status answer_negotiation(jw_plugin_negotiation* negotiation,
                                    const jw_plugin_api* api) noexcept {
  if (negotiation == nullptr ||
      negotiation->struct_size < offsetof(jw_plugin_negotiation, plugin) +
                                     sizeof(negotiation->plugin)) {
    return JW_ERROR_INVALID_ARGUMENT;
  }
  const uint32_t version = negotiation->core_max_version < JITWARM_ABI_VERSION
                               ? negotiation->core_max_version
                               : JITWARM_ABI_VERSION;
  if (version < JITWARM_ABI_VERSION_MIN ||
      version < negotiation->core_min_version) {
    // Tell the core which version we would need (its report shows both).
    negotiation->plugin_version = JITWARM_ABI_VERSION_MIN;
    return JW_ERROR_ABI_MISMATCH;
  }
  negotiation->plugin_version = version;
  negotiation->plugin = api;
  return JW_OK;
}

// Checks that the host table has what registration needs, and attaches it
// (register_all; unregister_all detaches it again).
inline void accept_host_table(const jw_host_api* host,
                              std::string_view plugin_name) {
  if (host == nullptr ||
      host->struct_size < offsetof(jw_host_api, register_platform) +
                              sizeof(host->register_platform) ||
      host->define_schema == nullptr || host->register_impl == nullptr ||
      host->register_platform == nullptr) {
    throw PluginError(JW_ERROR_ABI_MISMATCH,
                      std::string(plugin_name) +
                          ": the host table lacks define_schema/"
                          "register_impl/register_platform");
  }
  host_tables().attach(host);
}

// register_all's frame: validates and attaches `host`, runs `body` through
// guarded(), and detaches the table again when registration failed (the
// core calls unregister_all only after JW_OK). The same table twice is an
// error: one runtime registers a plugin once.
template <typename Body>
jw_status register_with_host(const jw_host_api* host,
                             std::string_view plugin_name,
                             Body&& body) noexcept {
  bool attached = false;
  const jw_status status = guarded([&] {
    if (host != nullptr && host_tables().attached(host)) {
      throw PluginError(JW_ERROR_ALREADY_EXISTS,
                        std::string(plugin_name) +
                            ": register_all called twice with one host table");
    }
    accept_host_table(host, plugin_name);
    attached = true;
    body();
  });
  if (status != JW_OK && attached) host_tables().detach(host);
  return status;
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
