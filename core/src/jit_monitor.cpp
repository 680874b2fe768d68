#include "jit_monitor.hpp"

#include <fstream>

#include "errors.hpp"

namespace jitwarm::detail {

JitMonitor::JitMonitor(const Logger& logger, JitMonitorMode mode,
                       std::string record_path)
    : logger_(logger), mode_(mode), record_path_(std::move(record_path)) {}

void JitMonitor::set_record_path(std::string path) {
  std::lock_guard lock(mutex_);
  record_path_ = std::move(path);
}

void JitMonitor::before_launch_compile(const KernelSchema& schema,
                                       const CompileKey& key,
                                       std::string_view platform) {
  if (!sealed()) return;
  const JitMonitorMode mode = mode_.load();
  if (mode == JitMonitorMode::error) {
    {
      std::lock_guard lock(mutex_);
      ++refusals_[KeyLabels::of(key)];
    }
    fail(JW_ERROR_JIT_REFUSED,
         "JIT monitor: refusing to compile {} on the launch path after warmup "
         "was sealed (warm this key, or set the monitor to warn)",
         key.text());
  }
  compiles_after_seal_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  if (!record_path_.empty() && recorded_keys_.insert(key.encoding()).second) {
    std::ofstream out(record_path_, std::ios::app);
    out << manifest_entry_for_key(schema, key, platform) << '\n';
    if (out) {
      recorded_.fetch_add(1, std::memory_order_relaxed);
    } else {
      logger_.log(JW_LOG_ERROR, fmt::format("JIT monitor: cannot append to {}",
                                            record_path_));
    }
  }
  if (mode == JitMonitorMode::warn &&
      warned_keys_.insert(key.encoding()).second) {
    ++warnings_[KeyLabels::of(key)];
    logger_.log(
        JW_LOG_WARNING,
        fmt::format("JIT monitor: compiling {} on the launch path after warmup",
                    key.text()));
  }
}

namespace {

uint64_t total(const std::map<KeyLabels, uint64_t>& counts) {
  uint64_t n = 0;
  for (const auto& [labels, count] : counts) n += count;
  return n;
}

}  // namespace

JitMonitorStats JitMonitor::stats() const {
  JitMonitorStats s;
  s.compiles_after_seal = compiles_after_seal_.load(std::memory_order_relaxed);
  s.recorded = recorded_.load(std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  s.warnings = total(warnings_);
  s.refusals = total(refusals_);
  return s;
}

MonitorCounts JitMonitor::counts() const {
  MonitorCounts c;
  c.compiles_after_seal = compiles_after_seal_.load(std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  c.refusals = refusals_;
  c.warnings = warnings_;
  return c;
}

}  // namespace jitwarm::detail
