// child_process.cpp — starting, watching and reaping children (see
// child_process.hpp).
#include "child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <system_error>
#include <utility>

extern char** environ;

namespace jitwarm::detail {
namespace {

// `what` is a view so that naming it allocates nothing between the failed
// call and the read of its errno.
[[noreturn]] void throw_errno(int error, std::string_view what) {
  throw std::system_error(error, std::generic_category(), std::string(what));
}

// The two ends of a new channel, both close-on-exec (dup2 onto a spawned
// child's stdout clears it there only).
struct ChannelEnds {
  FileDescriptor parent;
  FileDescriptor child;
};

ChannelEnds open_channel(ChildChannel channel) {
  int fds[2];
  if (channel == ChildChannel::both_ways) {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw_errno(errno, "socketpair");
    }
  } else if (::pipe2(fds, O_CLOEXEC) != 0) {  // [0] reads, [1] writes
    throw_errno(errno, "pipe2");
  }
  return {FileDescriptor(fds[0]), FileDescriptor(fds[1])};
}

// A forked child's first steps (see the header's guarantees).
void become_supervised_child(pid_t parent, int parent_death_signal) {
  ::prctl(PR_SET_PDEATHSIG, parent_death_signal);
  // The parent may have died before prctl: then nothing would tell us.
  if (::getppid() != parent) ::_exit(0);
  for (const int crash_signal :
       {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) {
    ::signal(crash_signal, SIG_DFL);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

class SpawnFileActions {
 public:
  SpawnFileActions() { ::posix_spawn_file_actions_init(&actions_); }
  ~SpawnFileActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  SpawnFileActions(const SpawnFileActions&) = delete;
  SpawnFileActions& operator=(const SpawnFileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

int wait_blocking(pid_t pid, int& status) {
  for (;;) {
    if (::waitpid(pid, &status, 0) == pid) return 0;
    if (errno != EINTR) return errno;
  }
}

}  // namespace

ChildEnd ChildEnd::from_wait_status(int wait_status) {
  ChildEnd end;
  end.wait_status_ = wait_status;
  return end;
}

ChildEnd ChildEnd::unknown(int wait_errno) {
  ChildEnd end;
  end.wait_error_ = wait_errno;
  return end;
}

std::optional<int> ChildEnd::exit_status() const {
  if (wait_error_ != 0 || !WIFEXITED(wait_status_)) return std::nullopt;
  return WEXITSTATUS(wait_status_);
}

std::optional<int> ChildEnd::signal() const {
  if (wait_error_ != 0 || !WIFSIGNALED(wait_status_)) return std::nullopt;
  return WTERMSIG(wait_status_);
}

std::string ChildEnd::describe() const {
  if (wait_error_ != 0) {
    return fmt::format("could not be waited for ({})",
                       std::strerror(wait_error_));
  }
  if (const std::optional<int> signal_number = signal()) {
    // sigabbrev_np names the signal as the C headers do ("SEGV"), the same
    // on every glibc and locale, unlike strsignal's sentence.
    const char* abbreviation = sigabbrev_np(*signal_number);
    return abbreviation != nullptr
               ? fmt::format("killed by signal {} (SIG{})", *signal_number,
                             abbreviation)
               : fmt::format("killed by signal {}", *signal_number);
  }
  if (const std::optional<int> status = exit_status()) {
    return fmt::format("exited with status {}", *status);
  }
  return fmt::format("ended with wait status {}", wait_status_);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      channel_(std::move(other.channel_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    channel_ = std::move(other.channel_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  release();
}

void ChildProcess::release() {
  close_channel();
  if (has_child()) {
    kill();
    reap();
  }
}

ChildProcess ChildProcess::fork(
    ChildChannel channel, const std::function<void(int channel_fd)>& child_main,
    int parent_death_signal) {
  ChannelEnds ends = open_channel(channel);
  flush_buffered_output();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno(errno, "fork");
  if (pid == 0) {
    ends.parent.close();
    become_supervised_child(parent, parent_death_signal);
    try {
      child_main(ends.child.get());
    } catch (...) {
      ::_exit(kChildMainThrew);
    }
    // _exit: no static destructors of the parent's objects, no plugin or
    // driver teardown racing the parent.
    flush_buffered_output();
    ::_exit(0);
  }
  ends.child.close();
  return ChildProcess(pid, std::move(ends.parent));
}

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv,
                                 const std::string& working_directory) {
  if (argv.empty()) throw std::invalid_argument("no program to run");
  ChannelEnds ends = open_channel(ChildChannel::from_child);
  SpawnFileActions actions;
  ::posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY,
                                     0);
  // dup2 clears close-on-exec on the child's 1 and 2 only.
  ::posix_spawn_file_actions_adddup2(actions.get(), ends.child.get(), 1);
  ::posix_spawn_file_actions_adddup2(actions.get(), ends.child.get(), 2);
  if (!working_directory.empty()) {
    ::posix_spawn_file_actions_addchdir_np(actions.get(),
                                           working_directory.c_str());
  }
  std::vector<char*> arguments;
  for (const std::string& argument : argv) {
    arguments.push_back(const_cast<char*>(argument.c_str()));
  }
  arguments.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, argv[0].c_str(), actions.get(),
                                     nullptr, arguments.data(), environ);
  ends.child.close();  // the end of the stream once the child is done
  if (spawned != 0) throw_errno(spawned, "cannot run " + argv[0]);
  return ChildProcess(pid, std::move(ends.parent));
}

bool send_all(int socket_fd, std::string_view text) {
  while (!text.empty()) {
    // MSG_NOSIGNAL: a dead peer must not raise SIGPIPE in either process.
    const ssize_t sent =
        ::send(socket_fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

bool read_some(int fd, std::string& into) {
  char chunk[65536];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    into.append(chunk, static_cast<std::size_t>(got));
    return true;
  }
}

bool ChildProcess::wait_readable(Clock::time_point deadline) const {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd readable{channel_.get(), POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    // Ready, or poll failed: the read that follows reports it.
    return true;
  }
}

void ChildProcess::close_channel() {
  if (channel_.get() >= 0) channel_.close();
}

void ChildProcess::kill() const {
  if (has_child()) ::kill(pid_, SIGKILL);
}

ChildEnd ChildProcess::reap() {
  if (!has_child()) return ChildEnd::unknown(ECHILD);
  int status = 0;
  const int error = wait_blocking(std::exchange(pid_, -1), status);
  return error != 0 ? ChildEnd::unknown(error)
                    : ChildEnd::from_wait_status(status);
}

ChildEnd ChildProcess::reap_within(Clock::duration grace) {
  if (!has_child()) return ChildEnd::unknown(ECHILD);
  const auto deadline = Clock::now() + grace;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      pid_ = -1;
      return ChildEnd::from_wait_status(status);
    }
    if (done < 0 && errno != EINTR) {
      const int error = errno;
      pid_ = -1;
      return ChildEnd::unknown(error);
    }
    if (Clock::now() >= deadline) {
      kill();
      return reap();
    }
    ::usleep(1000);
  }
}

void flush_buffered_output() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

std::optional<std::string> take_line(std::string& buffer) {
  const auto newline = buffer.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  std::string line = buffer.substr(0, newline);
  buffer.erase(0, newline + 1);
  return line;
}

}  // namespace jitwarm::detail
