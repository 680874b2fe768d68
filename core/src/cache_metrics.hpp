// What the compile cache's slow paths saw, for operators: compiles by key
// and phase (before or after seal), hits and rejected entries of the tiers
// under memory, and how long compiles, loads and remote operations took;
// rendered with CacheStats and the JIT monitor's counters in Prometheus'
// text exposition format (Runtime::metrics_text, docs/operators.md).
//
// * Only slow-path events reach it (a compile, a miss answered or not by a
//   tier below memory, a rejected entry, a remote operation), each under
//   one mutex. Memory hits, on the launch hot path, are never counted here:
//   the text reads them from CacheStats, as it reads every total CacheStats
//   already keeps (misses, remote hits, rejects, errors, writes), so no
//   event is counted twice.
// * The disk tier's hits are CacheStats::disk_hits less those of the system
//   layer and of bundle entries, which this counts.
// * The JIT monitor's refusals and warnings are its own facts: it counts
//   them by key (MonitorCounts, JitMonitor::counts), and the text reads
//   them from there as it reads CacheStats.
// * The text is the one rendering: jitwarm.prometheus parses it.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "entry_trust.hpp"

namespace jitwarm::detail {

// Where a lookup's artifact came from, as the `tier` label names it.
enum class CacheTier { memory, disk, system, bundle, redis };
inline constexpr std::size_t kCacheTiers = 5;
std::string_view tier_label(CacheTier tier);

enum class RemoteOperation { load, store };

// Observations in fixed buckets (upper bounds, ascending; +Inf implied).
class Histogram {
 public:
  explicit Histogram(std::span<const double> bounds);
  void observe(double value);
  std::span<const double> bounds() const { return bounds_; }
  // Per bucket (not cumulative), the +Inf one last.
  const std::vector<uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::span<const double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The platform, target and kernel labels of the series a key counts in.
struct KeyLabels {
  std::string platform, target, kernel;
  static KeyLabels of(const CompileKey& key);
  auto operator<=>(const KeyLabels&) const = default;
};

// The JIT monitor's counters as the text shows them: refusals and warnings
// by the labels of their keys (their sums are JitMonitorStats' totals).
struct MonitorCounts {
  std::map<KeyLabels, uint64_t> refusals, warnings;
  uint64_t compiles_after_seal = 0;
};

class CacheMetrics {
 public:
  // A call into an implementation's compile for `key`.
  void count_compile(const CompileKey& key, bool after_seal);
  // One compiler run (a key alone, or a batch) on `target`'s platform.
  void observe_compile(std::string_view target,
                       std::chrono::steady_clock::duration took);
  // A hit of the system layer or of a bundle's entry (CacheTier::disk is
  // derived, see the top comment).
  void count_store_hit(CacheTier tier);
  // A lookup that found an entry in this tier (disk, system or redis) and
  // refused it, for `reason`.
  void count_reject(CacheTier tier, RejectReason reason);
  // A lookup that missed memory and got its artifact from `tier` without
  // compiling: from its start to the answer.
  void observe_load(CacheTier tier, std::chrono::steady_clock::duration took);
  void observe_remote(RemoteOperation operation,
                      std::chrono::steady_clock::duration took);

  // Every series, in the exposition format (lines end with '\n').
  std::string render(const CacheStats& cache, const MonitorCounts& monitor,
                     bool sealed) const;

 private:
  mutable std::mutex mutex_;
  std::map<KeyLabels, std::array<uint64_t, 2>> compiles_;  // [after_seal]
  std::map<std::string, Histogram> compile_seconds_;       // by platform
  std::map<CacheTier, Histogram> load_seconds_;
  std::map<RemoteOperation, Histogram> remote_seconds_;
  std::array<uint64_t, kCacheTiers> store_hits_{};  // by CacheTier
  // By CacheTier, then RejectReason.
  std::array<std::array<uint64_t, kRejectReasons>, kCacheTiers> rejects_{};
};

// "cuda:sm_90" -> "cuda": the `platform` label of a target.
std::string_view platform_of_target(std::string_view target);
// A label value as the exposition format quotes it (\\, \", \n escaped).
std::string escape_label_value(std::string_view value);

}  // namespace jitwarm::detail
