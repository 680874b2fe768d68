// The plugin load history: the record of every plugin candidate a runtime
// tried, in the order it tried them (Runtime::load_history, and the records
// of a PluginLoadReport).
//
// * Records are only appended; a record's place never changes, so a load
//   can report the records of its own candidates by place.
// * A loaded plugin's record changes after its load in one way only: a
//   schema defined later (by another plugin, or by a kernel from source)
//   drops the implementations of it that waited for that schema and do not
//   fit it (note_dropped). A plugin left serving nothing is then rejected,
//   with why.
// * It holds records, not plugins: it must not load, register or unload
//   anything.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "log.hpp"
#include "registry.hpp"

namespace jitwarm::detail {

class PluginLoadHistory {
 public:
  explicit PluginLoadHistory(const Logger& logger) : logger_(logger) {}
  PluginLoadHistory(const PluginLoadHistory&) = delete;
  PluginLoadHistory& operator=(const PluginLoadHistory&) = delete;

  // Appends `record`; returns its place.
  std::size_t add(const PluginLoadRecord& record);
  std::vector<PluginLoadRecord> records() const;
  // Amends the loaded plugins' records for what `dropped` lists.
  void note_dropped(const std::vector<DroppedImpl>& dropped);

 private:
  const Logger& logger_;
  mutable std::mutex mutex_;
  std::vector<PluginLoadRecord> records_;
};

// Marks `record` rejected, for `why`.
void reject(PluginLoadRecord& record, PluginRejection why, std::string detail);

}  // namespace jitwarm::detail
