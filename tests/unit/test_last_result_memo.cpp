// LastResultMemo (support/last_result_memo.hpp): a result comes back only for
// the key it was kept with, and readers racing a writer never take one key's
// result for another's (run under ThreadSanitizer too: scripts/run.sh).
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "last_result_memo.hpp"

using jitwarm::detail::LastResultMemo;
using jitwarm::detail::MemoKey;

TEST_CASE(
    "given a memo, then it returns what was kept for exactly that key, and "
    "nothing before anything is kept") {
  const LastResultMemo<8> memo;
  std::array<uint64_t, 2> result{};
  const std::array<uint64_t, 3> key{1, 2, 3};
  CHECK_FALSE(memo.recall(key, result));
  memo.remember(key, std::array<uint64_t, 2>{40, 41});
  REQUIRE(memo.recall(key, result));
  CHECK(result == std::array<uint64_t, 2>{40, 41});
  // Another word, a shorter or a longer key: nothing.
  CHECK_FALSE(memo.recall(std::array<uint64_t, 3>{1, 2, 4}, result));
  CHECK_FALSE(memo.recall(std::array<uint64_t, 2>{1, 2}, result));
  CHECK_FALSE(memo.recall(std::array<uint64_t, 4>{1, 2, 3, 0}, result));
  // An empty key is a key too.
  memo.remember({}, std::array<uint64_t, 2>{7, 8});
  REQUIRE(memo.recall({}, result));
  CHECK(result == std::array<uint64_t, 2>{7, 8});
  CHECK_FALSE(memo.recall(key, result));  // replaced
  // More than it holds is neither kept nor recalled.
  const std::array<uint64_t, 7> long_key{};
  memo.remember(long_key, std::array<uint64_t, 2>{1, 1});
  CHECK_FALSE(memo.recall(long_key, result));
  REQUIRE(memo.recall({}, result));  // the last kept one is still there
}

TEST_CASE(
    "given a caller's own comparison, then recall_matching shows it the kept "
    "key and returns the result only when it says the key matches") {
  const LastResultMemo<8> memo;
  memo.remember(std::array<uint64_t, 2>{5, 6}, std::array<uint64_t, 1>{99});
  std::array<uint64_t, 1> result{};
  std::vector<uint64_t> seen;
  CHECK(memo.recall_matching(
      [&](const MemoKey& kept) {
        for (std::size_t i = 0; i < kept.size(); ++i) seen.push_back(kept[i]);
        return true;
      },
      result));
  CHECK(seen == std::vector<uint64_t>{5, 6});
  CHECK(result[0] == 99);
  result[0] = 0;
  CHECK_FALSE(
      memo.recall_matching([](const MemoKey&) { return false; }, result));
}

TEST_CASE(
    "given writers keeping results of many keys and readers recalling them "
    "at once, then every result recalled is its key's") {
  // Each key's result is a function of the key, so a result recalled with
  // a key that is not its own is a torn read the memo let through. Each
  // writer waits, after a write, until some reader has recalled anything
  // (or the readers are done), so the readers also see the memo at rest;
  // the two writers still write over each other and over the readers.
  const LastResultMemo<16> memo;
  const auto result_of = [](uint64_t k) {
    return std::array<uint64_t, 4>{k * 3, k * 5, k * 7, ~k};
  };
  const auto key_of = [](uint64_t k) {
    return std::array<uint64_t, 6>{k, k + 1, k + 2, k, k, k};
  };
  std::atomic<bool> readers_done{false};
  std::atomic<uint64_t> recalled{0}, wrong{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (uint64_t i = 0; !readers_done.load(); ++i) {
        const uint64_t k = (i % 5) + 10 * static_cast<uint64_t>(w);
        const uint64_t seen = recalled.load();
        memo.remember(key_of(k), result_of(k));
        while (!readers_done.load() && recalled.load() == seen) {
          std::this_thread::yield();
        }
      }
    });
  }
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      std::array<uint64_t, 4> result{};
      // A count of tries, not a time: a loaded machine just takes longer.
      for (uint64_t i = 0; i < 20000; ++i) {
        const uint64_t k = (i % 5) + 10 * ((i / 5) % 2);
        if (memo.recall(key_of(k), result)) {
          recalled.fetch_add(1);
          if (result != result_of(k)) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : readers) t.join();
  readers_done = true;
  for (std::thread& t : writers) t.join();
  CHECK(wrong.load() == 0);
  CHECK(recalled.load() > 0);
}
