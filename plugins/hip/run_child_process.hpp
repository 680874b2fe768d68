// run_child_process: runs a program (clang, for the HIP targets hiprtc
// cannot compile) with an argument vector, no shell, and collects its
// exit status and combined stdout/stderr. Safe to call from several
// threads at once: the supervisor (support/child_process.hpp) starts it
// with posix_spawn and a close-on-exec pipe, so a child started by another
// thread never holds it open.
#pragma once

#include <string>
#include <vector>

namespace jitwarm::hip {

struct ChildProcessResult {
  bool started = false;  // false: `error` says why (e.g. exec failed)
  int exit_status = -1;  // when it exited normally
  int signal = 0;        // when a signal ended it
  std::string output;    // stdout and stderr, interleaved
  std::string error;

  bool succeeded() const { return started && signal == 0 && exit_status == 0; }
  // "exit status 1", "killed by signal 11", or the start error: shorter
  // than ChildEnd::describe, inside the compile errors that quote it
  // ("clang failed (exit status 1)"), and kept as those say it.
  std::string outcome() const;
};

// argv[0] is the program's path (searched in PATH when it has no slash).
// `working_directory` empty: the caller's. stdin is /dev/null.
ChildProcessResult run_child_process(const std::vector<std::string>& argv,
                                     const std::string& working_directory);

}  // namespace jitwarm::hip
