// worker_pool.cpp — worker processes, their line protocol and the parent's
// watch over them (see worker_pool.hpp).
//
// Protocol, one line per message over a socket pair:
//   parent -> worker  "<item>"            run this item
//                     "quit"              exit
//   worker -> parent  "start <item>"      the item began (after setup)
//                     "done <0|1> <json>" its result; 1: replace me
//                     "error <json>"      it threw (a JSON string)
// JSON text never holds a raw newline, so a line is always one message.
#include "worker_pool.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>

namespace jitwarm::detail {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(seconds));
}

// Sends all of `text`; false when the other side is gone. MSG_NOSIGNAL: a
// dead peer must not raise SIGPIPE in either process.
bool send_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t sent = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

// Reads lines from a blocking descriptor.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  std::optional<std::string> next() {
    for (;;) {
      if (const auto newline = buffer_.find('\n');
          newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      char chunk[4096];
      const ssize_t got = ::read(fd_, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(got));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    return fmt::format("killed by signal {} ({})", signal_number,
                       strsignal(signal_number));
  }
  if (WIFEXITED(status)) {
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  }
  return fmt::format("ended with wait status {}", status);
}

// Waits for a child, killing it if it has not exited within `grace`.
int reap(pid_t pid, Clock::duration grace) {
  const auto deadline = Clock::now() + grace;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return 0;
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    ::usleep(1000);
  }
}

// Before fork: buffered output would otherwise be written twice.
void flush_output() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

