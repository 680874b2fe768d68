// Host overrides (Runtime::register_kernels): implementations a host gives
// as C tables or as C++ functions (host-function kernels, which compile
// nothing), registered all or nothing.
//
// It registers and returns the tokens; the runtime wraps them in the
// handle that removes them (runtime_impl.hpp), since a handle may outlive
// the registry it would remove them from. It keeps no state of its own.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "registry.hpp"

namespace jitwarm::detail {

// Registers `overrides` in `registry` as `origin` says, all or nothing
// (Registry::add_batch); the tokens remove them again.
std::vector<uint64_t> register_host_kernels(
    Registry& registry, std::vector<KernelOverride> overrides,
    const std::string& origin);

}  // namespace jitwarm::detail
