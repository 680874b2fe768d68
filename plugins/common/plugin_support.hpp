// Helpers for the plugin side of the C ABI: the one place where C++
// exceptions become status codes, and small adapters for the core's sinks.
//
// Plugins include only jitwarm.h and this header; they never link libjitwarm.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

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

// The host services of the loaded plugin, set once by register_all.
// (One plugin library is loaded at most once per process.)
const jw_host_api*& host_api();

inline void log(jw_log_level level, const std::string& message) {
  const jw_host_api* host = host_api();
  if (host != nullptr && host->log != nullptr) {
    host->log(host->host_ctx, level, message.c_str());
  }
}

// Runs `body` and converts any exception into a status plus the host's
// per-thread error message (every C entry point of a plugin goes through
// this, so no exception ever crosses the boundary).
template <typename Body>
jw_status guarded(Body&& body) noexcept {
  auto report = [](jw_status status, const char* message) {
    const jw_host_api* host = host_api();
    if (host != nullptr && host->set_error != nullptr) {
      host->set_error(host->host_ctx, message);
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

// Checks that the host table has what registration needs, and keeps it.
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
  host_api() = host;
}

}  // namespace jitwarm::plugin

// Defines host_api() for one plugin library. Use once per plugin.
#define JITWARM_DEFINE_PLUGIN_HOST_API()            \
  const jw_host_api*& jitwarm::plugin::host_api() { \
    static const jw_host_api* host = nullptr;       \
    return host;                                    \
  }
