#include "warmup_schedule.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace jitwarm::detail {

WarmupSchedule::WarmupSchedule(std::vector<Group> groups, unsigned workers,
                               Clock clock)
    : workers_(std::max(1u, workers)), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = []() {
      return std::chrono::duration<double>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  for (Group& group : groups) {
    if (group.keys.empty()) continue;
    GroupState state;
    state.offset = order_.size();
    state.size = group.keys.size();
    state.batch_limit = std::max<std::size_t>(1, group.batch_limit);
    max_batch_ = std::max(max_batch_, state.batch_limit);
    order_.insert(order_.end(), group.keys.begin(), group.keys.end());
    groups_.push_back(state);
  }
}

double WarmupSchedule::measured_per_key(const GroupState& group) const {
  const double fixed = fixed_seconds_.value_or(0.0);
  return std::max(0.0, group.measured_seconds -
                           fixed * static_cast<double>(group.measured_units)) /
         static_cast<double>(group.measured_keys);
}

double WarmupSchedule::cost_per_key(const GroupState& group,
                                    double mean_measured, double now) const {
  if (group.measured_keys > 0) return measured_per_key(group);
  if (group.handed_out == 0) return mean_measured;
  // Its first unit is still compiling: it costs at least this much.
  const double so_far =
      (now - group.first_handed_out_at - fixed_seconds_.value_or(0.0)) /
      static_cast<double>(group.handed_out);
  return std::max(mean_measured, so_far);
}

std::optional<WarmupUnit> WarmupSchedule::next() {
  const double now = clock_();
  const double fixed = fixed_seconds_.value_or(0.0);
  double measured_sum = 0;
  std::size_t measured = 0;
  for (const GroupState& group : groups_) {
    if (group.measured_keys == 0) continue;
    measured_sum += measured_per_key(group);
    ++measured;
  }
  const double mean_measured =
      measured > 0 ? measured_sum / static_cast<double>(measured) : 1.0;
  std::vector<double> per_key(groups_.size());
  double work_left = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const GroupState& group = groups_[g];
    per_key[g] = cost_per_key(group, mean_measured, now);
    const std::size_t units_left =
        (group.left() + group.batch_limit - 1) / group.batch_limit;
    work_left += per_key[g] * static_cast<double>(group.left()) +
                 fixed * static_cast<double>(units_left);
  }
  const auto work_of = [&](std::size_t g) {
    return per_key[g] * static_cast<double>(groups_[g].left());
  };
  std::optional<std::size_t> chosen;
  bool first_of_group = false;
  if (workers_ == 1) {
    // Nothing to balance: group by group, in order.
    for (std::size_t g = 0; g < groups_.size() && !chosen; ++g) {
      if (groups_[g].left() > 0) chosen = g;
    }
  } else {
    // A group nothing was handed out of yet goes first, the largest first.
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const GroupState& group = groups_[g];
      if (group.handed_out == 0 &&
          (!chosen || group.size > groups_[*chosen].size)) {
        chosen = g;
        first_of_group = true;
      }
    }
    // Else the costliest keys first; of equal ones, the most work left.
    for (std::size_t g = 0; g < groups_.size() && !first_of_group; ++g) {
      if (groups_[g].left() == 0) continue;
      if (!chosen || per_key[g] > per_key[*chosen] ||
          (per_key[g] == per_key[*chosen] && work_of(g) > work_of(*chosen))) {
        chosen = g;
      }
    }
  }
  if (!chosen) return std::nullopt;
  GroupState& group = groups_[*chosen];
  std::size_t count = std::min(group.batch_limit, group.left());
  if (first_of_group) {
    count = 1;  // measured soonest, and the rest not tied to it unmeasured
  } else if (workers_ > 1 && per_key[*chosen] > 0) {
    // Within a (2 x workers)th of the work left, or twice the fixed part;
    // a key that costs nothing beyond it (found in a cache) bounds nothing.
    const double allowed =
        std::max(work_left / (2.0 * workers_), 2.0 * fixed) - fixed;
    const double fits = std::floor(allowed / per_key[*chosen]);
    if (fits < static_cast<double>(count)) {
      count = fits >= 1 ? static_cast<std::size_t>(fits) : 1;
    }
  }
  if (group.handed_out == 0) group.first_handed_out_at = now;
  WarmupUnit unit{*chosen, group.offset + group.handed_out, count};
  group.handed_out += count;
  return unit;
}

void WarmupSchedule::finished(const WarmupUnit& unit, double seconds) {
  GroupState& group = groups_.at(unit.group);
  seconds = std::max(0.0, seconds);
  group.measured_units += 1;
  group.measured_keys += unit.count;
  group.measured_seconds += seconds;
  fixed_seconds_ = std::min(fixed_seconds_.value_or(seconds), seconds);
}

std::span<const std::size_t> WarmupSchedule::keys(
    const WarmupUnit& unit) const {
  return std::span<const std::size_t>(order_).subspan(unit.first, unit.count);
}

std::size_t WarmupSchedule::item(const WarmupUnit& unit) const {
  return unit.first * max_batch_ + (unit.count - 1);
}

WarmupUnit WarmupSchedule::unit(std::size_t item) const {
  WarmupUnit unit;
  unit.first = item / max_batch_;
  unit.count = item % max_batch_ + 1;
  const auto after = std::upper_bound(
      groups_.begin(), groups_.end(), unit.first,
      [](std::size_t first, const GroupState& g) { return first < g.offset; });
  if (after == groups_.begin()) {
    throw std::out_of_range("warmup schedule: no such unit");
  }
  const GroupState& group = *(after - 1);
  if (unit.first + unit.count > group.offset + group.size ||
      unit.count > group.batch_limit) {
    throw std::out_of_range("warmup schedule: no such unit");
  }
  unit.group = static_cast<std::size_t>(after - 1 - groups_.begin());
  return unit;
}

}  // namespace jitwarm::detail
