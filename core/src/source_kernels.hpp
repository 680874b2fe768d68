// Kernels from source (docs/kernel-descriptors.md): the loaded plugins that
// compile source, every kernel given so far (from a kernel directory or a
// host), and the descriptor files kernel directories gave.
//
// * Every kernel goes to every source compiler, whichever came first: a
//   kernel added is implemented by each compiler loaded so far, and a
//   compiler loaded later implements every kernel known so far, so load
//   order does not matter.
// * A kernel's schema is defined once; the same schema again is a second
//   source of the same kernel, other parameters under its name an error.
// * A kernel's implementations are in the registry with the precedence of
//   where the kernel came from (the installed kernel directory's are
//   bundled, other directories' the user's, a host's the host's), and leave
//   it together when the kernel is removed (remove); kernels from
//   directories are kept for the runtime's life.
// * It reads no descriptor itself (the plugins do), and must not load or
//   unload plugins (plugin_host.hpp hands it their compilers).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "log.hpp"
#include "plugin_load_history.hpp"
#include "registry.hpp"

namespace jitwarm::detail {

// A loaded plugin that compiles source, for this runtime.
struct SourceCompiler {
  std::shared_ptr<void> library;  // keeps the plugin library
  const jw_host_api* host;        // this runtime's table for it
  decltype(jw_plugin_api::implement_source_kernel) implement;
  std::string path;
};

// One kernel from source: what it is, where it came from, and its
// implementations' tokens in the registry.
struct SourceKernelState;

class SourceKernels {
 public:
  // A schema a kernel defines may drop other plugins' pending
  // implementations: `history` says so in their records.
  SourceKernels(Registry& registry, const Logger& logger,
                PluginLoadHistory& history);
  ~SourceKernels();
  SourceKernels(const SourceKernels&) = delete;
  SourceKernels& operator=(const SourceKernels&) = delete;

  // A plugin that compiles source was loaded: it implements every kernel
  // known so far, and every kernel added later.
  void note_compiler(SourceCompiler compiler);
  // Implements `kernel` with every source compiler and registers what they
  // make; `record` (optional) says what became of it. Throws when none
  // can, registering nothing.
  std::shared_ptr<SourceKernelState> add(SourceKernel kernel, ImplSource source,
                                         KernelFileRecord* record);
  // Removes what add() registered for `kernel` (a host's handle released).
  void remove(const std::shared_ptr<SourceKernelState>& kernel);
  // Adds the kernels of each directory's descriptors into `report`, except
  // files an earlier call loaded (reported as duplicates).
  void load_kernel_directories(const std::vector<std::string>& directories,
                               PluginLoadReport& report);
  std::vector<SourceKernel> kernels();

 private:
  struct SourceImplementation;
  SourceImplementation implement(const SourceCompiler& compiler,
                                 const SourceKernelState& state);
  void define_source_schema(const KernelSchema& schema);

  Registry& registry_;
  const Logger& logger_;
  PluginLoadHistory& history_;

  std::mutex mutex_;
  std::vector<SourceCompiler> compilers_;
  std::vector<std::shared_ptr<SourceKernelState>> kernels_;
  // The descriptors kernel directories gave (canonical paths), so a second
  // load_plugins reports them as duplicates instead of stacking them again.
  std::set<std::string> loaded_kernel_files_;
};

}  // namespace jitwarm::detail
