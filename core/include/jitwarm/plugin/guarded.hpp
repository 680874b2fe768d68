// jitwarm/plugin/guarded.hpp — the one place where C++ exceptions become
// status codes on the plugin side of the C ABI: every C entry point of a
// plugin runs its body through guarded(), so no exception ever crosses the
// boundary (docs/plugin-abi.md P14).
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/error.hpp>
#include <jitwarm/plugin/host.hpp>

#include <exception>
#include <new>

namespace jitwarm::plugin {

// Runs `body` and converts any exception, of any type, into a status plus
// the host's per-thread error message: a PluginError gives its own status,
// std::bad_alloc JW_ERROR_OUT_OF_MEMORY, anything else JW_ERROR_INTERNAL
// (with what() when it is a std::exception).
template <typename Body>
jw_status guarded(Body&& body) noexcept {
  auto report = [](jw_status status, const char* message) {
    set_error(message);
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

}  // namespace jitwarm::plugin
