// jitwarm/plugin/negotiate.hpp — the two frames every plugin repeats: the
// version handshake (jitwarm_plugin_negotiate, docs/plugin-abi.md P4) and
// register_all's set-up and clean-up of the host table (P6, P7).
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/error.hpp>
#include <jitwarm/plugin/guarded.hpp>
#include <jitwarm/plugin/host.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jitwarm::plugin {

// The version handshake: the newest version both sides speak, with `api`
// as the function table. A plugin built with these headers speaks
// [JITWARM_ABI_VERSION_MIN, JITWARM_ABI_VERSION]; when the core offers none
// of them, the answer is JW_ERROR_ABI_MISMATCH with plugin_version set to
// the oldest version it would need (the core's load report shows both).
//
//   extern "C" JITWARM_EXPORT jw_status
//   jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
//     return jitwarm::plugin::answer_negotiation(negotiation, &kPluginApi);
//   }
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
