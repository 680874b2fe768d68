// jitwarm warmup: compile every key of a manifest, compile-only, into the
// persistent cache (ahead of time, on a machine with or without the GPU).
//
// --jobs N compiles in N worker processes by default (the core's
// process-parallel warmup, core/src/warmup_execution_processes.cpp, says why
// and how).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include "cli.hpp"
#include "names.hpp"
#include "trust_options.hpp"
#include "usable_cpus.hpp"
#include "warmup_targets.hpp"

namespace jitwarm::cli {
namespace {

// Progress per key, with rate and time left: a bar redrawn in place on a
// terminal, plain lines otherwise (at most one a second, and the last), so
// a log shows that a long warmup is moving.
class Progress {
 public:
  enum class Style { none, bar, lines };
  explicit Progress(Style style)
      : style_(style), start_(std::chrono::steady_clock::now()) {}
  void update(std::size_t done, std::size_t total, const std::string& label) {
    if (style_ == Style::none || total == 0) return;
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - start_).count();
    if (style_ == Style::lines && done < total &&
        now - last_line_ < std::chrono::seconds(1)) {
      return;
    }
    last_line_ = now;
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
    const std::string left =
        rate > 0 && done < total
            ? fmt::format("{:.0f}s left",
                          static_cast<double>(total - done) / rate)
            : std::string("done");
    if (style_ == Style::lines) {
      std::fprintf(stderr, "warmup: %zu/%zu keys, %.1f keys/s, %s (%s)\n", done,
                   total, rate, left.c_str(), label.c_str());
      std::fflush(stderr);
      return;
    }
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / total);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu keys %5.1f/s %-10s %-50s",
                 std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total, rate,
                 left.c_str(), label.substr(0, 50).c_str());
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  Style style_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_line_{};
};

