// The plugin load history (plugin_load_history.hpp).
#include "plugin_load_history.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jitwarm::detail {

void reject(PluginLoadRecord& r, PluginRejection why, std::string detail) {
  r.loaded = false;
  r.rejection = why;
  r.detail = std::move(detail);
}

std::size_t PluginLoadHistory::add(const PluginLoadRecord& record) {
  std::lock_guard lock(mutex_);
  records_.push_back(record);
  return records_.size() - 1;
}

std::vector<PluginLoadRecord> PluginLoadHistory::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

void PluginLoadHistory::note_dropped(const std::vector<DroppedImpl>& dropped) {
  if (dropped.empty()) return;
  std::lock_guard lock(mutex_);
  for (const DroppedImpl& d : dropped) {
    for (PluginLoadRecord& r : records_) {
      if (!r.loaded || r.path != d.origin) continue;
      std::erase(r.kernels, d.kernel);
      r.dropped.push_back(d.kernel + ": " + d.why);
      // A plugin left with nothing (every implementation it registered
      // dropped, no schema, no platform) serves nothing: it is rejected,
      // with why, rather than reported loaded.
      if (r.kernels.empty() && r.schemas.empty() && r.platforms.empty()) {
        std::string why;
        for (const std::string& note : r.dropped) {
          why += (why.empty() ? "" : "; ") + note;
        }
        reject(r, PluginRejection::registration_failed,
               "none of its implementations fits its kernel's schema: " + why);
        logger_.log(JW_LOG_WARNING,
                    fmt::format("plugin {} rejected ({}): {}", r.path,
                                to_string(r.rejection), r.detail));
      }
    }
  }
}

}  // namespace jitwarm::detail
