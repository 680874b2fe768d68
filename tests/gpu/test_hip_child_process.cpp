// run_child_process (plugins/hip/run_child_process): exit status, signals,
// combined output, working directory, start failures, and concurrent runs
// (the output pipe must not leak into other children).
#include "run_child_process.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using jitwarm::hip::ChildProcessResult;
using jitwarm::hip::run_child_process;

TEST_CASE(
    "given a program that writes to both streams and fails, then its "
    "status and both outputs come back") {
  const ChildProcessResult r = run_child_process(
      {"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"}, "");
  CHECK(r.started);
  CHECK(r.exit_status == 3);
  CHECK(r.signal == 0);
  CHECK_FALSE(r.succeeded());
  CHECK(r.output.find("to-stdout") != std::string::npos);
  CHECK(r.output.find("to-stderr") != std::string::npos);
  CHECK(r.outcome() == "exited with status 3");
}

TEST_CASE("given a program found in PATH, then it runs where it is told") {
  const ChildProcessResult r = run_child_process({"pwd"}, "/");
  CHECK(r.succeeded());
  CHECK(r.output == "/\n");
  const ChildProcessResult stdin_closed = run_child_process({"cat"}, "");
  CHECK(stdin_closed.succeeded());  // stdin is /dev/null: EOF at once
  CHECK(stdin_closed.output.empty());
}

TEST_CASE("given a program killed by a signal, then the signal is reported") {
  const ChildProcessResult r =
      run_child_process({"/bin/sh", "-c", "kill -9 $$"}, "");
  CHECK(r.started);
  CHECK(r.signal == 9);
  CHECK_FALSE(r.succeeded());
  CHECK(r.outcome() == "killed by signal 9 (SIGKILL)");
}

TEST_CASE("given a program that does not exist, then nothing starts") {
  const ChildProcessResult r =
      run_child_process({"/nonexistent/jitwarm-no-such-clang", "-v"}, "");
  CHECK_FALSE(r.started);
  CHECK_FALSE(r.succeeded());
  CHECK(r.error.find("/nonexistent/jitwarm-no-such-clang") !=
        std::string::npos);
  CHECK_FALSE(run_child_process({}, "").started);
}

TEST_CASE(
    "given a child, then it inherits no descriptor of the output pipe (so "
    "a child another thread starts cannot hold a pipe open)") {
  // The descriptors this process lets children inherit anyway.
  std::set<int> inheritable;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(entry.path().filename().string());
    const int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) inheritable.insert(fd);
  }
  const ChildProcessResult r = run_child_process(
      {"/bin/sh", "-c", "for f in /proc/$$/fd/*; do echo ${f##*/}; done"}, "");
  REQUIRE(r.succeeded());
  std::istringstream listed(r.output);
  std::vector<int> extra;
  for (int fd; listed >> fd;) {
    if (fd > 2 && inheritable.count(fd) == 0) extra.push_back(fd);
  }
  // One is the directory the shell's glob reads; a leaked pipe would add
  // its read and write ends.
  CHECK(extra.size() <= 1);
}

TEST_CASE(
    "given several threads running children at once, then each gets its "
    "own child's output") {
  std::vector<ChildProcessResult> results(6);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&results, i] {
      results[i] = run_child_process(
          {"/bin/sh", "-c", "sleep 0.2; echo child-" + std::to_string(i)}, "");
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::size_t i = 0; i < results.size(); ++i) {
    CHECK(results[i].output == "child-" + std::to_string(i) + "\n");
  }
}
