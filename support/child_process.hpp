// child_process.hpp — the one supervisor of child processes: starting a
// child (a fork running a function, or a program), the pipe or socket
// between it and the parent, waiting for what it writes until a deadline,
// killing it, reaping it, and saying how it ended. The worker pool
// (worker_pool.hpp), the plugin probe (core/src/plugin_probe.hpp) and the
// HIP plugin's clang runs (plugins/hip/run_child_process.hpp) use it; what
// their children say over the channel is theirs.
//
// Guarantees a caller relies on:
// - The channel is close-on-exec at both ends, so a program that any child
//   or thread starts never holds it open: the parent sees the end of the
//   stream when the child (and only it) is gone.
// - A forked child dies of its crash signals (SIGSEGV, SIGABRT, ...) with
//   nothing blocked, whatever handlers the host installed (a test
//   framework's, a sanitizer's, Python's faulthandler), so the parent can
//   name the signal; it dies with the parent (PR_SET_PDEATHSIG); and it
//   leaves with _exit, never through the host's exit handlers.
// - A child is reaped exactly once. One this object still holds when it
//   goes (an exception unwinding past it) is killed and reaped then, so no
//   path leaves a zombie or an orphan.
// - ChildEnd::describe is the one wording of how a child ended; every
//   caller quotes it (the pool's "worker process killed by signal 11
//   (SIGSEGV)", the probe's "... while loading, in register_all", the HIP
//   plugin's "clang failed (exited with status 1)").
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "file_descriptor.hpp"

namespace jitwarm::detail {

// How a child ended, as waitpid reported it.
class ChildEnd {
 public:
  static ChildEnd from_wait_status(int wait_status);
  // waitpid failed (ECHILD: a host that ignores SIGCHLD has the kernel
  // reap its children): how the child ended is unknown.
  static ChildEnd unknown(int wait_errno);

  // The status it passed to exit, when it exited.
  std::optional<int> exit_status() const;
  // The signal that killed it, when one did.
  std::optional<int> signal() const;
  // The errno of a failed wait, else 0.
  int wait_error() const { return wait_error_; }

  // "exited with status 3", "killed by signal 11 (SIGSEGV)",
  // "ended with wait status N", "could not be waited for (No child
  // processes)".
  std::string describe() const;

 private:
  int wait_status_ = 0;
  int wait_error_ = 0;
};

// Which way the channel between parent and child goes.
enum class ChildChannel {
  from_child,  // a pipe: the child writes, the parent reads
  both_ways,   // a socket pair: messages go either way
};

// Both ends of a channel, the child's too, write and read with these.
// Sends all of `text` on a socket; false when the other side is gone
// (never SIGPIPE).
bool send_all(int socket_fd, std::string_view text);
// Appends what `fd` has to read, blocking until there is some; false at the
// end of the stream or on an error.
bool read_some(int fd, std::string& into);

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Holds no child.
  ChildProcess() = default;
  // A child still held is killed and reaped.
  ~ChildProcess();
  // Moves only (so copies are deleted): one owner reaps the child.
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;

  // Forks; the child runs `child_main` with its end of the channel, then
  // leaves with _exit(0) (or with kChildMainThrew when it throws: an
  // exception must not unwind into the parent's frames copied into the
  // child). Buffered output is flushed first, or the child would write it
  // again. `parent_death_signal` is what the child gets when the parent
  // dies: SIGKILL, or a signal it handles to clean up first. Throws
  // std::system_error when the channel or the fork fails ("fork: ...").
  static ChildProcess fork(
      ChildChannel channel,
      const std::function<void(int channel_fd)>& child_main,
      int parent_death_signal = SIGKILL);

  // Starts a program with posix_spawn (no fork of this process, so safe in
  // a process with threads): argv[0] is its path, searched in PATH when it
  // has no slash; no shell; stdin is /dev/null, stdout and stderr go into
  // the channel, interleaved; `working_directory` empty: the caller's.
  // Throws std::system_error when it cannot start ("cannot run <program>:
  // ..."), std::invalid_argument for an empty argv.
  static ChildProcess spawn(const std::vector<std::string>& argv,
                            const std::string& working_directory);

  // Whether this holds a child not reaped yet (it may have exited).
  bool has_child() const { return pid_ >= 0; }
  // The parent's end of the channel, or -1 once closed.
  int channel_fd() const { return channel_.get(); }

  // send_all and read_some (below) on the parent's end.
  bool send(std::string_view text) const {
    return send_all(channel_.get(), text);
  }
  bool read_some(std::string& into) const {
    return detail::read_some(channel_.get(), into);
  }
  // Waits until the channel is readable (data or its end): true, or false
  // once `deadline` passes first.
  bool wait_readable(Clock::time_point deadline) const;
  void close_channel();

  void kill() const;  // SIGKILL
  // Waits for the child to end.
  ChildEnd reap();
  // Waits up to `grace` for the child to end, then kills it.
  ChildEnd reap_within(Clock::duration grace);

  static constexpr int kChildMainThrew = 70;  // EX_SOFTWARE

 private:
  ChildProcess(pid_t pid, FileDescriptor channel)
      : pid_(pid), channel_(std::move(channel)) {}
  void release();

  pid_t pid_ = -1;
  FileDescriptor channel_{-1};
};

// Writes out what iostreams and stdio hold buffered: before a fork (the
// child would write it again) and before a child tells its parent it is
// done with something (its output then comes first).
void flush_buffered_output();

// Takes the first whole line (without its newline) out of `buffer`, or
// std::nullopt while `buffer` holds none: the children's protocols are one
// message a line.
std::optional<std::string> take_line(std::string& buffer);

}  // namespace jitwarm::detail
