// Counting the heap allocations a piece of code makes on the calling thread,
// for tests of the promise that a launch hit allocates nothing. Linking
// allocation_counter.cpp replaces the global operator new of the test
// executable; plugins loaded into it call the same one when the executable
// exports it (meson: export_dynamic: true).
#pragma once

#include <cstdint>

namespace jitwarm::test {

// Allocations `body` made on this thread.
template <typename Body>
uint64_t allocations_of(Body&& body);

void start_counting_allocations();
uint64_t stop_counting_allocations();  // what was counted since start

template <typename Body>
uint64_t allocations_of(Body&& body) {
  start_counting_allocations();
  body();
  return stop_counting_allocations();
}

}  // namespace jitwarm::test
