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
  // How it ended, in the supervisor's words ("exited with status 1",
  // "killed by signal 9 (SIGKILL)"), when it started.
  std::string ending;

  bool succeeded() const { return started && signal == 0 && exit_status == 0; }
  // `ending`, or the start error: what the compile errors quote ("clang
  // failed (exited with status 1)").
  std::string outcome() const { return started ? ending : error; }
};

// argv[0] is the program's path (searched in PATH when it has no slash).
// `working_directory` empty: the caller's. stdin is /dev/null.
ChildProcessResult run_child_process(const std::vector<std::string>& argv,
                                     const std::string& working_directory);

}  // namespace jitwarm::hip
