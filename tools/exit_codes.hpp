// The exit codes of every `jitwarm` command, the conformance runner
// included: numbers scripts rely on (docs/cli.md has the table; tests/cli
// produces each one).
#pragma once

namespace jitwarm::cli {

enum ExitCode : int {
  kExitOk = 0,           // the command did what was asked
  kExitFailures = 1,     // it ran, and found failures (failed keys, corrupt
                         // entries, rejected plugins under --strict)
  kExitUsage = 2,        // bad command line
  kExitBadInput = 3,     // a missing, unreadable or malformed input file,
                         // an unknown or ambiguous kernel
  kExitEnvironment = 4,  // no device / no target for the platform, a
                         // target no compiler supports, I/O on outputs
  kExitInternal = 70,    // a bug
};

}  // namespace jitwarm::cli
