// The launcher: the launch path (launcher.cpp, read it top to bottom;
// docs/architecture.md, "The hot path and its invariants"), and the
// lookups that share its steps (find_prepared, key_for).
//
// * A hit takes no lock, allocates nothing and builds no text: it reads
//   the registry's published state inside a read guard (registry.hpp I2),
//   the platform's winner, and that winner's prepared-launch table
//   (prepared_launch.hpp), and counts itself in the cache's striped
//   counter.
// * A miss derives the key, compiles it through the compile service (past
//   the JIT monitor), lets the implementation prepare, and publishes the
//   prepared launch in the table; nothing else compiles for a launch.
// * It owns no state: prepared launches live in the registry's states, and
//   artifacts in the cache. It must not register, load or warm anything,
//   nor keep an implementation past the read guard it found it in.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "argument_signature.hpp"
#include "compile_cache.hpp"
#include "compile_service.hpp"
#include "platforms.hpp"
#include "registry.hpp"
#include "tune_results.hpp"

namespace jitwarm::detail {

struct PreparedLaunch;

class Launcher {
 public:
  // `cache` is the one `compiler` compiles through (the launcher counts
  // its hits there).
  Launcher(Registry& registry, Platforms& platforms, CompileCache& cache,
           CompileService& compiler, TuneResults& tune_results);
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  void launch(const KernelSlot& slot, std::span<const jw_arg_value> args,
              std::string_view platform, int32_t device, void* stream);
  // Steps 1 to 4 of a launch without its miss path: the prepared launch
  // these arguments would use, or nullptr (the launch-overhead bench times
  // signature and lookup with it).
  const PreparedLaunch* find_prepared(const KernelSlot& slot,
                                      std::span<const jw_arg_value> args,
                                      std::string_view platform,
                                      int32_t device);
  CompileKey key_for(const KernelSlot& slot, std::span<const jw_arg_value> args,
                     std::string_view platform, int32_t device);

  // For Runtime::tune (tuner.hpp): inside the registry's read guard,
  // `body` with the winner of `slot` on `platform`, the (untuned) key these
  // arguments launch, and launch_with(candidate): a function that launches
  // the arguments once with that config's binary (compiled through the
  // cache, compile only: past no JIT monitor, outside the prepared table).
  struct TuningView {
    const KernelSchema& schema;
    const ImplRecord& impl;
    const CompileKey& key;
    std::string_view platform;
    std::function<std::function<void()>(const CompileKey& candidate)>
        launch_with;
  };
  void with_tuning_view(const KernelSlot& slot,
                        std::span<const jw_arg_value> args,
                        std::string_view platform, int32_t device, void* stream,
                        const std::function<void(const TuningView&)>& body);

 private:
  // The key a launch of `impl` with this signature compiles: with
  // `tuned`, the winner stored for this kind of device where there is one.
  CompileKey launch_key(const KernelSchema& schema, const ImplRecord& impl,
                        const ArgumentSignature& signature,
                        std::string_view platform, int32_t device, bool tuned);
  // The winner on `platform` (empty: the default platform), or throws.
  const KernelState::Platform& resolve(const KernelState& state,
                                       std::string_view* platform);
  // The launch path's steps 3 and 4: the prepared launch of these
  // arguments on `device`, validated once. For a launch a hit counts as
  // one and a miss is prepared; otherwise (find_prepared) a miss is
  // nullptr and nothing is counted.
  const PreparedLaunch* find_or_prepare(const KernelState& state,
                                        const KernelState::Platform& entry,
                                        std::string_view platform,
                                        std::span<const jw_arg_value> args,
                                        int32_t device, bool for_launch);
  // The launch path's miss: derive the key, compile through the cache,
  // prepare with the implementation, publish.
  const PreparedLaunch& prepare(const KernelState& state,
                                const KernelState::Platform& entry,
                                std::string_view platform, int32_t device,
                                const ArgumentSignature& signature);

  Registry& registry_;
  Platforms& platforms_;
  CompileCache& cache_;
  CompileService& compiler_;
  TuneResults& tune_results_;
};

}  // namespace jitwarm::detail
