// Tests of core/src/warmup_schedule: every key handed out once, in units
// of one group within its batch limit; one unit of every group first; then
// the group with the most estimated work; units shrinking towards the end.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "warmup_schedule.hpp"

namespace jc = jitwarm::detail;

namespace {

// Keys first, first + 1, ..., first + count - 1.
std::vector<std::size_t> key_range(std::size_t first, std::size_t count) {
  std::vector<std::size_t> keys(count);
  std::iota(keys.begin(), keys.end(), first);
  return keys;
}

// Every unit the schedule hands out, each finished at once at
// `seconds_per_key(group)` per key.
template <typename Cost>
std::vector<jc::WarmupUnit> drain(jc::WarmupSchedule& schedule,
                                  Cost seconds_per_key) {
  std::vector<jc::WarmupUnit> units;
  while (const auto unit = schedule.next()) {
    units.push_back(*unit);
    schedule.finished(
        *unit, seconds_per_key(unit->group) * static_cast<double>(unit->count));
  }
  return units;
}

}  // namespace

TEST_CASE(
    "given groups, then every key is handed out exactly once, each unit "
    "within one group and its batch limit") {
  for (const unsigned workers : {1u, 2u, 16u}) {
    CAPTURE(workers);
    jc::WarmupSchedule schedule(
        {{key_range(0, 54), 8}, {key_range(100, 3), 8}, {key_range(200, 5), 1}},
        workers);
    const auto units = drain(
        schedule, [](std::size_t group) { return group == 0 ? 0.1 : 0.01; });
    std::map<std::size_t, int> times;
    for (const jc::WarmupUnit& unit : units) {
      CAPTURE(unit.group);
      REQUIRE(unit.count >= 1);
      CHECK(unit.count <= (unit.group == 2 ? 1u : 8u));
      for (const std::size_t key : schedule.keys(unit)) {
        ++times[key];
        // Keys of group g are g*100 ...
        CHECK(key / 100 == unit.group);
      }
    }
    CHECK(times.size() == 62);
    for (const auto& [key, count] : times) {
      CAPTURE(key);
      CHECK(count == 1);
    }
    std::vector<std::size_t> all(schedule.all_keys().begin(),
                                 schedule.all_keys().end());
    CHECK(all.size() == 62);
  }
}

TEST_CASE("given one worker, then units are whole batches, group by group") {
  jc::WarmupSchedule schedule({{key_range(0, 3), 8}, {key_range(100, 20), 8}},
                              1);
  const auto units = drain(
      schedule, [](std::size_t group) { return group == 0 ? 0.01 : 0.5; });
  REQUIRE(units.size() == 4);
  CHECK(units[0].group == 0);
  CHECK(units[0].count == 3);
  CHECK(units[1].group == 1);
  CHECK(units[1].count == 8);
  CHECK(units[2].count == 8);
  CHECK(units[3].count == 4);
}

TEST_CASE(
    "given several workers, then one key of every group goes first, the "
    "largest group's first") {
  jc::WarmupSchedule schedule(
      {{key_range(0, 3), 8}, {key_range(100, 20), 8}, {key_range(200, 2), 8}},
      4);
  std::vector<jc::WarmupUnit> first;
  for (int i = 0; i < 3; ++i) {
    const auto unit = schedule.next();
    REQUIRE(unit);
    first.push_back(*unit);
  }
  CHECK(first[0].group == 1);
  CHECK(first[1].group == 0);
  CHECK(first[2].group == 2);
  for (const jc::WarmupUnit& unit : first) CHECK(unit.count == 1);
}

TEST_CASE(
    "given measured costs, then the costliest keys go first, and units "
    "shrink as the work left shrinks") {
  // Group 0: 40 cheap keys; group 1: 40 keys ten times as costly.
  jc::WarmupSchedule schedule({{key_range(0, 40), 8}, {key_range(100, 40), 8}},
                              4);
  // One key of each group first (equal sizes: the first group first).
  const auto probe0 = schedule.next();
  const auto probe1 = schedule.next();
  REQUIRE(probe0);
  REQUIRE(probe1);
  CHECK(probe0->group == 0);
  CHECK(probe1->group == 1);
  schedule.finished(*probe0, 0.01 * static_cast<double>(probe0->count));
  schedule.finished(*probe1, 0.1 * static_cast<double>(probe1->count));

  const std::vector<jc::WarmupUnit> rest = drain(
      schedule, [](std::size_t group) { return group == 0 ? 0.01 : 0.1; });
  // Every costly key before any cheap one; the costly units larger while
  // much is left, a single key at the end (a unit stays within an eighth of
  // the work left).
  std::vector<std::size_t> costly;
  bool cheap_seen = false;
  for (const jc::WarmupUnit& unit : rest) {
    if (unit.group == 0) {
      cheap_seen = true;
      continue;
    }
    CHECK_FALSE(cheap_seen);
    costly.push_back(unit.count);
  }
  REQUIRE(costly.size() > 2);
  CHECK(costly.front() > 1);
  CHECK(costly.back() == 1);
  CHECK(std::is_sorted(costly.rbegin(), costly.rend()));
  CHECK(rest.back().group == 0);
}

