#include "warmup_workers.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "in_flight_files.hpp"

namespace jitwarm::cli {
namespace {

// Exit codes of a worker that stopped on its own.
constexpr int kWorkerDone = 0;
constexpr int kWorkerOrphaned = 70;    // its parent was gone at start
constexpr int kWorkerParentGone = 71;  // its parent stopped reading
constexpr int kWorkerCrashed = 72;     // an exception escaped

extern "C" void stop_worker(int signal_number) {
  detail::remove_in_flight_files();
  // Die of the same signal, so the parent (if any) sees why.
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

bool write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // EPIPE: the parent is gone
    written += static_cast<std::size_t>(n);
  }
  return true;
}

// One line per key: "<index> <0|1 compiled> <0|1 failed> <error>".
std::string result_line(std::size_t index, const WarmupKeyResult& r) {
  std::string error = r.error;
  for (char& c : error) {
    if (c == '\n') c = ' ';
  }
  return fmt::format("{} {} {} {}\n", index, r.compiled ? 1 : 0,
                     r.failed ? 1 : 0, error);
}

[[noreturn]] void run_worker(Runtime& runtime,
                             const std::vector<CompileKey>& keys,
                             unsigned worker, unsigned jobs, int out,
                             pid_t parent) {
  struct sigaction stop {};
  stop.sa_handler = stop_worker;
  sigemptyset(&stop.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &stop, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a gone parent is an EPIPE, seen below
  // SIGTERM when the parent dies; it may have died before this line.
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
    _exit(kWorkerOrphaned);
  try {
    WarmupOptions options;  // one key at a time: per-key progress
    for (std::size_t i = worker; i < keys.size(); i += jobs) {
      WarmupKeyResult r;
      try {
        r = runtime.warmup_keys({keys[i]}, options).keys.at(0);
      } catch (const std::exception& e) {
        r.failed = true;
        r.error = e.what();
      }
      if (!write_all(out, result_line(i, r))) _exit(kWorkerParentGone);
    }
  } catch (...) {
    _exit(kWorkerCrashed);
  }
  _exit(kWorkerDone);
}

struct Worker {
  pid_t pid = -1;
  int from = -1;       // read end of its result pipe; -1 once at EOF
  std::string buffer;  // an incomplete line
  int status = 0;
  bool reaped = false;
};

// The parent's side: every worker is reaped, and stopped first if the
// parent leaves early.
class WorkerSet {
 public:
  std::vector<Worker> workers;

  ~WorkerSet() {
    for (Worker& w : workers) {
      if (w.from >= 0) ::close(w.from);
      if (!w.reaped && w.pid > 0) ::kill(w.pid, SIGTERM);
    }
    reap();
  }
  void reap() {
    for (Worker& w : workers) {
      if (w.reaped || w.pid <= 0) continue;
      while (::waitpid(w.pid, &w.status, 0) < 0 && errno == EINTR) {
      }
      w.reaped = true;
    }
  }
};

std::string death_of(const Worker& w) {
  if (WIFSIGNALED(w.status)) {
    return fmt::format(
        "worker process {} was killed by signal {} ({}) "
        "before reporting this key",
        w.pid, WTERMSIG(w.status), strsignal(WTERMSIG(w.status)));
  }
  return fmt::format(
      "worker process {} exited with status {} before reporting this key",
      w.pid, WIFEXITED(w.status) ? WEXITSTATUS(w.status) : -1);
}

}  // namespace

WarmupResult warm_in_processes(Runtime& runtime,
                               const std::vector<CompileKey>& keys,
                               unsigned jobs, const WorkerProgress& progress) {
  jobs = std::max(1u, jobs);
  WarmupResult result;
  result.keys.resize(keys.size());
  std::vector<bool> reported(keys.size(), false);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    result.keys[i].key_text = keys[i].text();
    result.keys[i].key_hash = keys[i].hash();
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t parent = getpid();
  WorkerSet set;
  std::fflush(nullptr);  // nothing buffered is written twice
  for (unsigned w = 0; w < jobs; ++w) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw Error(JW_ERROR_IO,
                  fmt::format("pipe failed: {}", std::strerror(errno)));
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw Error(JW_ERROR_IO,
                  fmt::format("fork failed: {}", std::strerror(errno)));
    }
    if (pid == 0) {
      // Only the parent reads results: if it dies, writes fail.
      ::close(fds[0]);
      for (const Worker& other : set.workers) ::close(other.from);
      run_worker(runtime, keys, w, jobs, fds[1], parent);
    }
    ::close(fds[1]);
    set.workers.push_back(Worker{pid, fds[0], {}, 0, false});
  }

  std::size_t done = 0;
  std::size_t open_pipes = set.workers.size();
  std::vector<pollfd> polled;
  std::vector<Worker*> polled_workers;
  while (open_pipes > 0) {
    polled.clear();
    polled_workers.clear();
    for (Worker& w : set.workers) {
      if (w.from < 0) continue;
      polled.push_back(pollfd{w.from, POLLIN, 0});
      polled_workers.push_back(&w);
    }
    if (::poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(JW_ERROR_IO,
                  fmt::format("poll failed: {}", std::strerror(errno)));
    }
    for (std::size_t p = 0; p < polled.size(); ++p) {
      if (polled[p].revents == 0) continue;
      Worker& w = *polled_workers[p];
      char chunk[4096];
      const ssize_t n = ::read(w.from, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // EOF: the worker finished or died
        ::close(w.from);
        w.from = -1;
        --open_pipes;
        continue;
      }
      w.buffer.append(chunk, static_cast<std::size_t>(n));
      std::size_t newline;
      while ((newline = w.buffer.find('\n')) != std::string::npos) {
        const std::string line = w.buffer.substr(0, newline);
        w.buffer.erase(0, newline + 1);
        std::size_t index = 0;
        int compiled = 0, failed = 0, consumed = 0;
        if (std::sscanf(line.c_str(), "%zu %d %d %n", &index, &compiled,
                        &failed, &consumed) < 3 ||
            index >= keys.size() || reported[index]) {
          continue;
        }
        WarmupKeyResult& r = result.keys[index];
        r.compiled = compiled != 0;
        r.failed = failed != 0;
        r.error = line.substr(static_cast<std::size_t>(consumed));
        while (!r.error.empty() && r.error.back() == ' ') r.error.pop_back();
        reported[index] = true;
        if (progress) progress(++done, keys.size(), keys[index]);
      }
    }
  }
  set.reap();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (reported[i]) continue;
    result.keys[i].failed = true;
    result.keys[i].error = death_of(set.workers[i % jobs]);
  }
  result.count_outcomes();
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

}  // namespace jitwarm::cli