// --dry-run: the keys warmup would compile, compiling nothing.
void print_plan(const std::vector<CompileKey>& keys,
                const std::string& fallback, bool json) {
  if (json) {
    nlohmann::json j;
    j["dry_run"] = true;
    j["keys"] = keys.size();
    j["cpu_fallback"] = fallback;
    j["plan"] = nlohmann::json::array();
    for (const CompileKey& key : keys) {
      j["plan"].push_back({{"key", key.text()},
                           {"hash", key.hash().hex()},
                           {"kernel", key.kernel_name()},
                           {"implementation", key.impl_name()},
                           {"target", key.target()}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  for (const CompileKey& key : keys) std::cout << key.text() << "\n";
  std::cout << fmt::format(
      "{} keys would be compiled (dry run: nothing compiled)\n", keys.size());
  if (!fallback.empty()) std::cout << "note: " << fallback << "\n";
}

// A target no compiler supports fails every key alike, at once (nothing
// compiles): such a target is one error (exit 4), not a FAILED line per
// key. Returns the keys of the refused targets (each implementation and
// target whose every key was refused as unsupported) and prints each
// refusal once.
std::set<std::size_t> report_unsupported(const std::vector<CompileKey>& keys,
                                         const WarmupResult& result) {
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>>
      by_target;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    by_target[{keys[i].impl_name(), keys[i].target()}].push_back(i);
  }
  std::set<std::size_t> refused;
  for (const auto& [target, indices] : by_target) {
    const bool all_refused =
        std::all_of(indices.begin(), indices.end(), [&](std::size_t i) {
          return result.keys[i].failed &&
                 result.keys[i].status == JW_ERROR_UNSUPPORTED;
        });
    if (!all_refused) continue;
    std::cerr << fmt::format(
        "jitwarm warmup: {} cannot compile for {}; nothing was compiled for "
        "it\n  {}\n",
        target.first, target.second, result.keys[indices.front()].error);
    refused.insert(indices.begin(), indices.end());
  }
  return refused;
}

// "FAILED <key>" and the error, the key once: most compile errors name it.
void print_failure(const WarmupKeyResult& k) {
  if (k.error.find(k.key_text) != std::string::npos) {
    std::cerr << "FAILED: " << k.error << "\n";
  } else {
    std::cerr << "FAILED " << k.key_text << "\n  " << k.error << "\n";
  }
}

// How many keys compiled at once, and why that many: "--jobs" or what
// limited the default (usable_cpus.hpp).
struct JobsUsed {
  unsigned count = 1;
  std::string text;  // "4 (CPU quota 4 of 128 cores)", "8 (--jobs)"
};

JobsUsed jobs_used(const Count& jobs) {
  if (jobs.value != 0) {
    return {jobs.value, std::to_string(jobs.value) + " (--jobs)"};
  }
  const detail::UsableCpus& cpus = detail::usable_cpus();
  return {std::min(cpus.count, Count::kMaxCount), cpus.describe()};
}

void print_result(const std::vector<CompileKey>& keys,
                  const WarmupResult& result, const CacheSettings& cache,
                  const Shard& shard, const JobsUsed& jobs,
                  const std::string& fallback, bool json) {
  const std::vector<TargetTally> targets = tally_by_target(keys, result);
  const Persistence kept = persistence_of(cache, remote_outcome(result));
  if (json) {
    nlohmann::json j;
    j["keys"] = result.keys.size();
    j["compiled"] = result.compiled;
    j["cached"] = result.cached;
    j["failed"] = result.failed;
    j["seconds"] = result.seconds;
    j["jobs"] = jobs.count;
    j["cache_dir"] = cache.directory;
    j["remote_cache"] = cache.remote_display;
    j["saved_to"] = kept.kept_in;
    j["remote_answered"] = result.remote_answered;
    j["remote_failed"] = result.remote_failed;
    j["shard"] = shard.text();
    j["cpu_fallback"] = fallback;
    j["targets"] = nlohmann::json::array();
    for (const TargetTally& t : targets) {
      j["targets"].push_back({{"target", t.target},
                              {"keys", t.keys},
                              {"compiled", t.compiled},
                              {"cached", t.cached},
                              {"failed", t.failed}});
    }
    j["results"] = nlohmann::json::array();
    for (const auto& k : result.keys) {
      j["results"].push_back({{"key", k.key_text},
                              {"hash", k.key_hash.hex()},
                              {"status", k.failed     ? "failed"
                                         : k.compiled ? "compiled"
                                                      : "cached"},
                              {"error", k.error}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  for (const auto& k : result.keys) {
    if (k.failed) print_failure(k);
  }
  if (targets.size() > 1) {
    for (const TargetTally& t : targets) {
      std::cout << fmt::format(
          "{}: {} keys: {} compiled, {} already cached, {} failed\n", t.target,
          t.keys, t.compiled, t.cached, t.failed);
    }
  }
  // One target is named here; several have a line each above.
  std::cout << fmt::format(
      "{} keys{}{}: {} compiled, {} already cached, {} failed in {:.2f} s\n",
      result.keys.size(),
      targets.size() == 1 ? " for " + targets.front().target : "",
      shard.count > 1 ? fmt::format(" (shard {})", shard.text()) : "",
      result.compiled, result.cached, result.failed, result.seconds);
  std::cout << "jobs: " << jobs.text << "\n";
  if (!fallback.empty()) std::cout << "note: " << fallback << "\n";
  if (!kept.kept_in.empty()) {
    std::cout << fmt::format(
        "saved in {}{}\n", fmt::join(kept.kept_in, " and "),
        cache.default_directory() && !cache.directory.empty()
            ? fmt::format(" ({})", to_string(cache.directory_source))
            : std::string());
  }
}

}  // namespace

int cmd_warmup(const std::vector<std::string>& args) {
  po::options_description options("options");
  PluginOptions plugins;
  std::vector<std::string> manifests, targets, device_kinds;
  std::string platform, cache_dir, remote_cache, parallel = "processes";
  Count jobs{0};   // 0: not given, the CPUs this process may use
  Count batch{0};  // 0: not given, each implementation's preference
  Shard shard;
  bool json = false, quiet = false, dry_run = false, no_cache_dir = false,
       no_remote_cache = false;
  plugins.add_to(options);
  TrustOptions trust;
  trust.add_to(options, TrustOptions::sign | TrustOptions::trust |
                            TrustOptions::remote_mode);
  options.add_options()("manifest,m",
                        po::value(&manifests)->required()->composing(),
                        "warmup manifest (TOML), or the name of one installed "
                        "with jitwarm (kernel-set); repeatable")(
      "platform,p", po::value(&platform),
      "platform to warm (default: the target's, else the "
      "manifest's, else the first that can launch)")(
      "target,t", po::value(&targets)->composing(),
      "target such as cuda:sm_90, hip:gfx942, cpu:x86_64, or the shorthand "
      "sm_90 / gfx942 (default: the platform's device 0); repeatable: one "
      "plan for every target")(
      "device-kind", po::value(&device_kinds)->composing(),
      "compile the tuned winners of this kind of device, as 'NVIDIA H200' "
      "(docs/tuning.md; default: the device's when no --target is given); "
      "repeatable")(
      "shard", po::value(&shard),
      "compile shard I of N of the plan (e.g. 3/8), so N machines warm one "
      "plan into a shared cache, each key on one of them")(
      "cache-dir,c", po::value(&cache_dir),
      "persistent cache directory (default: $JITWARM_CACHE_DIR, else "
      "$XDG_CACHE_HOME/jitwarm or ~/.cache/jitwarm)")(
      "no-cache-dir", po::bool_switch(&no_cache_dir),
      "no persistent cache directory (memory, and the remote cache if any)")(
      "remote-cache", po::value(&remote_cache),
      "shared remote cache, redis://[:password@]host[:port][/db] (default: "
      "$JITWARM_REMOTE_CACHE)")(
      "no-remote-cache", po::bool_switch(&no_remote_cache),
      "no remote cache, whatever $JITWARM_REMOTE_CACHE says")(
      "jobs,j", po::value(&jobs),
      "compile this many keys at once (1 to 1024; default: the CPUs this "
      "process may use, its CPU quota and affinity mask)")(
      "parallel", po::value(&parallel),
      "how --jobs runs: processes (default) or threads")(
      "batch", po::value(&batch),
      "compile up to this many keys of one kernel and target together, in "
      "one compiler run (1 to 1024; 1: one by one; default: what the "
      "plugin prefers for the target, else 8: 64 for CUDA, whose batches "
      "link each kernel apart)")(
      "dry-run,n", po::bool_switch(&dry_run),
      "print the keys that would be compiled, compile nothing")(
      "json", po::bool_switch(&json), "print the result as JSON")(
      "quiet,q", po::bool_switch(&quiet),
      "no progress (a bar on a terminal, else a line a second)");
  po::variables_map vm;
  int code = kExitOk;
  if (!parse(CommandLine{"warmup",
                         "--manifest FILE [--platform P] [--target T]... "
                         "[--device-kind K]... [--shard I/N] "
                         "[--cache-dir D | --no-cache-dir] "
                         "[--remote-cache URL | --no-remote-cache] "
                         "[--remote-read-only] [--signing-key FILE] "
                         "[--trusted-key KEY]... "
                         "[--jobs N] [--parallel processes|threads] "
                         "[--batch N] [--dry-run] [--json] [--quiet]",
                         "",
                         {}},
             options, args, vm, &code)) {
    return code;
  }
  if (parallel != "processes" && parallel != "threads") {
    throw usage_error("--parallel must be processes or threads, not '" +
                      parallel + "'");
  }
  std::vector<std::string> expanded;
  for (const std::string& t : targets) {
    std::string full = expand_target(t);
    if (std::find(expanded.begin(), expanded.end(), full) == expanded.end())
      expanded.push_back(std::move(full));
  }
  RuntimeOptions runtime_options;
  runtime_options.cache_dir = cache_dir;
  runtime_options.no_cache_dir = no_cache_dir;
  runtime_options.remote_cache = remote_cache;
  runtime_options.no_remote_cache = no_remote_cache;
  trust.apply(runtime_options);
  auto runtime = make_runtime(plugins, runtime_options);

  const std::vector<WarmupRequest> requests = load_requests(manifests);
  WarmupOptions warmup_options;
  warmup_options.platform = platform;
  if (batch.value != 0) warmup_options.batch_size = batch.value;
  const std::vector<CompileKey> keys = plan_for_targets(
      *runtime, requests, platform, expanded, shard, device_kinds);
  const std::string fallback =
      cpu_fallback_note(*runtime, platform, expanded, keys);
  if (dry_run) {
    print_plan(keys, fallback, json);
    return kExitOk;
  }

  Progress progress(quiet || json          ? Progress::Style::none
                    : stderr_is_terminal() ? Progress::Style::bar
                                           : Progress::Style::lines);
  const JobsUsed used = jobs_used(jobs);
  warmup_options.jobs = used.count;
  warmup_options.parallel = parallel == "processes"
                                ? WarmupParallelism::processes
                                : WarmupParallelism::threads;
  warmup_options.progress = [&](std::size_t done, std::size_t total,
                                const CompileKey& key) {
    progress.update(done, total, key.text());
  };
  WarmupResult result = runtime->warmup_keys(keys, warmup_options);
  const std::set<std::size_t> refused = report_unsupported(keys, result);
  if (!refused.empty()) {
    // What the other targets gave, without the refused keys.
    std::vector<CompileKey> other_keys;
    WarmupResult others;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (refused.count(i) != 0) continue;
      other_keys.push_back(keys[i]);
      others.keys.push_back(result.keys[i]);
    }
    if (!other_keys.empty()) {
      others.count_outcomes();
      others.seconds = result.seconds;
      print_result(other_keys, others, runtime->cache_settings(), shard, used,
                   fallback, json);
    }
    return kExitEnvironment;
  }
  print_result(keys, result, runtime->cache_settings(), shard, used, fallback,
               json);
  const Persistence kept =
      persistence_of(runtime->cache_settings(), remote_outcome(result));
  const int kept_code = report_persistence("warmup", kept, result.compiled > 0);
  return result.failed > 0 ? kExitFailures : kept_code;
}

}  // namespace jitwarm::cli