TEST_CASE(
    "given a group whose first key is still compiling, then the time it has "
    "taken so far counts as its cost") {
  double now = 0;
  jc::WarmupSchedule schedule({{key_range(0, 10), 8}, {key_range(100, 2), 8}},
                              3, [&now]() { return now; });
  const auto probe0 = schedule.next();
  const auto probe1 = schedule.next();
  REQUIRE(probe0);
  REQUIRE(probe1);
  CHECK(probe1->group == 1);
  now = 0.1;
  schedule.finished(*probe0, 0.1);
  // Group 1's key has compiled for as long as group 0's took: a tie, which
  // the group with more work left wins.
  const auto third = schedule.next();
  REQUIRE(third);
  CHECK(third->group == 0);
  // Two seconds on, group 1's first key still compiles: its other key is
  // the costliest there is.
  now = 2.0;
  const auto fourth = schedule.next();
  REQUIRE(fourth);
  CHECK(fourth->group == 1);
  CHECK(fourth->count == 1);
}

TEST_CASE(
    "given a kernel whose keys cost little next to a compiler run, then its "
    "keys stay batched to the end") {
  // Every unit pays 50 ms; a key of group 0 adds 5 ms, of group 1 200 ms.
  jc::WarmupSchedule schedule({{key_range(0, 40), 8}, {key_range(100, 8), 8}},
                              4);
  std::vector<jc::WarmupUnit> cheap;
  while (const auto unit = schedule.next()) {
    const double per_key = unit->group == 0 ? 0.005 : 0.2;
    schedule.finished(*unit, 0.05 + per_key * static_cast<double>(unit->count));
    if (unit->group == 0) cheap.push_back(*unit);
  }
  REQUIRE(cheap.size() > 2);
  CHECK(cheap.front().count == 1);  // its first key, to measure it
  std::size_t left = 39;
  for (std::size_t u = 1; u < cheap.size(); ++u) {
    CAPTURE(u);
    CHECK(cheap[u].count == std::min<std::size_t>(8, left));
    left -= cheap[u].count;
  }
}

TEST_CASE(
    "given a unit, then its item number decodes to the same unit, and a "
    "number naming no unit is refused") {
  jc::WarmupSchedule schedule({{key_range(0, 10), 4}, {key_range(50, 3), 1}},
                              2);
  while (const auto unit = schedule.next()) {
    const jc::WarmupUnit back = schedule.unit(schedule.item(*unit));
    CHECK(back.group == unit->group);
    CHECK(back.first == unit->first);
    CHECK(back.count == unit->count);
    schedule.finished(*unit, 0.01);
  }
  // Positions 8..9 are group 0's last two keys: three keys from 8 would
  // cross into group 1; group 1 (positions 10..12) takes one at a time;
  // position 13 is past the end.
  CHECK_THROWS_AS(schedule.unit(8 * 4 + 2), std::out_of_range);
  CHECK_THROWS_AS(schedule.unit(10 * 4 + 1), std::out_of_range);
  CHECK_THROWS_AS(schedule.unit(13 * 4), std::out_of_range);
  CHECK(schedule.unit(10 * 4).group == 1);
}

TEST_CASE("given keys that cost nothing (cached), then units stay whole") {
  jc::WarmupSchedule schedule({{key_range(0, 32), 8}}, 16);
  const auto first = schedule.next();
  REQUIRE(first);
  schedule.finished(*first, 0.0);
  while (const auto unit = schedule.next()) {
    CHECK(unit->count == std::min<std::size_t>(8, 32 - unit->first));
    schedule.finished(*unit, 0.0);
  }
}