// One line of JSON. Text from plugins (messages, logs) is not always valid
// UTF-8: invalid bytes become U+FFFD instead of failing the result.
std::string json_line(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The worker's side: never returns.
[[noreturn]] void worker_main(int fd, pid_t parent, const WorkerSetup& setup,
                              int parent_death_signal) {
  // Die with the parent, so a killed run leaves no workers behind.
  ::prctl(PR_SET_PDEATHSIG, parent_death_signal);
  if (::getppid() != parent) ::_exit(0);
  // A crashing kernel must end the worker by its signal, so the parent can
  // name it: drop the handlers the host process installed (a test
  // framework's, a sanitizer's) and let nothing stay blocked.
  for (const int crash_signal :
       {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) {
    ::signal(crash_signal, SIG_DFL);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ItemRunner runner;
  std::string setup_error;
  try {
    runner = setup();
  } catch (const std::exception& e) {
    setup_error = fmt::format("worker setup failed: {}", e.what());
  } catch (...) {
    setup_error = "worker setup failed with an unknown exception";
  }
  LineReader reader(fd);
  while (const std::optional<std::string> line = reader.next()) {
    if (*line == "quit") break;
    const std::size_t item = std::stoul(*line);
    if (!send_all(fd, fmt::format("start {}\n", item))) break;
    std::string reply;
    if (!setup_error.empty()) {
      reply = "error " + json_line(setup_error) + "\n";
    } else {
      try {
        const ItemOutcome outcome = runner(item);
        reply = fmt::format("done {} {}\n", outcome.replace_worker ? 1 : 0,
                            json_line(outcome.result));
      } catch (const std::exception& e) {
        reply = "error " + json_line(std::string(e.what())) + "\n";
      } catch (...) {
        reply = "error \"unknown exception\"\n";
      }
    }
    flush_output();
    if (!send_all(fd, reply)) break;
    if (!setup_error.empty()) break;  // a new worker may set up better
  }
  flush_output();
  // _exit: no static destructors of the parent's objects, no plugin or
  // driver teardown racing the parent.
  ::_exit(0);
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
  std::string inbox;
  std::optional<std::size_t> item;  // in flight
  bool started = false;             // "start" received for it
  bool first_item = true;
  Clock::time_point item_start;
  Clock::time_point deadline;
};

// Items 0, 1, ... count - 1, in that order.
class InOrder final : public ItemSchedule {
 public:
  explicit InOrder(std::size_t count) : count_(count) {}
  std::optional<std::size_t> next() override {
    if (next_ == count_) return std::nullopt;
    return next_++;
  }

 private:
  std::size_t count_;
  std::size_t next_ = 0;
};

class Supervisor {
 public:
  Supervisor(ItemSchedule& schedule, const WorkerSetup& setup,
             const IsolationOptions& options,
             const std::function<void(const ItemEnd&)>& on_end)
      : schedule_(schedule),
        setup_(setup),
        options_(options),
        on_end_(on_end) {}

  // The ends, in the order the items ended.
  std::vector<ItemEnd> run() {
    workers_.resize(std::max(1u, options_.jobs));
    for (Worker& worker : workers_) {
      const std::optional<std::size_t> item = schedule_.next();
      if (!item) break;
      spawn(worker);
      assign(worker, *item);
    }
    while (std::any_of(workers_.begin(), workers_.end(),
                       [](const Worker& w) { return w.item.has_value(); })) {
      wait_for_events();
    }
    for (Worker& worker : workers_) retire(worker);
    return std::move(ends_);
  }

 private:
  void spawn(Worker& worker) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
      throw std::runtime_error(
          fmt::format("socketpair failed: {}", std::strerror(errno)));
    }
    flush_output();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(pair[0]);
      ::close(pair[1]);
      throw std::runtime_error(
          fmt::format("fork failed: {}", std::strerror(errno)));
    }
    if (pid == 0) {
      ::close(pair[0]);
      // Other workers' sockets belong to the parent only.
      for (const Worker& other : workers_) {
        if (other.fd >= 0) ::close(other.fd);
      }
      worker_main(pair[1], parent, setup_, options_.parent_death_signal);
    }
    ::close(pair[1]);
    worker = Worker{};
    worker.pid = pid;
    worker.fd = pair[0];
  }

  // The schedule's next item to this worker, or its retirement.
  void assign_next(Worker& worker) {
    if (const std::optional<std::size_t> item = schedule_.next()) {
      assign(worker, *item);
    } else {
      retire(worker);
    }
  }

  void assign(Worker& worker, std::size_t item) {
    worker.item = item;
    worker.started = false;
    worker.item_start = Clock::now();
    const double allowance =
        options_.item_timeout_seconds +
        (worker.first_item ? options_.setup_allowance_seconds : 0);
    worker.deadline = worker.item_start + to_duration(allowance);
    worker.first_item = false;
    if (!send_all(worker.fd, fmt::format("{}\n", item))) {
      // Gone before it took the item: the read side will see the EOF and
      // report it as a crash of this item.
    }
  }

  void retire(Worker& worker) {
    if (worker.pid < 0) return;
    send_all(worker.fd, "quit\n");
    ::close(worker.fd);
    reap(worker.pid, std::chrono::seconds(5));
    worker.pid = -1;
    worker.fd = -1;
  }

  void finish(Worker& worker, ItemEndKind kind, nlohmann::json result,
              std::string detail) {
    ItemEnd end;
    end.item = *worker.item;
    end.kind = kind;
    end.result = std::move(result);
    end.detail = std::move(detail);
    end.seconds = seconds_between(worker.item_start, Clock::now());
    worker.item.reset();
    schedule_.ended(end);
    if (on_end_) on_end_(end);
    ends_.push_back(std::move(end));
  }

  // Replaces a worker (after a crash, a timeout or on request) and gives
  // the new one the next item, if any.
  void replace(Worker& worker) {
    const std::optional<std::size_t> item = schedule_.next();
    if (!item) {
      worker.pid = -1;
      worker.fd = -1;
      return;
    }
    spawn(worker);
    assign(worker, *item);
  }

  void on_worker_gone(Worker& worker) {
    ::close(worker.fd);
    const int status = reap(worker.pid, std::chrono::seconds(5));
    if (worker.item) {
      finish(worker, ItemEndKind::crashed, nullptr,
             fmt::format("the worker process {} {}", describe_exit(status),
                         worker.started
                             ? fmt::format("during the {}", options_.item_noun)
                             : fmt::format("before the {} started (in its "
                                           "setup)",
                                           options_.item_noun)));
    }
    worker.pid = -1;
    worker.fd = -1;
    replace(worker);
  }

  void on_line(Worker& worker, const std::string& line) {
    if (line.rfind("start ", 0) == 0) {
      // Setup is over: from now on the item's own timeout applies.
      worker.started = true;
      worker.item_start = Clock::now();
      worker.deadline =
          worker.item_start + to_duration(options_.item_timeout_seconds);
      return;
    }
    if (!worker.item) return;  // a message for nothing in flight: ignore
    if (line.rfind("done ", 0) == 0 && line.size() >= 7) {
      const bool replace_me = line[5] == '1';
      nlohmann::json result = nlohmann::json::parse(line.substr(7), nullptr,
                                                    /*allow_exceptions=*/false);
      if (result.is_discarded()) {
        finish(worker, ItemEndKind::failed, nullptr,
               "the worker sent a result that is not JSON");
      } else {
        finish(worker, ItemEndKind::completed, std::move(result), "");
      }
      if (replace_me) {
        retire(worker);
        replace(worker);
      } else {
        assign_next(worker);
      }
      return;
    }
    if (line.rfind("error ", 0) == 0) {
      const nlohmann::json text = nlohmann::json::parse(
          line.substr(6), nullptr, /*allow_exceptions=*/false);
      finish(worker, ItemEndKind::failed, nullptr,
             text.is_string() ? text.get<std::string>() : line.substr(6));
      // The worker may be broken (a failed setup exits on its own): start
      // afresh for the next item.
      retire(worker);
      replace(worker);
      return;
    }
  }

  void wait_for_events() {
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    auto earliest = Clock::time_point::max();
    for (Worker& worker : workers_) {
      if (!worker.item) continue;
      fds.push_back(pollfd{worker.fd, POLLIN, 0});
      owners.push_back(&worker);
      earliest = std::min(earliest, worker.deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        earliest - Clock::now());
    const int timeout_ms =
        static_cast<int>(std::clamp<int64_t>(wait.count() + 1, 0, 1000));
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      throw std::runtime_error(
          fmt::format("poll failed: {}", std::strerror(errno)));
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      Worker& worker = *owners[i];
      if (fds[i].revents == 0 || worker.fd != fds[i].fd) continue;
      char chunk[65536];
      const ssize_t got = ::read(worker.fd, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        on_worker_gone(worker);
        continue;
      }
      worker.inbox.append(chunk, static_cast<std::size_t>(got));
      std::size_t newline;
      while (worker.pid >= 0 &&
             (newline = worker.inbox.find('\n')) != std::string::npos) {
        const std::string line = worker.inbox.substr(0, newline);
        worker.inbox.erase(0, newline + 1);
        const int fd_before = worker.fd;
        on_line(worker, line);
        // A replaced worker starts with an empty inbox.
        if (worker.fd != fd_before) break;
      }
    }
    const auto now = Clock::now();
    for (Worker& worker : workers_) {
      if (!worker.item || now < worker.deadline) continue;
      ::kill(worker.pid, SIGKILL);
      ::close(worker.fd);
      reap(worker.pid, std::chrono::seconds(5));
      const double limit = worker.started
                               ? options_.item_timeout_seconds
                               : options_.item_timeout_seconds +
                                     options_.setup_allowance_seconds;
      finish(worker, ItemEndKind::timed_out, nullptr,
             fmt::format(
                 "ran past the {:g} s timeout{}; its worker was killed", limit,
                 worker.started ? "" : " (the worker never started it)"));
      worker.pid = -1;
      worker.fd = -1;
      replace(worker);
    }
  }

  ItemSchedule& schedule_;
  const WorkerSetup& setup_;
  const IsolationOptions& options_;
  const std::function<void(const ItemEnd&)>& on_end_;
  std::vector<Worker> workers_;
  std::vector<ItemEnd> ends_;
};

}  // namespace

