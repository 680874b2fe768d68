// What a fleet's machines pay to start warm (docs/results/fleet-cache.md):
// a fresh process with an empty local cache fetching every key of a plan
// from a warm Redis tier, and importing the same keys from a bundle.
//
//   jitwarm-bench-fleet-cache --remote-cache redis://127.0.0.1:PORT/0
//       [--manifest manifests/kernel-set.toml] [--target cuda:sm_90]
//       [--rounds 5] [--trust] [--json FILE]
//
// 1. Fill: one runtime (no disk cache) warms the plan into the remote tier
//    (keys the tier has already are fetched, not compiled).
// 2. Fetch, --rounds times, each in a new process (this program, run
//    again): load the plugins, plan, then time warmup_keys over the plan,
//    which asks the remote tier for each key after a local miss, checks
//    it, and keeps it in memory and (the "with disk" variant) writes it to
//    an empty disk cache. The process reports its counters, so a fetch that
//    compiled anything is seen.
// 3. Bundle: the fill's keys exported from a disk cache into one bundle,
//    then import_cache_bundle into a new empty directory, --rounds times.
// Times are wall clock, per round; the table gives the median and the
// range. With --trust (docs/operators.md, "Trust") the fill signs every
// entry with a fresh key, and each fetch (and a load of every key from the
// filled disk cache, no remote tier) runs with and without that key
// trusted, in turns round by round: the cost of verifying signatures at
// load.
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace jitwarm;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string remote;
  std::string manifest = "manifests/kernel-set.toml";
  std::string target = "cuda:sm_90";
  int rounds = 5;
  std::string json_path;
  // Internal: run one fetch in this process, into this directory ("-": no
  // disk cache), and print its result as JSON.
  std::string fetch_into;
  bool trust = false;
  // Internal: the fetch trusts this public key; loads from this filled
  // directory with no remote tier.
  std::string trusted_key, load_from;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

std::vector<CompileKey> plan_of(Runtime& runtime, const Options& o) {
  WarmupOptions w;
  w.target = o.target;
  return runtime.warmup_plan(load_warmup_manifest(o.manifest).requests, w);
}

// One fresh process's fetch (run by the parent through --fetch-into).
int fetch(const Options& o) {
  RuntimeOptions r;
  r.remote_cache = o.remote;
  if (!o.load_from.empty()) {
    r.cache_dir = o.load_from;
    r.no_remote_cache = true;
  } else if (o.fetch_into == "-") {
    r.no_cache_dir = true;
  } else {
    r.cache_dir = o.fetch_into;
  }
  if (!o.trusted_key.empty()) r.trusted_keys = {o.trusted_key};
  Runtime runtime(r);
  runtime.load_plugins();
  const std::vector<CompileKey> plan = plan_of(runtime, o);
  const auto start = std::chrono::steady_clock::now();
  const WarmupResult result = runtime.warmup_keys(plan);
  const double seconds = seconds_since(start);
  const CacheStats s = runtime.cache_stats();
  nlohmann::json j = {{"keys", plan.size()},
                      {"seconds", seconds},
                      {"compiled", result.compiled},
                      {"failed", result.failed},
                      {"compiles", s.compiles},
                      {"remote_hits", s.remote_hits},
                      {"remote_misses", s.remote_misses},
                      {"remote_errors", s.remote_errors},
                      {"remote_rejects", s.remote_rejects},
                      {"disk_hits", s.disk_hits},
                      {"disk_rejects", s.disk_rejects},
                      {"disk_writes", s.disk_writes}};
  std::cout << j.dump() << "\n";
  return 0;
}

// Runs this program again with `args`; its stdout, parsed.
nlohmann::json run_self(const std::vector<std::string>& args) {
  std::string line;
  {
    // Appended, not `"'" + ...`: GCC 12's false -Wrestrict (bug 105329).
    std::string quoted("'");
    quoted.append(fs::read_symlink("/proc/self/exe").string()).append("'");
    for (const auto& a : args) quoted.append(" '").append(a).append("'");
    FILE* pipe = ::popen(quoted.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("popen failed");
    std::array<char, 4096> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr)
      line += buffer.data();
    if (::pclose(pipe) != 0)
      throw std::runtime_error("a fetch process failed: " + line);
  }
  return nlohmann::json::parse(line);
}

