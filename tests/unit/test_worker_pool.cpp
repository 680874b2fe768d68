// Tests of core/src/worker_pool: work items run in worker processes;
// a crash or a hang ends only its own item, the run goes on, and results
// come back in item order.
#include <doctest/doctest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker_pool.hpp"

namespace jc = jitwarm::detail;

namespace {

// Item 1 crashes, item 2 hangs, item 3 throws, item 4 asks to be replaced;
// every other item reports its number and the worker's pid.
jc::WorkerSetup misbehaving_workers() {
  return []() -> jc::ItemRunner {
    return [](std::size_t item) -> jc::ItemOutcome {
      switch (item) {
        case 1: ::raise(SIGSEGV); break;
        case 2:
          for (;;) ::pause();
        case 3: throw std::runtime_error("kernel refused the arguments");
        default: break;
      }
      return {{{"item", item}, {"pid", ::getpid()}}, item == 4};
    };
  };
}

}  // namespace

TEST_CASE(
    "given a crashing, a hanging and a throwing item, then each is reported as "
    "such and the other items complete") {
  for (const unsigned jobs : {1u, 2u}) {
    CAPTURE(jobs);
    std::size_t ended = 0;
    const std::vector<jc::ItemEnd> ends =
        jc::run_isolated(8, misbehaving_workers(), {jobs, 1.0, 30.0, "case"},
                         [&](const jc::ItemEnd&) { ++ended; });
    CHECK(ended == 8);
    REQUIRE(ends.size() == 8);
    for (std::size_t i = 0; i < ends.size(); ++i) CHECK(ends[i].item == i);
    CHECK(ends[1].kind == jc::ItemEndKind::crashed);
    CHECK(ends[1].detail.find("killed by signal 11") != std::string::npos);
    CHECK(ends[1].detail.find("during the case") != std::string::npos);
    CHECK(ends[2].kind == jc::ItemEndKind::timed_out);
    CHECK(ends[2].seconds >= 1.0);
    CHECK(ends[3].kind == jc::ItemEndKind::failed);
    CHECK(ends[3].detail == "kernel refused the arguments");
    for (const std::size_t i : {0u, 4u, 5u, 6u, 7u}) {
      CAPTURE(i);
      REQUIRE(ends[i].kind == jc::ItemEndKind::completed);
      CHECK(ends[i].result.at("item").get<std::size_t>() == i);
      CHECK(ends[i].result.at("pid").get<int>() != ::getpid());
    }
  }
}

TEST_CASE(
    "given a worker that asks to be replaced, then the next item runs in a new "
    "process") {
  const std::vector<jc::ItemEnd> ends = jc::run_isolated(
      2,
      []() -> jc::ItemRunner {
        return [](std::size_t item) -> jc::ItemOutcome {
          return {{{"pid", ::getpid()}}, /*replace_worker=*/item == 0};
        };
      },
      {1, 10.0, 30.0});
  REQUIRE(ends.size() == 2);
  CHECK(ends[0].result.at("pid") != ends[1].result.at("pid"));
}

TEST_CASE("given one worker and many items, then one process runs them all") {
  const std::vector<jc::ItemEnd> ends =
      jc::run_isolated(5,
                       []() -> jc::ItemRunner {
                         return [](std::size_t) -> jc::ItemOutcome {
                           return {{{"pid", ::getpid()}}, false};
                         };
                       },
                       {1, 10.0, 30.0});
  for (const jc::ItemEnd& end : ends) {
    CHECK(end.result.at("pid") == ends.front().result.at("pid"));
  }
}

TEST_CASE(
    "given a worker whose setup fails, then the item it was given fails with "
    "the reason and a new worker takes the next") {
  // The first worker's setup finds no marker file, makes it, and throws;
  // the next worker's setup finds it and succeeds.
  char marker[] = "/tmp/jitwarm-conformance-setup-XXXXXX";
  const int fd = ::mkstemp(marker);
  REQUIRE(fd >= 0);
  ::close(fd);
  ::unlink(marker);
  const std::string path = marker;
  const std::vector<jc::ItemEnd> ends =
      jc::run_isolated(2,
                       [path]() -> jc::ItemRunner {
                         if (::access(path.c_str(), F_OK) != 0) {
                           std::ofstream(path) << "set up once\n";
                           throw std::runtime_error("no device");
                         }
                         return [](std::size_t) -> jc::ItemOutcome {
                           return {{{"ok", true}}, false};
                         };
                       },
                       {1, 10.0, 30.0});
  ::unlink(path.c_str());
  REQUIRE(ends.size() == 2);
  CHECK(ends[0].kind == jc::ItemEndKind::failed);
  CHECK(ends[0].detail == "worker setup failed: no device");
  CHECK(ends[1].kind == jc::ItemEndKind::completed);
}

TEST_CASE(
    "given run_in_child, then it returns the child's JSON, and reports a crash "
    "as an error") {
  CHECK(jc::run_in_child(
            [] {
              return nlohmann::json{{"answer", 42}};
            },
            10)
            .at("answer") == 42);
  CHECK_THROWS_WITH_AS(jc::run_in_child(
                           []() -> nlohmann::json {
                             ::raise(SIGABRT);
                             return nullptr;
                           },
                           10),
                       doctest::Contains("killed by signal 6"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(jc::run_in_child(
                           []() -> nlohmann::json {
                             throw std::runtime_error("plugins rejected");
                           },
                           10),
                       "plugins rejected", std::runtime_error);
}

namespace {

// Hands out 10, 20 and 30, then, once it has heard of all three ends, 40:
// what goes next may depend on what ended.
class LearningSchedule final : public jc::ItemSchedule {
 public:
  std::optional<std::size_t> next() override {
    if (handed_ < 3) return 10 * ++handed_;
    if (handed_ == 3 && heard_.size() == 3) return 10 * ++handed_;
    return std::nullopt;
  }
  void ended(const jc::ItemEnd& end) override { heard_.push_back(end.item); }
  std::vector<std::size_t> heard_;

 private:
  std::size_t handed_ = 0;
};

}  // namespace

TEST_CASE(
    "given a schedule, then the pool runs the items it hands out, tells it "
    "of each end before on_end, and returns the ends in the order they "
    "ended") {
  LearningSchedule schedule;
  std::vector<std::size_t> seen_by_on_end;
  const std::vector<jc::ItemEnd> ends = jc::run_isolated(
      schedule,
      []() -> jc::ItemRunner {
        return [](std::size_t item) -> jc::ItemOutcome {
          return {{{"item", item}}, false};
        };
      },
      {1, 30.0, 30.0, "item"},
      [&](const jc::ItemEnd& end) {
        // The schedule heard of this end already.
        CHECK(schedule.heard_.back() == end.item);
        seen_by_on_end.push_back(end.item);
      });
  // One worker: 10, 20, 30 in turn; 40 once all three had ended.
  REQUIRE(ends.size() == 4);
  CHECK(seen_by_on_end == std::vector<std::size_t>{10, 20, 30, 40});
  for (std::size_t i = 0; i < ends.size(); ++i) {
    CAPTURE(i);
    CHECK(ends[i].item == 10 * (i + 1));
    CHECK(ends[i].kind == jc::ItemEndKind::completed);
    CHECK(ends[i].result.at("item").get<std::size_t>() == ends[i].item);
  }
}