std::vector<ItemEnd> run_isolated(
    std::size_t count, const WorkerSetup& setup,
    const IsolationOptions& options,
    const std::function<void(const ItemEnd&)>& on_end) {
  InOrder in_order(count);
  std::vector<ItemEnd> ends = run_isolated(in_order, setup, options, on_end);
  std::sort(ends.begin(), ends.end(),
            [](const ItemEnd& a, const ItemEnd& b) { return a.item < b.item; });
  return ends;
}

std::vector<ItemEnd> run_isolated(
    ItemSchedule& schedule, const WorkerSetup& setup,
    const IsolationOptions& options,
    const std::function<void(const ItemEnd&)>& on_end) {
  Supervisor supervisor(schedule, setup, options, on_end);
  return supervisor.run();
}

nlohmann::json run_in_child(const std::function<nlohmann::json()>& work,
                            double timeout_seconds) {
  const std::vector<ItemEnd> ends = run_isolated(
      1,
      [&work]() -> ItemRunner {
        return [&work](std::size_t) { return ItemOutcome{work(), false}; };
      },
      IsolationOptions{1, timeout_seconds, 0, "work"});
  const ItemEnd& end = ends.front();
  switch (end.kind) {
    case ItemEndKind::completed: return end.result;
    case ItemEndKind::failed: throw std::runtime_error(end.detail);
    case ItemEndKind::crashed:
    case ItemEndKind::timed_out:
      throw std::runtime_error("the planning process " + end.detail);
  }
  throw std::logic_error("run_in_child: unknown end");
}

}  // namespace jitwarm::detail
