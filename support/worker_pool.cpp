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
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "child_process.hpp"

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

// Reads lines from a blocking descriptor.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  std::optional<std::string> next() {
    for (;;) {
      if (std::optional<std::string> line = take_line(buffer_)) return line;
      if (!read_some(fd_, buffer_)) return std::nullopt;
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

// One line of JSON. Text from plugins (messages, logs) is not always valid
// UTF-8: invalid bytes become U+FFFD instead of failing the result.
std::string json_line(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The worker's side, in a child of the supervisor (child_process.hpp: it
// dies with the parent, so a killed run leaves no workers behind, and a
// crashing kernel ends it by its signal, which the parent names).
void worker_main(int fd, const WorkerSetup& setup) {
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
    flush_buffered_output();
    if (!send_all(fd, reply)) break;
    if (!setup_error.empty()) break;  // a new worker may set up better
  }
}

struct Worker {
  ChildProcess process;
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
    ChildProcess process = ChildProcess::fork(
        ChildChannel::both_ways,
        [this](int fd) {
          // Other workers' sockets belong to the parent only.
          for (const Worker& other : workers_) {
            if (other.process.channel_fd() >= 0) {
              ::close(other.process.channel_fd());
            }
          }
          worker_main(fd, setup_);
        },
        options_.parent_death_signal);
    worker = Worker{};
    worker.process = std::move(process);
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
    if (!worker.process.send(fmt::format("{}\n", item))) {
      // Gone before it took the item: the read side will see the EOF and
      // report it as a crash of this item.
    }
  }

  void retire(Worker& worker) {
    if (!worker.process.has_child()) return;
    worker.process.send("quit\n");
    worker.process.close_channel();
    worker.process.reap_within(std::chrono::seconds(5));
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
    if (!item) return;
    spawn(worker);
    assign(worker, *item);
  }

  void on_worker_gone(Worker& worker) {
    worker.process.close_channel();
    const ChildEnd end = worker.process.reap_within(std::chrono::seconds(5));
    if (worker.item) {
      finish(worker, ItemEndKind::crashed, nullptr,
             fmt::format("the worker process {} {}", end.describe(),
                         worker.started
                             ? fmt::format("during the {}", options_.item_noun)
                             : fmt::format("before the {} started (in its "
                                           "setup)",
                                           options_.item_noun)));
    }
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
      fds.push_back(pollfd{worker.process.channel_fd(), POLLIN, 0});
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
      if (fds[i].revents == 0 || worker.process.channel_fd() != fds[i].fd) {
        continue;
      }
      if (!worker.process.read_some(worker.inbox)) {
        on_worker_gone(worker);
        continue;
      }
      while (worker.process.has_child()) {
        const std::optional<std::string> line = take_line(worker.inbox);
        if (!line) break;
        const int fd_before = worker.process.channel_fd();
        on_line(worker, *line);
        // A replaced worker starts with an empty inbox.
        if (worker.process.channel_fd() != fd_before) break;
      }
    }
    const auto now = Clock::now();
    for (Worker& worker : workers_) {
      if (!worker.item || now < worker.deadline) continue;
      worker.process.kill();
      worker.process.close_channel();
      worker.process.reap_within(std::chrono::seconds(5));
      const double limit = worker.started
                               ? options_.item_timeout_seconds
                               : options_.item_timeout_seconds +
                                     options_.setup_allowance_seconds;
      finish(worker, ItemEndKind::timed_out, nullptr,
             fmt::format(
                 "ran past the {:g} s timeout{}; its worker was killed", limit,
                 worker.started ? "" : " (the worker never started it)"));
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
