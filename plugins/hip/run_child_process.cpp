// run_child_process: a program started and reaped by the supervisor
// (support/child_process.hpp), its output read to the end of the stream.
#include "run_child_process.hpp"

#include <cstring>
#include <exception>

#include "child_process.hpp"

namespace jitwarm::hip {

ChildProcessResult run_child_process(const std::vector<std::string>& argv,
                                     const std::string& working_directory) {
  ChildProcessResult result;
  detail::ChildProcess child;
  try {
    child = detail::ChildProcess::spawn(argv, working_directory);
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
  result.started = true;
  while (child.read_some(result.output)) {
  }
  const detail::ChildEnd end = child.reap();
  if (end.wait_error() != 0) {
    result.started = false;
    result.error = std::string("waitpid: ") + std::strerror(end.wait_error());
  } else if (const std::optional<int> signal_number = end.signal()) {
    result.signal = *signal_number;
  } else if (const std::optional<int> status = end.exit_status()) {
    result.exit_status = *status;
  }
  result.ending = end.describe();
  return result;
}

}  // namespace jitwarm::hip
