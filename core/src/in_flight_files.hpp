// Temporary files this process is writing right now, kept where a signal
// handler can reach them: a warmup worker told to stop (its parent died or
// was interrupted) removes them before it exits, so no half-written file
// outlives it. A file that is not registered (more at once than there are
// slots, or a path too long) is left to the cache's sweep of stale
// temporary files (disk_cache.hpp).
#pragma once

#include <filesystem>

namespace jitwarm::detail {

// Registers `path` for its lifetime. Register before creating the file, so
// there is no moment when it exists unregistered.
class InFlightFile {
 public:
  explicit InFlightFile(const std::filesystem::path& path) noexcept;
  ~InFlightFile();
  InFlightFile(const InFlightFile&) = delete;
  InFlightFile& operator=(const InFlightFile&) = delete;

 private:
  int slot_;  // -1: not registered
};

// Unlinks every registered file. Async-signal-safe; meant for a handler
// that then ends the process. A file registered or released by another
// thread while this runs may be missed (the sweep takes it later); a
// warmup worker compiles on one thread.
void remove_in_flight_files() noexcept;

}  // namespace jitwarm::detail
