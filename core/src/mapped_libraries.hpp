// The process-wide side of plugin libraries (docs/plugin-abi.md P15).
//
// A library, once opened, is never closed: a plugin may have left a thread
// running in its code, a callback of it may still be referenced, and an
// exception it threw is destroyed by its own code. dlclose would unmap that
// code under their feet (a host that unloaded such a plugin died with
// SIGSEGV), so every handle the loader opens stays open until the process
// ends, and this table itself is never destroyed (not even at exit, when
// plugin threads may still run).
//
// The table also counts, per library, the runtimes registered with it:
// several runtimes in one process each call register_all with their own
// host table, each gets its own unregister_all, and shutdown runs only when
// the last of them is done. Lifecycle calls into one process's plugins
// (register_all, unregister_all, shutdown) never overlap.
#pragma once

#include <boost/dll/shared_library.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace jitwarm::detail {

class MappedLibraries {
 public:
  static MappedLibraries& instance();
  // Opens `path` (RTLD_NOW | RTLD_LOCAL: two plugins never see each
  // other's symbols); throws what Boost.DLL throws. The first handle of a
  // library is kept for ever; a later open of the same library (another
  // runtime, a duplicate) only adds a reference, so closing that one again
  // unmaps nothing and the table does not grow with every load.
  boost::dll::shared_library& open(const std::string& path);
  std::recursive_mutex& lifecycle_mutex() { return lifecycle_mutex_; }
  // Runtimes registered with the library of `native` handle (under
  // lifecycle_mutex()).
  int& users(const void* native) { return users_[native]; }

 private:
  MappedLibraries() = default;
  std::mutex mutex_;
  // By native handle (dlopen gives one handle per library).
  std::map<const void*, std::unique_ptr<boost::dll::shared_library>> opened_;
  std::recursive_mutex lifecycle_mutex_;
  std::map<const void*, int> users_;
};

}  // namespace jitwarm::detail
