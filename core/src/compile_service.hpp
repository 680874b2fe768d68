// The compile service: compiling a key with an implementation through the
// runtime's cache, the one way both the launch path's misses (launcher.hpp)
// and warmup (warmup_execution.hpp) compile, so a warmed key is the very
// entry a launch finds.
//
// * Every compile goes through CompileCache (one compile per key, across
//   threads and processes; the disk and remote tiers under it).
// * A compile for a launch passes the JIT monitor first (jit_monitor.hpp);
//   warmup's never do, and an implementation that compiles nothing
//   (JW_IMPL_COMPILES_NOTHING) never reaches it.
// * Every artifact it publishes carries a LaunchAttachment: the key as the
//   implementation sees it, which prepared launches point into.
// * It holds no state of its own, and must not launch, prepare, or decide
//   which implementation compiles a key (its callers do).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compile_cache.hpp"
#include "jit_monitor.hpp"
#include "log.hpp"
#include "registry.hpp"

namespace jitwarm::detail {

// Builds the view of a key an implementation receives (its parameter order).
// The view points into `key`'s strings: keep that key alive as long as the
// view (the launch path's copy lives in the artifact's attachment).
struct KeyViewStorage {
  std::vector<jw_param_spec> specs;
  std::vector<jw_tune_value> config;
  std::string text;
  jw_compile_key_view view{};
};
void make_key_view(const CompileKey& key, const ImplRecord& impl,
                   KeyViewStorage& out);

// The fingerprint `impl` gives `key` (what names its persistent entry
// beside the key), or nullopt when it has none or its fingerprint fails: a
// key then stays out of the persistent tiers. Every caller asks here.
std::optional<std::string> key_fingerprint(const ImplRecord& impl,
                                           const CompileKey& key);

// The configs `impl` can compile `key` with (jw_kernel_impl.tune_candidates
// of its untuned form), the default first, each sorted by name; empty when
// the implementation is not tunable. Throws Error with the plugin's message
// when the call fails or answers a malformed config.
std::vector<TuneConfig> tune_candidates(const ImplRecord& impl,
                                        const CompileKey& key);
// Throws Error(JW_ERROR_INVALID_ARGUMENT) unless `key` is untuned or its
// config is one of tune_candidates(impl, key): what every compile of a
// tuned key checks first, so no implementation gets a config it did not
// offer.
void check_tuned_key(const ImplRecord& impl, const CompileKey& key);

// The launch path's view of one artifact (Artifact::attachment): the key in
// the owning implementation's parameter order. It owns its key: the view
// points into it, and it outlives every launch (the CompileKey a launch
// derived does not).
struct LaunchAttachment {
  explicit LaunchAttachment(const CompileKey& k) : key(k) {}
  CompileKey key;
  KeyViewStorage key_view;
};

class CompileService {
 public:
  // `logger` is read at each use: a warmup worker replaces its sink.
  CompileService(CompileCache& cache, JitMonitor& monitor,
                 const Logger& logger);
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  // Compiles (or finds) `key` with `impl`; `from_launch` routes a real
  // compile through the JIT monitor.
  CompileCache::Lookup compile(const ImplRecord& impl,
                               const KernelSchema& schema,
                               const CompileKey& key, bool from_launch);
  // Warmup: `keys` of `impl` together (jw_kernel_impl.compile_batch, which
  // the implementation must have), one result per key.
  std::vector<CompileCache::BatchLookup> compile_batch(
      const ImplRecord& impl, const KernelSchema& schema,
      std::span<const CompileKey* const> keys);
  // How the cache compiles `key` with `impl` (compile's and the batch's).
  CompileCache::Compiler compiler_for(const ImplRecord& impl,
                                      const KernelSchema& schema,
                                      const CompileKey& key, bool from_launch);

 private:
  CompileCache& cache_;
  JitMonitor& monitor_;
  const Logger& logger_;
};

}  // namespace jitwarm::detail
