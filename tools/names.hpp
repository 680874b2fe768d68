// What a user types for a name on the command line, and what it means:
// the closest spelling of a command or an option, a kernel's full name from
// its short one, a target from the design's shorthand (sm_90, gfx942). Every
// `jitwarm` verb and the conformance runner resolve names here, so they
// agree.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::cli {

// closest_spellings, did_you_mean, short_kernel_name and
// resolve_kernel_name are the core's (jitwarm.hpp, "Names"): the runtime
// resolves what a host's user types as the command does.
using jitwarm::closest_spellings;
using jitwarm::did_you_mean;
using jitwarm::resolve_kernel_name;
using jitwarm::short_kernel_name;

// Checks a `--kernel` filter of the conformance runner against the kernels
// under test: a glob (*, ? or [) must match a full or a short name; a plain
// name must resolve as resolve_kernel_name resolves it (and throws alike).
void check_kernel_filter(std::string_view filter,
                         const std::vector<std::string>& kernels);

// A target as PLATFORM:ARCH, read by the core's parse_target (so the
// command and the Python package take the same shorthand). Throws
// CommandError(kExitUsage) for what it refuses, with its message.
std::string expand_target(std::string_view typed);

}  // namespace jitwarm::cli
