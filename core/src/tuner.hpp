// The tuner: Runtime::tune's work (docs/tuning.md). Every candidate config
// of the key some arguments launch is compiled (compile only, through the
// cache), launched on the device and timed; the fastest is the result,
// stored through TuneResults for the device's kind.
//
// * It launches, so it needs the caller's real device tensors; it leaves
//   the launch path's prepared launches alone (KernelHandle::tune then
//   refreshes the kernel's state, so they prepare again with the winner).
// * A candidate that fails to compile or launch is that candidate's error,
//   in the result; only when none runs does tuning fail.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <span>

#include "launcher.hpp"
#include "platforms.hpp"
#include "registry.hpp"
#include "tune_results.hpp"

namespace jitwarm::detail {

TuneResult tune_launches(Launcher& launcher, Platforms& platforms,
                         TuneResults& results, const KernelSlot& slot,
                         std::span<const jw_arg_value> args,
                         const TuneOptions& options);

}  // namespace jitwarm::detail
