#include "cache_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace jitwarm::detail {
namespace {

// Upper bounds in seconds: compiles take from milliseconds (a cached NVRTC
// run) to minutes; a load is a file read or a round trip; a remote
// operation is bounded by the tier's timeout (seconds).
constexpr double kCompileBounds[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                     2.5,  5,    10,  30,   60,  120};
constexpr double kLoadBounds[] = {0.0001, 0.0005, 0.001, 0.005, 0.01,
                                  0.05,   0.1,    0.5,   1,     5};
constexpr double kRemoteBounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                    0.05,   0.1,   0.25,   0.5,   1,    2.5};

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string_view operation_label(RemoteOperation operation) {
  return operation == RemoteOperation::load ? "load" : "store";
}

// One metric family after another: HELP and TYPE, then its samples.
class Exposition {
 public:
  void family(std::string_view name, std::string_view type,
              std::string_view help) {
    fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} {}\n",
                   name, help, name, type);
  }
  // `labels` as name="value" pairs, values unescaped.
  using Labels = std::vector<std::pair<std::string_view, std::string_view>>;
  void sample(std::string_view name, const Labels& labels, double value) {
    text_.append(name);
    if (!labels.empty()) {
      text_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        fmt::format_to(std::back_inserter(text_), "{}{}=\"{}\"",
                       i == 0 ? "" : ",", labels[i].first,
                       escape_label_value(labels[i].second));
      }
      text_ += '}';
    }
    fmt::format_to(std::back_inserter(text_), " {}\n", number(value));
  }
  void histogram(std::string_view name, Labels labels, const Histogram& h) {
    const std::string bucket = fmt::format("{}_bucket", name);
    uint64_t cumulative = 0;
    const std::span<const double> bounds = h.bounds();
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += h.counts()[i];
      const std::string le = i < bounds.size() ? number(bounds[i]) : "+Inf";
      labels.emplace_back("le", le);
      sample(bucket, labels, static_cast<double>(cumulative));
      labels.pop_back();
    }
    sample(fmt::format("{}_sum", name), labels, h.sum());
    sample(fmt::format("{}_count", name), labels,
           static_cast<double>(h.count()));
  }
  std::string take() { return std::move(text_); }

 private:
  static std::string number(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    // Counts print as integers; other values with as many digits as they
    // need to read back the same.
    if (v == std::floor(v) && std::fabs(v) < 1e15)
      return fmt::format("{}", static_cast<int64_t>(v));
    return fmt::format("{}", v);
  }
  std::string text_;
};

// The labels of a key's series; the views are into `labels`.
Exposition::Labels labels_of(const KeyLabels& labels) {
  return {{"platform", labels.platform},
          {"target", labels.target},
          {"kernel", labels.kernel}};
}

}  // namespace

std::string_view tier_label(CacheTier tier) {
  switch (tier) {
    case CacheTier::memory: return "memory";
    case CacheTier::disk: return "disk";
    case CacheTier::system: return "system";
    case CacheTier::bundle: return "bundle";
    case CacheTier::redis: return "redis";
  }
  return "unknown";
}

std::string_view platform_of_target(std::string_view target) {
  return target.substr(0, target.find(':'));
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds), counts_(bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(at - bounds_.begin())];
  sum_ += value;
  ++count_;
}

KeyLabels KeyLabels::of(const CompileKey& key) {
  return {std::string(platform_of_target(key.target())), key.target(),
          key.kernel_name()};
}

void CacheMetrics::count_compile(const CompileKey& key, bool after_seal) {
  KeyLabels labels = KeyLabels::of(key);
  std::lock_guard lock(mutex_);
  ++compiles_[std::move(labels)][after_seal ? 1 : 0];
}

void CacheMetrics::observe_compile(std::string_view target,
                                   std::chrono::steady_clock::duration took) {
  std::lock_guard lock(mutex_);
  compile_seconds_
      .try_emplace(std::string(platform_of_target(target)),
                   std::span<const double>(kCompileBounds))
      .first->second.observe(seconds(took));
}

void CacheMetrics::count_store_hit(CacheTier tier) {
  std::lock_guard lock(mutex_);
  ++store_hits_[static_cast<std::size_t>(tier)];
}

void CacheMetrics::count_reject(CacheTier tier, RejectReason reason) {
  std::lock_guard lock(mutex_);
  ++rejects_[static_cast<std::size_t>(tier)][static_cast<std::size_t>(reason)];
}

void CacheMetrics::observe_load(CacheTier tier,
                                std::chrono::steady_clock::duration took) {
  std::lock_guard lock(mutex_);
  load_seconds_.try_emplace(tier, std::span<const double>(kLoadBounds))
      .first->second.observe(seconds(took));
}

void CacheMetrics::observe_remote(RemoteOperation operation,
                                  std::chrono::steady_clock::duration took) {
  std::lock_guard lock(mutex_);
  remote_seconds_.try_emplace(operation, std::span<const double>(kRemoteBounds))
      .first->second.observe(seconds(took));
}

