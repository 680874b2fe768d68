// Every call the core makes into plugin code goes through this module.
//
// R1 (no exceptions across the boundary) binds plugin authors; the core does
// not rely on it. The handshake, register_all, unregister_all, shutdown and
// every callback of an implementation or a platform are called through a
// guard here, so whatever a plugin throws (a std::exception, an int,
// anything) stops at the boundary and becomes that plugin's failure: a
// status whose last-error text names the plugin, the call and the exception
// (hence a rejection in the load report, or a clear error), or a log line
// for calls that return nothing. The other direction, a plugin calling the
// core's C callbacks, is guarded where the core implements them (c_guard).
//
// What no guard can contain: a plugin that crashes (SIGSEGV), aborts or
// exits takes the process with it. A probing load loads each candidate in a
// child process first (plugin_probe.hpp; docs/plugin-abi.md P14).
#pragma once

#include <jitwarm/jitwarm.h>

#include <memory>
#include <string>
#include <string_view>

#include "log.hpp"

namespace jitwarm::detail {

struct ImplRecord;

// The exception being handled, in words: "std::runtime_error: disk full",
// "an exception of type int". Call it only inside a catch block.
std::string current_exception_text();

// For a catch block around a call into a plugin: sets the last error to
// "<who>: <what> threw <exception> ..." and returns `status` (or
// JW_ERROR_OUT_OF_MEMORY for std::bad_alloc).
jw_status plugin_threw(std::string_view who, std::string_view what,
                       jw_status status) noexcept;

// Calls `call()`, a call into plugin code returning jw_status, and returns
// its status, or plugin_threw(who, what, on_throw) if it throws.
template <typename Call>
jw_status call_into_plugin(std::string_view who, std::string_view what,
                           jw_status on_throw, Call&& call) noexcept {
  try {
    return call();
  } catch (...) {
    return plugin_threw(who, what, on_throw);
  }
}

// The same for a call that returns nothing (destroy, shutdown): a throw is
// logged as a warning through `logger` (when there is one) and swallowed.
void log_plugin_throw(const Logger* logger, std::string_view who,
                      std::string_view what) noexcept;
template <typename Call>
void call_into_plugin(const Logger* logger, std::string_view who,
                      std::string_view what, Call&& call) noexcept {
  try {
    call();
  } catch (...) {
    log_plugin_throw(logger, who, what);
  }
}

// The table the core calls for `record` (ImplRecord::c): each callback of
// record.plugin behind a guard, with `record` itself as user_data. A
// callback the implementation lacks stays null.
jw_kernel_impl guarded_impl_table(const ImplRecord& record);

// A platform as its plugin registered it. The core calls the table
// guarded_platform_table makes, which reaches this through its user_data.
struct GuardedPlatform {
  jw_platform_desc plugin{};  // its name points at `name`
  std::string name;
  std::string origin;
  std::shared_ptr<void> keep_alive;  // the plugin library
};
// The result's user_data is `guarded`, which must outlive every call.
jw_platform_desc guarded_platform_table(const GuardedPlatform& guarded);

}  // namespace jitwarm::detail
