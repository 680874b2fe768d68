// warmup_schedule.hpp — which keys of a warmup compile next, and how many
// of them together: the warmup's groups dealt among its workers (threads or
// processes) by what their keys cost.
//
// A group is the keys of one implementation and target, compiled together
// in units of at most the group's batch limit (docs/warmup.md "Batches").
// What a key costs is not known before it compiles, and it differs 50-fold
// among the kernel set's kernels (docs/results/compile-throughput.md), so
// the schedule measures it as the warmup goes. A unit costs a fixed part
// (a compiler run: its set-up, the kernel's front end) plus a part per key;
// the fixed part is taken as the cheapest unit seen yet (every unit pays
// it), and each group's cost per key from its units' times less that.
// * First one key of every group, largest group first: each group's cost
//   per key is measured as early as can be, and a group of a few costly
//   keys does not start last (nor put them all in one unit unmeasured).
// * Then, each time a worker is free, a unit of the group whose keys cost
//   most (the longest first, as in LPT scheduling): its measured cost per
//   key, or for a group whose first key is still compiling, the mean of the
//   measured groups or the time that key has taken so far, whichever is
//   more. Ties go to the group with more work left.
// * Units shrink as the work left shrinks: a unit's estimated cost stays
//   within a (2 x workers)th of all the estimated work not yet handed out,
//   so the last units are small and no worker ends long after the others;
//   but a unit may always cost twice the fixed part, so the keys of a cheap
//   kernel stay batched (splitting them would only add compiler runs).
// One worker has nothing to balance: it takes whole batches, group by
// group.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace jitwarm::detail {

// Keys [first, first + count) of the schedule's key order, all of `group`.
struct WarmupUnit {
  std::size_t group = 0;
  std::size_t first = 0;
  std::size_t count = 0;
};

class WarmupSchedule {
 public:
  struct Group {
    std::vector<std::size_t> keys;  // the caller's key indices, in order
    std::size_t batch_limit = 1;    // keys per unit at most (>= 1)
  };

  // Seconds on a monotonic clock (a test's own, or steady_clock's).
  using Clock = std::function<double()>;

  WarmupSchedule(std::vector<Group> groups, unsigned workers, Clock clock = {});

  // The next unit to compile, or std::nullopt when every key was handed
  // out.
  std::optional<WarmupUnit> next();
  // A unit took `seconds` (compiled, failed or lost: its time counts).
  void finished(const WarmupUnit& unit, double seconds);

  // The caller's key indices of a unit, and of the whole schedule.
  std::span<const std::size_t> keys(const WarmupUnit& unit) const;
  std::span<const std::size_t> all_keys() const { return order_; }
  // How many workers it deals for (at least 1).
  unsigned workers() const { return workers_; }

  // A unit as one number and back (a worker process's item, decoded from
  // what the schedule had when the worker was forked: the key order and
  // group bounds never change). `unit` throws std::out_of_range for a
  // number that names no unit.
  std::size_t item(const WarmupUnit& unit) const;
  WarmupUnit unit(std::size_t item) const;

 private:
  struct GroupState {
    std::size_t offset = 0;  // of its keys in order_
    std::size_t size = 0;
    std::size_t handed_out = 0;
    std::size_t batch_limit = 1;
    std::size_t measured_units = 0;
    std::size_t measured_keys = 0;
    double measured_seconds = 0;
    double first_handed_out_at = 0;  // when its first unit went out
    std::size_t left() const { return size - handed_out; }
  };
  // Seconds per key beyond the fixed part: measured; else the mean of the
  // measured groups (1 before anything is measured: keys count alike), or
  // what its first unit has taken so far per key, whichever is more.
  double cost_per_key(const GroupState& group, double mean_measured,
                      double now) const;
  double measured_per_key(const GroupState& group) const;

  std::vector<std::size_t> order_;
  std::vector<GroupState> groups_;
  unsigned workers_;
  Clock clock_;
  std::size_t max_batch_ = 1;
  // The cheapest unit's seconds: a bound on what every unit pays.
  std::optional<double> fixed_seconds_;
};

}  // namespace jitwarm::detail
