// cpu_platform.hpp — the "cpu" platform the reference registers: one
// device (the host), host memory services, and no streams.
//
// Owns: the platform callbacks and their memory contract. allocate returns
// 64-byte aligned host memory; allocate(0) returns a valid, unique,
// non-null pointer that must not be dereferenced and is released with
// free_memory like any other. Device 0 is the host; -1 (a jw_tensor's
// "host memory") is accepted as the same device. copy has memmove semantics
// in every direction; synchronize has nothing to wait for.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>

namespace jitwarm::reference_cpu {

// Bytes every allocation is aligned to (a cache line, and a multiple of
// the 16 bytes the specialization rules care about).
inline constexpr size_t kAllocationAlignment = 64;

// The descriptor register_all hands to host->register_platform. Its
// callbacks live for the life of the library; user_data is unused.
jw_platform_desc cpu_platform_desc();

}  // namespace jitwarm::reference_cpu
