// conformance.hpp — `jitwarm conformance`: the backend conformance runner
// (docs/conformance.md). The CLI dispatches the arguments after the word
// "conformance" here; tools/conformance/main.cpp is a standalone driver of
// the same function for tests.
#pragma once

#include <string>
#include <vector>

namespace jitwarm::tools {

// Parses its own options (--help included), runs, prints the report and
// returns the exit code (0: every result met its expectation; see
// docs/conformance.md for the others).
int run_conformance_command(const std::vector<std::string>& args);

}  // namespace jitwarm::tools
