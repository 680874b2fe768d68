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
    refusals_.fetch_add(1, std::memory_order_relaxed);
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
    warnings_.fetch_add(1, std::memory_order_relaxed);
    logger_.log(
        JW_LOG_WARNING,
        fmt::format("JIT monitor: compiling {} on the launch path after warmup",
                    key.text()));
  }
}

JitMonitorStats JitMonitor::stats() const {
  JitMonitorStats s;
  s.compiles_after_seal = compiles_after_seal_.load(std::memory_order_relaxed);
  s.warnings = warnings_.load(std::memory_order_relaxed);
  s.refusals = refusals_.load(std::memory_order_relaxed);
  s.recorded = recorded_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace jitwarm::detail
