// jitwarm tune: on this machine's device, benchmark every candidate config
// of each tunable kernel a manifest's [[tune]] tables (or --args) give
// arguments for, and keep the fastest per key and device kind as a cache
// entry (Runtime::tune, docs/tuning.md). `--show` prints what is stored,
// launching nothing, so a build box can read a result a GPU machine made.
//
// The arguments are read as a conformance case's are (device_args, the
// [[case]] args format): their buffers are placed on the device with the
// table's fills, so a kernel that reads indices gets valid ones.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "case_arguments.hpp"
#include "cli.hpp"
#include "names.hpp"
#include "trust_options.hpp"
#include "tune_tables.hpp"
#include "warmup_targets.hpp"

namespace jitwarm::cli {
namespace {

// Every [[tune]] table of the manifests, then the --args table. Each
// manifest is read once.
std::vector<TuneTable> load_tables(const std::vector<std::string>& manifests,
                                   const std::string& kernel,
                                   const std::string& args) {
  std::vector<TuneTable> tables;
  try {
    for (const std::string& path : manifests) {
      const WarmupManifestFile file = read_manifest_file(path);
      for (TuneTable& t : read_tune_tables(file.text, file.path)) {
        tables.push_back(std::move(t));
      }
    }
    if (!args.empty()) tables.push_back(tune_table_from_text(kernel, args));
  } catch (const CommandError&) {
    throw;
  } catch (const Error&) {
    throw;  // the core's manifest errors carry their own exit codes
  } catch (const std::runtime_error& e) {
    throw CommandError(kExitBadInput, e.what());  // a malformed table
  }
  return tables;
}

// The case an argument table gives for its kernel (`schema`); a malformed
// table is bad input.
device_args::Case build_case(const KernelSchema& schema, const TuneTable& t,
                             bool with_data) {
  try {
    return t.build(schema, with_data);
  } catch (const std::bad_alloc&) {
    throw CommandError(kExitEnvironment,
                       fmt::format("{}: not enough host memory for the "
                                   "arguments' buffers",
                                   t.origin));
  } catch (const std::runtime_error& e) {
    throw CommandError(kExitBadInput, e.what());
  }
}

// Every table's kernel and arguments, checked before anything runs: a
// malformed table stops the command before any tuning, not after minutes
// of it.
void check_tables(const Runtime& runtime,
                  const std::vector<TuneTable>& tables) {
  for (const TuneTable& t : tables) {
    (void)build_case(runtime.schema(t.kernel), t, /*with_data=*/false);
  }
}

// Whether `name` is a loaded platform that can launch on a device; throws
// CommandError saying why not.
void require_launchable(const Runtime& runtime, const std::string& name) {
  for (const PlatformInfo& p : runtime.platforms()) {
    if (p.name != name) continue;
    if (p.can_launch && p.device_count > 0) return;
    throw CommandError(
        kExitEnvironment,
        fmt::format("platform {} cannot launch here ({}): tuning runs the "
                    "kernels ('jitwarm tune --show' reads results without a "
                    "device)",
                    name, p.detail.empty() ? "no device" : p.detail));
  }
  throw CommandError(kExitEnvironment,
                     fmt::format("platform {} is not loaded", name));
}

// The platform to tune on: the one named, else the runtime's default
// launch platform, which must be a device's (the CPU reference's
// implementations are not tunable).
std::string pick_platform(const Runtime& runtime, const std::string& named) {
  const std::string platform =
      named.empty() ? runtime.default_platform() : named;
  if (named.empty() && platform == "cpu") {
    throw CommandError(kExitEnvironment,
                       "no GPU platform here can launch on a device: tuning "
                       "runs the kernels ('jitwarm tune --show' reads "
                       "results without a device)");
  }
  require_launchable(runtime, platform);
  return platform;
}

nlohmann::json result_json(const TuneResult& r) {
  nlohmann::json timings = nlohmann::json::array();
  for (const TuneTiming& t : r.timings) {
    nlohmann::json one = {{"config", tune_config_text(t.config)}};
    if (t.error.empty()) {
      one["seconds"] = t.seconds;
    } else {
      one["error"] = t.error;
    }
    timings.push_back(std::move(one));
  }
  return {{"key", r.key_text},
          {"hash", r.key_hash.hex()},
          {"device_kind", r.device_kind},
          {"best", tune_config_text(r.best)},
          {"stored", r.stored},
          {"timings", std::move(timings)}};
}

// The winner's and the default's times (the default is the first
// candidate), for the progress line.
std::string summary_of(const TuneResult& r) {
  double best = 0;
  std::size_t failed = 0;
  for (const TuneTiming& t : r.timings) {
    if (!t.error.empty()) ++failed;
    if (t.config == r.best) best = t.seconds;
  }
  const TuneTiming& first = r.timings.front();
  std::string text =
      fmt::format("best {}: {:.2f} us", tune_config_text(r.best), best * 1e6);
  if (first.error.empty() && best > 0) {
    text += fmt::format(", default {:.2f} us ({:.2f}x)", first.seconds * 1e6,
                        first.seconds / best);
  }
  text += fmt::format(", {} configs", r.timings.size());
  if (failed > 0) text += fmt::format(", {} failed", failed);
  return text;
}

struct TuneCommand {
  PluginOptions plugins;
  TrustOptions trust;
  std::vector<std::string> manifests;
  std::string kernel, args, platform, cache_dir, remote_cache, target,
      device_kind;
  int32_t device = 0;
  Count warmup_launches{TuneOptions{}.warmup_launches};
  Count timed_launches{TuneOptions{}.timed_launches};
  bool show = false, json = false, quiet = false, no_cache_dir = false,
       no_remote_cache = false;
};

int run_tune(const TuneCommand& c, Runtime& runtime,
             const std::vector<TuneTable>& tables) {
  const std::string platform = pick_platform(runtime, c.platform);
  const std::unique_ptr<device_args::MemorySpace> memory =
      device_args::platform_memory(runtime.platform(platform), c.device);
  const std::string kind = runtime.device_kind(platform, c.device);
  const LaunchOptions where{platform, c.device, nullptr};
  std::size_t tuned = 0, untunable = 0, failed = 0;
  nlohmann::json results = nlohmann::json::array();
  const CacheStats stats_before = runtime.cache_stats();
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const TuneTable& table = tables[i];
    const KernelSchema& schema = runtime.schema(table.kernel);
    const std::string& name = schema.name();
    const std::string label =
        fmt::format("tune {}/{}: {} ({})", i + 1, tables.size(),
                    short_kernel_name(name), table.origin);
    nlohmann::json entry = {{"origin", table.origin}, {"kernel", name}};
    // Whatever fails is this table's failure: the others still run.
    const auto failure = [&](const std::string& why) {
      ++failed;
      entry["status"] = "failed";
      entry["error"] = why;
      std::cerr << "FAILED " << label << "\n  " << why << "\n";
    };
    try {
      const device_args::Case the_case =
          build_case(schema, table, /*with_data=*/true);
      const device_args::PlacedCase placed(the_case, *memory);
      const KernelHandle handle = runtime.kernel(name);
      const CompileKey key = handle.key_for(placed.args(), where);
      entry["key"] = key.text();
      if (runtime.tune_candidates(key).empty()) {
        ++untunable;
        entry["status"] = "not tunable";
        if (!c.quiet && !c.json) {
          std::cerr << label << ": not tunable, skipped\n  " << key.text()
                    << "\n";
        }
      } else {
        TuneOptions options;
        options.launch = where;
        options.warmup_launches = c.warmup_launches.value;
        options.timed_launches = c.timed_launches.value;
        const TuneResult result = handle.tune(placed.args(), options);
        ++tuned;
        entry.update(result_json(result));
        entry["status"] = "tuned";
        if (!c.quiet && !c.json) {
          std::cerr << label << ": " << summary_of(result) << "\n  "
                    << result.key_text << "\n";
        }
      }
    } catch (const CommandError& e) {
      failure(e.what());  // host memory for its buffers
    } catch (const device_args::DeviceError& e) {
      failure(fmt::format("device memory: {}", e.what()));
    } catch (const std::exception& e) {
      failure(e.what());  // its arguments, or every candidate
    }
    results.push_back(std::move(entry));
  }
  const Persistence kept = persistence_of(
      runtime.cache_settings(),
      remote_outcome(stats_before, runtime.cache_stats(), tuned > 0));
  if (c.json) {
    std::cout << nlohmann::json{{"device_kind", kind},
                                {"platform", platform},
                                {"device", c.device},
                                {"tuned", tuned},
                                {"not_tunable", untunable},
                                {"failed", failed},
                                {"saved_to", kept.kept_in},
                                {"results", std::move(results)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format(
        "{} keys tuned on {} ({} device {}), {} not tunable, {} failed\n",
        tuned, kind, platform, c.device, untunable, failed);
    if (!kept.kept_in.empty()) {
      std::cout << fmt::format("saved in {}\n",
                               fmt::join(kept.kept_in, " and "));
    }
  }
  const int kept_code = report_persistence("tune", kept, tuned > 0);
  return failed > 0 ? kExitFailures : kept_code;
}

// --show: the stored result of each table's key, compiling and launching
// nothing (the key is derived from the tables' metadata alone).
int show_results(const TuneCommand& c, Runtime& runtime,
                 const std::vector<TuneTable>& tables) {
  std::string platform = c.platform;
  if (!c.target.empty()) {
    const std::string of_target = c.target.substr(0, c.target.find(':'));
    if (!platform.empty() && platform != of_target) {
      throw usage_error(
          fmt::format("--target {} is not a {} target", c.target, platform));
    }
    platform = of_target;
  }
  // Without a target and a kind given, both are the device's.
  const bool from_device = c.target.empty() || c.device_kind.empty();
  if (from_device) {
    if (platform.empty()) platform = runtime.default_platform();
    if (platform == "cpu" && c.platform.empty() && c.target.empty()) {
      throw CommandError(kExitEnvironment,
                         "no GPU here to take the target and device kind "
                         "from: give --target (e.g. sm_90) and --device-kind "
                         "(e.g. \"NVIDIA H200\")");
    }
    require_launchable(runtime, platform);
  }
  // from_device holds whenever no kind is given.
  const std::string device_target =
      from_device ? runtime.target_for(platform, c.device) : std::string();
  const std::string target = c.target.empty() ? device_target : c.target;
  if (c.device_kind.empty() && target != device_target) {
    throw usage_error(fmt::format(
        "--target {} is not this device's target: give --device-kind",
        c.target));
  }
  const std::string kind = c.device_kind.empty()
                               ? runtime.device_kind(platform, c.device)
                               : c.device_kind;
  std::size_t found = 0, failed = 0;
  nlohmann::json results = nlohmann::json::array();
  for (const TuneTable& table : tables) {
    const KernelSchema& schema = runtime.schema(table.kernel);
    const std::string& name = schema.name();
    const device_args::Case the_case =
        build_case(schema, table, /*with_data=*/false);
    const device_args::MetadataArgs metadata =
        device_args::metadata_args(the_case);
    std::string impl;
    for (const PlatformExplanation& p : runtime.explain(name).platforms) {
      if (p.platform == platform) impl = p.winner.impl_name;
    }
    nlohmann::json entry = {{"origin", table.origin}, {"kernel", name}};
    if (impl.empty()) {
      // As the tuning run counts it: this table's failure.
      ++failed;
      entry["status"] = "failed";
      entry["error"] = fmt::format("{} has no implementation for platform {}",
                                   name, platform);
      std::cerr << "FAILED " << table.origin << ": "
                << entry["error"].get<std::string>() << "\n";
      results.push_back(std::move(entry));
      continue;
    }
    const CompileKey key = derive_key(schema, metadata.args, target, impl);
    if (runtime.tune_candidates(key).empty()) {
      entry["key"] = key.text();
      entry["status"] = "not tunable";
      if (!c.json) std::cout << key.text() << "\n  not tunable\n";
      results.push_back(std::move(entry));
      continue;
    }
    const std::optional<TuneResult> result = runtime.tune_result(key, kind);
    if (result) {
      ++found;
      entry.update(result_json(*result));
      entry["status"] = "tuned";
      if (!c.json) std::cout << result->to_text();
    } else {
      entry["key"] = key.text();
      entry["device_kind"] = kind;
      entry["best"] = nullptr;
      entry["status"] = "no result";
      if (!c.json) {
        std::cout << fmt::format(
            "{}\n  on {}: no result (its default config runs)\n", key.text(),
            kind);
      }
    }
    results.push_back(std::move(entry));
  }
  if (c.json) {
    std::cout << nlohmann::json{{"device_kind", kind},
                                {"target", target},
                                {"found", found},
                                {"failed", failed},
                                {"results", std::move(results)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("{} of {} keys have a result for {}\n", found,
                             tables.size(), kind);
  }
  return failed > 0 ? kExitFailures : kExitOk;
}

}  // namespace

int cmd_tune(const std::vector<std::string>& args) {
  po::options_description options("options");
  TuneCommand c;
  c.plugins.add_to(options);
  c.trust.add_to(options, TrustOptions::sign | TrustOptions::trust |
                              TrustOptions::remote_mode);
  options.add_options()("manifest,m", po::value(&c.manifests)->composing(),
                        "manifest (TOML) whose [[tune]] tables give the "
                        "kernels and their arguments; repeatable")(
      "args,a", po::value(&c.args),
      "KERNEL's arguments as one inline table, in a [[tune]] table's args "
      "form: '{ x = { shape = [4096, 8192], dtype = \"bfloat16\" }, ... }'")(
      "platform,p", po::value(&c.platform),
      "platform to tune on (default: the first, but the CPU's, that can "
      "launch)")("device,d", po::value(&c.device), "device index (default 0)")(
      "warmup-launches", po::value(&c.warmup_launches),
      "untimed launches per candidate (1 to 1024; default 3)")(
      "timed-launches", po::value(&c.timed_launches),
      "timed launches per candidate (1 to 1024; default 20)")(
      "show", po::bool_switch(&c.show),
      "print the stored results for these keys; launch nothing")(
      "target,t", po::value(&c.target),
      "with --show: the target the keys are for (default: the device's)")(
      "device-kind", po::value(&c.device_kind),
      "with --show: the device kind, as 'NVIDIA H200' (default: the "
      "device's)")("cache-dir,c", po::value(&c.cache_dir),
                   "persistent cache directory (default: "
                   "$JITWARM_CACHE_DIR, else $XDG_CACHE_HOME/jitwarm or "
                   "~/.cache/jitwarm)")(
      "no-cache-dir", po::bool_switch(&c.no_cache_dir),
      "no persistent cache directory (memory, and the remote cache if any)")(
      "remote-cache", po::value(&c.remote_cache),
      "shared remote cache, redis://[:password@]host[:port][/db] (default: "
      "$JITWARM_REMOTE_CACHE)")(
      "no-remote-cache", po::bool_switch(&c.no_remote_cache),
      "no remote cache, whatever $JITWARM_REMOTE_CACHE says")(
      "json", po::bool_switch(&c.json), "print the results as JSON")(
      "quiet,q", po::bool_switch(&c.quiet), "no progress line per key");
  po::variables_map vm;
  int code = kExitOk;
  if (!parse(CommandLine{"tune",
                         "[--manifest FILE]... [KERNEL --args TABLE] "
                         "[--platform P] [--device N] [--cache-dir D] "
                         "[--remote-cache URL] [--show [--target T] "
                         "[--device-kind K]] [--json]",
                         "Benchmarks every candidate config of each tunable "
                         "kernel on the device, with the arguments a "
                         "manifest's [[tune]] tables or --args give, and "
                         "stores the fastest per key and device kind in the "
                         "cache: launches and warmups for that kind of "
                         "device then use it. A progress line per key goes "
                         "to stderr. --show prints the stored results.",
                         {Argument{"KERNEL",
                                   "the kernel --args is for (a full or a "
                                   "short name)",
                                   &c.kernel, false}}},
             options, args, vm, &code)) {
    return code;
  }
  if (c.kernel.empty() != c.args.empty()) {
    throw usage_error("KERNEL and --args go together");
  }
  if (c.manifests.empty() && c.kernel.empty()) {
    throw usage_error(
        "nothing to tune: give --manifest FILE (with [[tune]] tables) or "
        "KERNEL --args TABLE");
  }
  if (!c.show && (!c.target.empty() || !c.device_kind.empty())) {
    throw usage_error("--target and --device-kind go with --show");
  }
  if (c.device < 0) throw usage_error("--device is an index: 0 or more");
  if (!c.target.empty()) c.target = expand_target(c.target);
  const std::vector<TuneTable> tables =
      load_tables(c.manifests, c.kernel, c.args);
  if (tables.empty()) {
    throw CommandError(kExitBadInput,
                       fmt::format("nothing to tune: {} has no [[tune]] "
                                   "tables (docs/tuning.md)",
                                   fmt::join(c.manifests, ", ")));
  }
  RuntimeOptions runtime_options;
  runtime_options.cache_dir = c.cache_dir;
  runtime_options.no_cache_dir = c.no_cache_dir;
  runtime_options.remote_cache = c.remote_cache;
  runtime_options.no_remote_cache = c.no_remote_cache;
  c.trust.apply(runtime_options);
  auto runtime = make_runtime(c.plugins, runtime_options);
  check_tables(*runtime, tables);
  return c.show ? show_results(c, *runtime, tables)
                : run_tune(c, *runtime, tables);
}

}  // namespace jitwarm::cli
