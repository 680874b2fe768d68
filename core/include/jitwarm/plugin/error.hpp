// jitwarm/plugin/error.hpp — how code inside a plugin fails: throw a
// PluginError with the jw_status the C entry point returns; guarded()
// (guarded.hpp) turns it into that status plus the host's error message.
#pragma once

#include <jitwarm/jitwarm.h>

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

// Throws PluginError when a host call fails, with the context given.
inline void check_host(jw_status status, std::string_view what) {
  if (status != JW_OK) {
    throw PluginError(status, std::string(what) + " failed");
  }
}

}  // namespace jitwarm::plugin
