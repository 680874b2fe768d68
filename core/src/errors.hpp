// Errors inside the core: the per-thread last-error string of the C ABI, and
// the one guard that turns C++ exceptions into status codes at every C entry
// point (so no exception ever crosses the boundary).
#pragma once

#include <jitwarm/jitwarm.hpp>
#include <jitwarm/plugin/raw_enum.hpp>

#include <fmt/format.h>

#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace jitwarm::detail {

void set_last_error(std::string message);
// Before calling into a plugin, so an error it reports without set_error is
// not blamed on a stale message.
void clear_last_error();
const char* last_error();

template <typename... Args>
[[noreturn]] void fail(jw_status status, fmt::format_string<Args...> format,
                       Args&&... args) {
  throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

// The integer inside an enum that arrived through the C ABI
// (jitwarm/plugin/raw_enum.hpp): every enum from outside is read through
// this (and range-checked) before it is used as its type. The plugin SDK's, so
// the core and plugins read C enums alike.
using ::jitwarm::plugin::raw_enum;

// Runs `body`; on an exception records its message as the last error and
// returns its status.
template <typename Body>
jw_status c_guard(Body&& body) noexcept {
  try {
    body();
    return JW_OK;
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return JW_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(e.what());
    return JW_ERROR_INTERNAL;
  } catch (...) {
    set_last_error("unknown exception");
    return JW_ERROR_INTERNAL;
  }
}

// Calls a plugin function and throws Error with the plugin's message (from
// host set_error) when it fails. `what` says which call, for the message.
void check_plugin_status(jw_status status, std::string_view what);

// Collects text written into a jw_text_sink.
struct TextCollector {
  std::string text;
  jw_text_sink sink();
};

}  // namespace jitwarm::detail
