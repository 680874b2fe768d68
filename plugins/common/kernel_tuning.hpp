// A descriptor's [tune] table at work (docs/kernel-descriptors.md, "[tune]"):
// which configs a compile key may be compiled with, and which one a key
// names.
//
// A config gives each choice one of its values. A key's config (the
// appended jw_compile_key_view.config) names some choices; the others take
// their defaults, so an untuned key is compiled with the default config.
// The candidates for a key are every combination of the choices' values
// that passes the [tune] checks for that key, the default config first
// whether or not it passes (a key compiled untuned gets the default, and
// then fails a check the way any compile check fails).
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>
#include <vector>

#include "gpu_target.hpp"
#include "kernel_descriptor.hpp"

namespace jitwarm::gpu {

// One value per choice of descriptor.tune_choices, in their order.
using ChoiceValues = std::vector<int64_t>;

// The key's config, defaults filled in. Throws
// PluginError(JW_ERROR_INVALID_ARGUMENT) for a name that is no choice, a
// value not among the choice's, or a config given to a descriptor without
// [tune].
ChoiceValues key_choice_values(const KernelDescriptor& descriptor,
                               const jw_compile_key_view& key);

// Whether `values` passes every [tune] check for `key` (whose parameters
// the caller checked against the schema). A check that cannot be evaluated
// for the key fails.
bool passes_tune_checks(const KernelDescriptor& descriptor,
                        const jw_compile_key_view& key, const GpuTarget& target,
                        const ChoiceValues& values);

// The configs `key` may be compiled with: empty without [tune]; else the
// default config first, then every other combination (in the order of the
// choices' values, the last choice varying fastest) that passes the checks.
std::vector<ChoiceValues> tune_candidates(const KernelDescriptor& descriptor,
                                          const jw_compile_key_view& key,
                                          const GpuTarget& target);

}  // namespace jitwarm::gpu