std::string CacheMetrics::render(const CacheStats& cache,
                                 const MonitorCounts& monitor,
                                 bool sealed) const {
  std::lock_guard lock(mutex_);
  const auto hits_of = [&](CacheTier t) {
    return store_hits_[static_cast<std::size_t>(t)];
  };
  const uint64_t layer_hits =
      hits_of(CacheTier::system) + hits_of(CacheTier::bundle);
  const uint64_t disk_hits =
      cache.disk_hits > layer_hits ? cache.disk_hits - layer_hits : 0;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  Exposition out;

  out.family("jitwarm_cache_hits_total", "counter",
             "Lookups answered by a cache tier without compiling (disk: the "
             "user cache directory, system: its read-only layer, bundle: a "
             "user directory entry imported from a bundle, redis: the remote "
             "tier).");
  out.sample("jitwarm_cache_hits_total", {{"tier", "memory"}}, d(cache.hits));
  out.sample("jitwarm_cache_hits_total", {{"tier", "disk"}}, d(disk_hits));
  out.sample("jitwarm_cache_hits_total", {{"tier", "system"}},
             d(hits_of(CacheTier::system)));
  out.sample("jitwarm_cache_hits_total", {{"tier", "bundle"}},
             d(hits_of(CacheTier::bundle)));
  out.sample("jitwarm_cache_hits_total", {{"tier", "redis"}},
             d(cache.remote_hits));

  out.family("jitwarm_cache_misses_total", "counter",
             "Lookups a tier could not answer (memory: every lookup that went "
             "below memory; redis: asked after a local miss).");
  out.sample("jitwarm_cache_misses_total", {{"tier", "memory"}},
             d(cache.misses));
  out.sample("jitwarm_cache_misses_total", {{"tier", "redis"}},
             d(cache.remote_misses));

  out.family("jitwarm_cache_rejected_entries_total", "counter",
             "Entries found by a lookup and treated as a miss, by tier and "
             "reason (corrupt: damaged or mismatched; unsigned, "
             "unknown_signer, bad_signature: refused by the trusted keys).");
  for (const CacheTier tier :
       {CacheTier::disk, CacheTier::system, CacheTier::redis}) {
    for (std::size_t r = 0; r < kRejectReasons; ++r) {
      const auto reason = static_cast<RejectReason>(r);
      out.sample("jitwarm_cache_rejected_entries_total",
                 {{"tier", std::string(tier_label(tier))},
                  {"reason", std::string(reject_reason_label(reason))}},
                 d(rejects_[static_cast<std::size_t>(tier)][r]));
    }
  }

  out.family("jitwarm_cache_writes_total", "counter",
             "Entries written to a persistent tier.");
  out.sample("jitwarm_cache_writes_total", {{"tier", "disk"}},
             d(cache.disk_writes));
  out.sample("jitwarm_cache_writes_total", {{"tier", "redis"}},
             d(cache.remote_writes));

  out.family("jitwarm_cache_entries", "gauge",
             "Artifacts in the in-memory cache.");
  out.sample("jitwarm_cache_entries", {}, d(cache.entries));

  out.family("jitwarm_remote_errors_total", "counter",
             "Remote tier operations that failed: not answered in time, "
             "refused, or skipped while the server is down.");
  out.sample("jitwarm_remote_errors_total", {}, d(cache.remote_errors));

  out.family("jitwarm_compiles_total", "counter",
             "Calls into an implementation's compile, by key and by whether "
             "the runtime was sealed.");
  for (const auto& [labels, counts] : compiles_) {
    for (int after = 0; after < 2; ++after) {
      if (counts[after] == 0) continue;
      Exposition::Labels series = labels_of(labels);
      series.emplace_back("phase", after == 1 ? "after_seal" : "before_seal");
      out.sample("jitwarm_compiles_total", series, d(counts[after]));
    }
  }

  out.family("jitwarm_compile_seconds", "histogram",
             "Time of one compiler run (a key alone, or a batch of keys "
             "compiled together), by platform.");
  for (const auto& [platform, h] : compile_seconds_)
    out.histogram("jitwarm_compile_seconds", {{"platform", platform}}, h);

  out.family("jitwarm_load_seconds", "histogram",
             "Time a lookup that missed memory took to get its artifact from "
             "a tier below it, without compiling, by tier.");
  for (const auto& [tier, h] : load_seconds_)
    out.histogram("jitwarm_load_seconds", {{"tier", tier_label(tier)}}, h);

  out.family("jitwarm_remote_operation_seconds", "histogram",
             "Time of one remote tier operation, by operation.");
  for (const auto& [operation, h] : remote_seconds_) {
    out.histogram("jitwarm_remote_operation_seconds",
                  {{"operation", operation_label(operation)}}, h);
  }

  // A series appears with its key's first refusal or warning, as a
  // compile's does; the family is there before either.
  const auto by_key = [&](std::string_view name,
                          const std::map<KeyLabels, uint64_t>& counts) {
    for (const auto& [labels, n] : counts)
      out.sample(name, labels_of(labels), d(n));
  };
  out.family("jitwarm_monitor_refusals_total", "counter",
             "Launches the JIT monitor refused after seal (mode error), by "
             "kernel and target.");
  by_key("jitwarm_monitor_refusals_total", monitor.refusals);
  out.family("jitwarm_monitor_warnings_total", "counter",
             "Keys the JIT monitor warned about after seal (mode warn, once "
             "per key), by kernel and target.");
  by_key("jitwarm_monitor_warnings_total", monitor.warnings);
  out.family("jitwarm_monitor_compiles_after_seal_total", "counter",
             "Launch-path compiles the JIT monitor allowed after seal.");
  out.sample("jitwarm_monitor_compiles_after_seal_total", {},
             d(monitor.compiles_after_seal));

  out.family("jitwarm_sealed", "gauge",
             "1 once the runtime is sealed (warmup is over), else 0.");
  out.sample("jitwarm_sealed", {}, sealed ? 1 : 0);
  return out.take();
}

}  // namespace jitwarm::detail
