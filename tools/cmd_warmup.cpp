// jitwarm warmup: compile every key of a manifest, compile-only, into the
// persistent cache (ahead of time, on a machine with or without the GPU).
//
// --jobs N splits the keys over N worker processes by default: in-process
// NVRTC compiles serialize on a lock (DESIGN.md measured 0.8x on 16 cores;
// hiprtc is documented to serialize too), separate processes do not. Each
// worker writes the same persistent cache, whose entries are written
// atomically, so the parent and later runs read every result.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli.hpp"
#include "warmup_workers.hpp"

namespace jitwarm::cli {
namespace {

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled)
      : enabled_(enabled), start_(std::chrono::steady_clock::now()) {}
  void update(std::size_t done, std::size_t total, const std::string& label) {
    if (!enabled_ || total == 0) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / total);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    std::string shown = label.substr(0, 60);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu keys %6.1fs %-60s",
                 std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total,
                 seconds, shown.c_str());
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int cmd_warmup(const std::vector<std::string>& args) {
  po::options_description options("options");
  PluginOptions plugins;
  std::vector<std::string> manifests;
  std::string platform, target, cache_dir, parallel = "processes";
  unsigned jobs = 1;
  bool json = false, quiet = false;
  plugins.add_to(options);
  options.add_options()("manifest,m",
                        po::value(&manifests)->required()->composing(),
                        "warmup manifest (TOML); repeatable")(
      "platform,p", po::value(&platform),
      "platform to warm (default: the target's, else the "
      "manifest's, else the first that can launch)")(
      "target,t", po::value(&target),
      "target such as cuda:sm_90, hip:gfx942, cpu:x86_64 "
      "(default: the platform's device 0)")(
      "cache-dir,c", po::value(&cache_dir),
      "persistent cache directory (default: $JITWARM_CACHE_DIR)")(
      "jobs,j", po::value(&jobs), "compile this many keys at once")(
      "parallel", po::value(&parallel),
      "how --jobs runs: processes (default) or threads")(
      "json", po::bool_switch(&json), "print the result as JSON")(
      "quiet,q", po::bool_switch(&quiet), "no progress bar");
  po::variables_map vm;
  int code = kExitOk;
  if (!parse("warmup",
             "--manifest FILE [--platform P] [--target T] [--cache-dir D] "
             "[--jobs N]",
             options, nullptr, args, vm, &code)) {
    return code;
  }
  if (parallel != "processes" && parallel != "threads") {
    std::cerr << "jitwarm warmup: --parallel must be processes or threads\n";
    return kExitUsage;
  }
  RuntimeOptions runtime_options;
  runtime_options.cache_dir = cache_dir;
  auto runtime = make_runtime(plugins, runtime_options);

  std::vector<WarmupRequest> requests;
  for (const auto& path : manifests) {
    WarmupManifest m = load_warmup_manifest(path);
    for (auto& r : m.requests) requests.push_back(std::move(r));
  }
  WarmupOptions warmup_options;
  warmup_options.platform = platform;
  warmup_options.target = target;
  const std::vector<CompileKey> keys =
      runtime->warmup_plan(requests, warmup_options);

  ProgressBar progress(!quiet && !json && stderr_is_terminal());
  WarmupResult result;
  if (jobs > 1 && parallel == "processes" && keys.size() > 1) {
    result = warm_in_processes(
        *runtime, keys, std::min<unsigned>(jobs, keys.size()),
        [&](std::size_t done, std::size_t total, const CompileKey& key) {
          progress.update(done, total, key.text());
        });
  } else {
    warmup_options.jobs = std::max(1u, jobs);
    warmup_options.progress = [&](std::size_t done, std::size_t total,
                                  const CompileKey& key) {
      progress.update(done, total, key.text());
    };
    result = runtime->warmup_keys(keys, warmup_options);
  }

  if (json) {
    nlohmann::json j;
    j["keys"] = result.keys.size();
    j["compiled"] = result.compiled;
    j["cached"] = result.cached;
    j["failed"] = result.failed;
    j["seconds"] = result.seconds;
    j["cache_dir"] = cache_dir.empty() ? (std::getenv("JITWARM_CACHE_DIR")
                                              ? std::getenv("JITWARM_CACHE_DIR")
                                              : "")
                                       : cache_dir;
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
  } else {
    for (const auto& k : result.keys) {
      if (k.failed)
        std::cerr << "FAILED " << k.key_text << "\n  " << k.error << "\n";
    }
    std::cout << fmt::format(
        "{} keys: {} compiled, {} already cached, {} failed in {:.2f} s\n",
        result.keys.size(), result.compiled, result.cached, result.failed,
        result.seconds);
  }
  return result.failed > 0 ? kExitFailures : kExitOk;
}

}  // namespace jitwarm::cli
