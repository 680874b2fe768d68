#include "log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>

namespace jitwarm::detail {
namespace {

constexpr const char* kLevelVariable = "JITWARM_LOG_LEVEL";

// The threshold JITWARM_LOG_LEVEL asks for; std::nullopt (and the default,
// warning) for a value that is not a level name.
std::optional<jw_log_level> threshold_from_environment() {
  const char* value = std::getenv(kLevelVariable);
  if (value == nullptr || *value == '\0') return JW_LOG_WARNING;
  const std::string_view v(value);
  for (const jw_log_level level :
       {JW_LOG_DEBUG, JW_LOG_INFO, JW_LOG_WARNING, JW_LOG_ERROR}) {
    if (v == log_level_name(level)) return level;
  }
  return std::nullopt;
}

}  // namespace

const char* log_level_name(jw_log_level level) {
  switch (level) {
    case JW_LOG_DEBUG: return "debug";
    case JW_LOG_INFO: return "info";
    case JW_LOG_WARNING: return "warning";
    case JW_LOG_ERROR: return "error";
  }
  return "log";
}

Logger::Logger(Sink sink) : sink_(std::move(sink)), threshold_(JW_LOG_WARNING) {
  if (const auto level = threshold_from_environment()) {
    threshold_ = *level;
    return;
  }
  // A misspelt level would otherwise silently mean "warning". Said once per
  // process: every runtime reads the same environment.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    log(JW_LOG_WARNING,
        std::string(kLevelVariable) + "='" + std::getenv(kLevelVariable) +
            "' is not a log level (debug, info, warning or error); using "
            "warning");
  }
}

void Logger::log(jw_log_level level, const std::string& message) const {
  if (sink_) {
    // A host sink sees everything and filters itself.
    sink_(level, message);
    return;
  }
  if (level < threshold_) return;
  static std::mutex stderr_mutex;  // whole lines, even from many threads
  std::lock_guard lock(stderr_mutex);
  std::fprintf(stderr, "jitwarm %s: %s\n", log_level_name(level),
               message.c_str());
}

}  // namespace jitwarm::detail
