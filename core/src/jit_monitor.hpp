// The JIT monitor (docs/warmup.md, "The JIT monitor"): after seal(), a compile
// on the launch path is allowed silently (off), allowed with one warning per
// key (warn), or refused (error); record mode appends every key compiled
// on the launch path after seal to a manifest, so the next start warms it.
//
// What counts as a compile: a call into an implementation's compile for a
// key that neither the in-memory nor the persistent cache holds.
// Implementations flagged JW_IMPL_COMPILES_NOTHING (host functions from
// register_kernels) compile nothing and never reach the monitor. A refused
// key is neither compiled nor recorded: the launch fails, and counts as a
// refusal.
//
// Refusals and warnings are counted here only, by their keys' labels
// (counts(), which Runtime::metrics_text renders); stats() sums them.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "cache_metrics.hpp"
#include "log.hpp"

namespace jitwarm::detail {

class JitMonitor {
 public:
  // `mode` and `record_path` as resolved from the options and environment.
  JitMonitor(const Logger& logger, JitMonitorMode mode,
             std::string record_path);

  void seal() { sealed_.store(true); }
  bool sealed() const { return sealed_.load(); }
  void set_mode(JitMonitorMode mode) { mode_.store(mode); }
  JitMonitorMode mode() const { return mode_.load(); }
  void set_record_path(std::string path);

  // Runs before a compile on the launch path (not on hits, not when the
  // persistent cache answers). After seal: warns, records, or throws
  // Error(JW_ERROR_JIT_REFUSED) naming the key.
  void before_launch_compile(const KernelSchema& schema, const CompileKey& key,
                             std::string_view platform);
  JitMonitorStats stats() const;
  MonitorCounts counts() const;

 private:
  const Logger& logger_;
  std::atomic<bool> sealed_{false};
  std::atomic<JitMonitorMode> mode_;
  std::atomic<uint64_t> compiles_after_seal_{0}, recorded_{0};
  mutable std::mutex mutex_;  // the sets, the counts and the record file
  std::map<KeyLabels, uint64_t> refusals_, warnings_;
  std::set<std::string> warned_keys_;
  std::string record_path_;
  std::set<std::string> recorded_keys_;
};

}  // namespace jitwarm::detail
