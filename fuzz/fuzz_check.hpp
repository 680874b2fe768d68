// What the fuzz harnesses treat as a finding, besides what ends the process
// by itself (a signal, a sanitizer report, an exception of any type other
// than jitwarm::Error, which no harness catches): an Error whose status says
// it is the core's own bug (JW_ERROR_INTERNAL), and a broken invariant.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace jitwarm::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

// A bad input must end in a clear error, never an internal one.
inline void expect_clear_error(const Error& e) {
  if (e.status() == JW_ERROR_INTERNAL)
    finding(std::string("internal error: ") + e.what());
}

}  // namespace jitwarm::fuzz