struct Spread {
  double median = 0, low = 0, high = 0;
};
Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Spread{v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--remote-cache") {
      o.remote = value();
    } else if (a == "--manifest") {
      o.manifest = value();
    } else if (a == "--target") {
      o.target = value();
    } else if (a == "--rounds") {
      o.rounds = std::max(1, std::stoi(value()));
    } else if (a == "--json") {
      o.json_path = value();
    } else if (a == "--fetch-into") {
      o.fetch_into = value();
    } else if (a == "--trust") {
      o.trust = true;
    } else if (a == "--trusted-key") {
      o.trusted_key = value();
    } else if (a == "--load-from") {
      o.load_from = value();
      o.fetch_into = "-";
    } else {
      std::cerr << "usage: jitwarm-bench-fleet-cache --remote-cache URL "
                   "[--manifest M] [--target T] [--rounds N] [--trust] "
                   "[--json FILE]\n";
      return 2;
    }
  }
  if (o.remote.empty()) {
    std::cerr << "--remote-cache redis://HOST:PORT/DB is required\n";
    return 2;
  }
  try {
    if (!o.fetch_into.empty()) return fetch(o);
    const std::vector<std::string> common = {"--remote-cache", o.remote,
                                             "--manifest",     o.manifest,
                                             "--target",       o.target};
    char pattern[] = "/tmp/jitwarm-bench-fleet-XXXXXX";
    const fs::path work = ::mkdtemp(pattern);

    // 1. Fill the remote tier (and a disk cache, for the bundle).
    RuntimeOptions fill_options;
    fill_options.remote_cache = o.remote;
    fill_options.cache_dir = (work / "filled").string();
    std::string public_key;
    if (o.trust) {
      const CacheKeyPair pair =
          write_cache_key_pair((work / "build.key").string());
      fill_options.signing_key = pair.secret_key_file;
      public_key = pair.public_key;
    }
    Runtime filler(fill_options);
    filler.load_plugins();
    const std::vector<CompileKey> plan = plan_of(filler, o);
    auto start = std::chrono::steady_clock::now();
    const WarmupResult filled = filler.warmup_keys(plan);
    const double fill_seconds = seconds_since(start);
    const CacheStats fs_stats = filler.cache_stats();
    fmt::print(
        "fill: {} keys for {}: {} compiled, {} fetched, {} failed in "
        "{:.2f} s\n",
        plan.size(), o.target, fs_stats.compiles, fs_stats.remote_hits,
        filled.failed, fill_seconds);

    // 2. Fresh processes fetch everything.
    nlohmann::json report;
    report["keys"] = plan.size();
    report["target"] = o.target;
    // Each variant: from Redis into memory, into an empty disk cache, and
    // (with --trust) from the filled disk cache; with --trust each with and
    // without the key trusted, in turns.
    struct Variant {
      std::string name, words;
      bool with_disk = false, from_disk = false, trusted = false;
      std::vector<double> per_key_ms;
      nlohmann::json last;
    };
    std::vector<Variant> variants;
    for (const bool trusted : {false, true}) {
      if (trusted && !o.trust) continue;
      const std::string suffix = trusted ? "_trusted" : "";
      const std::string words = trusted ? ", signatures verified" : "";
      variants.push_back({"fetch_memory" + suffix,
                          "empty local cache, warm Redis, memory only" + words,
                          false,
                          false,
                          trusted,
                          {},
                          {}});
      variants.push_back(
          {"fetch_into_disk" + suffix,
           "empty local cache, warm Redis, each key also written to the "
           "empty disk cache" +
               words,
           true,
           false,
           trusted,
           {},
           {}});
      if (o.trust) {
        variants.push_back({"load_from_disk" + suffix,
                            "from the filled disk cache, no Redis" + words,
                            false,
                            true,
                            trusted,
                            {},
                            {}});
      }
    }
    for (int r = 0; r < o.rounds; ++r) {
      for (Variant& v : variants) {
        const fs::path dir = work / fmt::format("fetch-{}-{}", v.name, r);
        std::vector<std::string> args = common;
        if (v.from_disk) {
          args.push_back("--load-from");
          args.push_back(fill_options.cache_dir);
        } else {
          args.push_back("--fetch-into");
          args.push_back(v.with_disk ? dir.string() : std::string("-"));
        }
        if (v.trusted) {
          args.push_back("--trusted-key");
          args.push_back(public_key);
        }
        v.last = run_self(args);
        const uint64_t hits = v.from_disk
                                  ? v.last["disk_hits"].get<uint64_t>()
                                  : v.last["remote_hits"].get<uint64_t>();
        if (v.last["compiles"] != 0 || v.last["failed"] != 0 ||
            hits != plan.size()) {
          std::cerr << "a fetch compiled, failed or missed: " << v.last.dump()
                    << "\n";
          return 1;
        }
        v.per_key_ms.push_back(v.last["seconds"].get<double>() * 1000.0 /
                               static_cast<double>(plan.size()));
      }
    }
    for (const Variant& v : variants) {
      const Spread s = spread(v.per_key_ms);
      report[v.name] = {{"ms_per_key_median", s.median},
                        {"ms_per_key_min", s.low},
                        {"ms_per_key_max", s.high},
                        {"last_round", v.last}};
      fmt::print(
          "fresh process ({}): {} keys, 0 compiled; {:.3f} ms per key "
          "(median of {}, {:.3f} to {:.3f})\n",
          v.words, plan.size(), s.median, o.rounds, s.low, s.high);
    }

    // 3. A bundle of the same keys, imported into empty directories.
    RuntimeOptions from;
    from.cache_dir = fill_options.cache_dir;
    const fs::path bundle = work / "plan.jwb";
    const CacheBundleSummary exported =
        export_cache_bundle(bundle.string(), {o.target}, from);
    std::vector<double> import_seconds;
    for (int r = 0; r < o.rounds; ++r) {
      RuntimeOptions into;
      into.cache_dir = (work / fmt::format("import-{}", r)).string();
      start = std::chrono::steady_clock::now();
      const CacheBundleSummary imported =
          import_cache_bundle(bundle.string(), into);
      import_seconds.push_back(seconds_since(start));
      if (imported.written != exported.entries) {
        std::cerr << "an import wrote " << imported.written << " of "
                  << exported.entries << "\n";
        return 1;
      }
    }
    const Spread s = spread(import_seconds);
    report["bundle"] = {{"entries", exported.entries},
                        {"entry_bytes", exported.entry_bytes},
                        {"file_bytes", exported.file_bytes},
                        {"import_seconds_median", s.median},
                        {"import_seconds_min", s.low},
                        {"import_seconds_max", s.high}};
    fmt::print(
        "bundle: {} entries, {} bytes in a {} byte file; import into an "
        "empty directory {:.3f} s (median of {}, {:.3f} to {:.3f})\n",
        exported.entries, exported.entry_bytes, exported.file_bytes, s.median,
        o.rounds, s.low, s.high);
    if (!o.json_path.empty()) std::ofstream(o.json_path) << report.dump(2);
    fs::remove_all(work);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "jitwarm-bench-fleet-cache: " << e.what() << "\n";
    return 1;
  }
}
