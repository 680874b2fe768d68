#include "log.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

namespace jitwarm::detail {
namespace {

jw_log_level threshold_from_environment() {
  const char* value = std::getenv("JITWARM_LOG_LEVEL");
  if (value == nullptr) return JW_LOG_WARNING;
  std::string_view v(value);
  if (v == "debug") return JW_LOG_DEBUG;
  if (v == "info") return JW_LOG_INFO;
  if (v == "error") return JW_LOG_ERROR;
  return JW_LOG_WARNING;
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

Logger::Logger(Sink sink)
    : sink_(std::move(sink)), threshold_(threshold_from_environment()) {}

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
