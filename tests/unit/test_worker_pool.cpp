// Tests of core/src/worker_pool: work items run in worker processes;
// a crash or a hang ends only its own item, the run goes on, and results
// come back in item order.
#include <doctest/doctest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

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
