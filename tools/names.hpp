// What a user types for a name on the command line, and what it means:
// the closest spelling of a command or an option, a kernel's full name from
// its short one, a target from the design's shorthand (sm_90, gfx942). Every
// `jitwarm` verb and the conformance runner resolve names here, so they
// agree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::cli {

// The candidates closest to `typed` (edit distance with transpositions, as
// git suggests commands), best first; empty when none is close enough to
// be what the user meant.
std::vector<std::string> closest_spellings(
    std::string_view typed, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" / "; did you mean one of 'x', 'y'?", or "".
std::string did_you_mean(const std::vector<std::string>& suggestions);

// The part of a kernel name after its last dot ("rms_norm").
std::string_view short_kernel_name(std::string_view full_name);

// The full name of the kernel `typed` names among `kernels` (full names):
// the full name itself, or a short name that exactly one kernel has.
// Throws Error(JW_ERROR_NOT_FOUND) for no match (with the closest names) and
// Error(JW_ERROR_INVALID_ARGUMENT) when several kernels have that short
// name, listing them.
std::string resolve_kernel_name(std::string_view typed,
                                const std::vector<std::string>& kernels);

// Checks a `--kernel` filter of the conformance runner against the kernels
// under test: a glob (*, ? or [) must match a full or a short name; a plain
// name must resolve as resolve_kernel_name resolves it (and throws alike).
void check_kernel_filter(std::string_view filter,
                         const std::vector<std::string>& kernels);

// A target as PLATFORM:ARCH. The shorthand is expanded: sm_NN and
// compute_NN are CUDA ("cuda:sm_90"), gfxNNN (with AMD feature suffixes)
// is HIP ("hip:gfx942"). A text with a platform is returned as it is; the
// platform's plugin decides whether it knows the arch. Throws
// CommandError(kExitUsage) for anything else, naming the accepted forms.
std::string expand_target(std::string_view typed);

}  // namespace jitwarm::cli
