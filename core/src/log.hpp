// The core's logger: one sink (the host's, or stderr), one level threshold
// (JITWARM_LOG_LEVEL = debug|info|warning|error, default warning).
#pragma once

#include <jitwarm/jitwarm.h>

#include <functional>
#include <string>

namespace jitwarm::detail {

class Logger {
 public:
  using Sink = std::function<void(jw_log_level, const std::string&)>;
  explicit Logger(Sink sink = {});
  void log(jw_log_level level, const std::string& message) const;
  jw_log_level threshold() const { return threshold_; }

 private:
  Sink sink_;
  jw_log_level threshold_;
};

const char* log_level_name(jw_log_level level);

}  // namespace jitwarm::detail
