// CacheMetrics: the text of a scripted run of the compile cache with its
// tiers and the JIT monitor (warm, seal, a compile after seal, a refused
// compile, a Redis server that is not there, a corrupt disk entry), every
// counter checked by value, and the text's form as the exposition format
// requires it.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <jitwarm/jitwarm.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cache_metrics.hpp"
#include "compile_cache.hpp"
#include "disk_cache.hpp"
#include "jit_monitor.hpp"
#include "remote_cache.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using namespace jitwarm::detail;
using jitwarm::detail::TemporaryDirectory;

namespace {

CompileKey key_of(const std::string& kernel, const std::string& target,
                  int64_t n) {
  std::vector<ParamSpec> params(1);
  params[0].name = "n" + std::to_string(n);  // one key per n
  params[0].kind = JW_PARAM_INT;
  return CompileKey(kernel, "impl", target, params);
}

// Every sample of the text: the series (name and labels, as written) and
// its value.
std::map<std::string, double> samples_of(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

// The form: HELP then TYPE before a family's samples, every sample line
// `name{labels} value` of a declared family, and histogram buckets
// cumulative with +Inf equal to _count.
void check_form(const std::string& text) {
  std::istringstream in(text);
  std::string line, family, type;
  std::map<std::string, std::string> types;
  std::string last_bucket_series;
  double last_bucket = -1, inf_bucket = -1;
  std::map<std::string, double> inf_of;  // series labels without le
  while (std::getline(in, line)) {
    REQUIRE(!line.empty());
    if (line.starts_with("# HELP ")) {
      family = line.substr(7, line.find(' ', 7) - 7);
      REQUIRE(!types.contains(family));
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      std::istringstream t(line.substr(7));
      std::string name;
      t >> name >> type;
      REQUIRE(name == family);
      types[family] = type;
      continue;
    }
    INFO(line);
    REQUIRE(line[0] != '#');
    REQUIRE(types.contains(family));  // a declared family's sample
    const auto end_of_name = line.find_first_of("{ ");
    const std::string name = line.substr(0, end_of_name);
    REQUIRE(name.starts_with(family));
    const auto value_at = line.rfind(' ');
    if (line[end_of_name] == '{') REQUIRE(line[value_at - 1] == '}');
    std::size_t used = 0;
    const double value = std::stod(line.substr(value_at + 1), &used);
    REQUIRE(used == line.size() - value_at - 1);
    if (types[family] != "histogram") {
      REQUIRE(name == family);
      continue;
    }
    if (name == family + "_bucket") {
      const auto le = line.find("le=\"");
      REQUIRE(le != std::string::npos);
      const std::string series = line.substr(0, le);
      if (series != last_bucket_series) last_bucket = -1;
      REQUIRE(value >= last_bucket);  // cumulative
      last_bucket = value;
      last_bucket_series = series;
      if (line.find("le=\"+Inf\"") != std::string::npos) {
        inf_bucket = value;
        std::string labels = line.substr(end_of_name, le - end_of_name);
        inf_of[labels] = inf_bucket;
      }
    } else if (name == family + "_count") {
      // {a="x"} of the count matches {a="x",le= of the buckets.
      std::string labels = line.substr(end_of_name, value_at - end_of_name);
      labels = labels == " " || labels.empty()
                   ? "{"
                   : labels.substr(0, labels.size() - 1) + ",";
      REQUIRE(inf_of.contains(labels));
      REQUIRE(inf_of[labels] == value);
    } else {
      REQUIRE(name == family + "_sum");
    }
  }
}

Artifact artifact_of(const std::string& binary) {
  Artifact a;
  a.binary = binary;
  a.format = "test";
  a.entry_point = "main";
  return a;
}

}  // namespace

TEST_CASE(
    "given warmup, seal, a compile after seal, a refused compile, a Redis "
    "server that is not there and a corrupt disk entry, then the metrics "
    "count each exactly") {
  TemporaryDirectory dir("jitwarm-metrics-");
  std::vector<std::string> log;
  const Logger logger(
      [&](jw_log_level, const std::string& m) { log.push_back(m); });
  auto disk = std::make_shared<DiskCache>(dir.path(), "", 0, &logger);
  RedisEndpoint nowhere;
  nowhere.host = "127.0.0.1";
  nowhere.port = 1;  // nothing listens there: connection refused
  auto redis = std::make_shared<RedisCache>(
      nowhere, std::chrono::milliseconds(200), &logger);
  CompileCache cache;
  cache.set_store(disk);
  cache.set_remote(redis);
  JitMonitor monitor(logger, JitMonitorMode::warn, "");
  cache.set_sealed_query([&] { return monitor.sealed(); });
  const KernelSchema schema;
  const auto compiler = [&](const CompileKey& key) {
    CompileCache::Compiler c;
    c.compile = [] { return artifact_of("bin"); };
    c.fingerprint = [] { return std::optional<std::string>("fp"); };
    c.before_compile = [&monitor, &schema, key] {
      monitor.before_launch_compile(schema, key, "platform");
    };
    return c;
  };
  const CompileKey expand1 = key_of("ns.expand", "cpu:x86_64", 1);
  const CompileKey scale = key_of("ns.scale", "cuda:sm_90", 1);
  const CompileKey expand2 = key_of("ns.expand", "cpu:x86_64", 2);
  const CompileKey expand3 = key_of("ns.expand", "cpu:x86_64", 3);

  // A corrupt entry where scale's belongs.
  const auto corrupt = disk->entry_path(scale, "fp");
  std::filesystem::create_directories(corrupt.parent_path());
  std::ofstream(corrupt) << "not an entry";

  // Warm: two compiles before seal.
  CHECK(cache.get_or_compile(expand1, compiler(expand1)).compiled);
  CHECK(cache.get_or_compile(scale, compiler(scale)).compiled);
  monitor.seal();
  // Warn mode: allowed, one warning.
  CHECK(cache.get_or_compile(expand2, compiler(expand2)).compiled);
  // Error mode: refused, not a compile.
  monitor.set_mode(JitMonitorMode::error);
  CHECK_THROWS_AS(cache.get_or_compile(expand3, compiler(expand3)), Error);
  // Two memory hits, and a disk hit of what was compiled.
  CHECK(cache.get_or_compile(expand1, compiler(expand1)).artifact);
  CHECK(cache.hit(expand1) != nullptr);
  CHECK(cache.load_entry(EntryRef(expand1, "fp")).artifact);

  const CacheStats stats = cache.stats();
  const std::string text =
      cache.metrics().render(stats, monitor.counts(), monitor.sealed());
  INFO(text);
  check_form(text);
  const std::map<std::string, double> s = samples_of(text);
  const auto at = [&](const std::string& series) {
    INFO(series);
    REQUIRE(s.contains(series));
    return s.at(series);
  };
  CHECK(at("jitwarm_cache_hits_total{tier=\"memory\"}") == 2);
  CHECK(at("jitwarm_cache_hits_total{tier=\"disk\"}") == 1);
  CHECK(at("jitwarm_cache_hits_total{tier=\"system\"}") == 0);
  CHECK(at("jitwarm_cache_hits_total{tier=\"bundle\"}") == 0);
  CHECK(at("jitwarm_cache_hits_total{tier=\"redis\"}") == 0);
  CHECK(at("jitwarm_cache_misses_total{tier=\"memory\"}") == 4);
  const auto rejected = [&](const char* tier, const char* reason) {
    return at(fmt::format(
        "jitwarm_cache_rejected_entries_total{{tier=\"{}\",reason=\"{}\"}}",
        tier, reason));
  };
  CHECK(rejected("disk", "corrupt") == 1);
  for (const char* tier : {"disk", "system", "redis"}) {
    for (const char* reason : {"unsigned", "unknown_signer", "bad_signature"})
      CHECK(rejected(tier, reason) == 0);
  }
  CHECK(rejected("system", "corrupt") == 0);
  CHECK(rejected("redis", "corrupt") == 0);
  // Four lookups and three write-backs, the server down all along.
  CHECK(stats.remote_errors == 7);
  CHECK(at("jitwarm_remote_errors_total") == 7);
  CHECK(at("jitwarm_remote_operation_seconds_count{operation=\"load\"}") == 4);
  CHECK(at("jitwarm_remote_operation_seconds_count{operation=\"store\"}") == 3);
  CHECK(at("jitwarm_cache_writes_total{tier=\"disk\"}") == 3);
  CHECK(at("jitwarm_compiles_total{platform=\"cpu\",target=\"cpu:x86_64\","
           "kernel=\"ns.expand\",phase=\"before_seal\"}") == 1);
  CHECK(at("jitwarm_compiles_total{platform=\"cpu\",target=\"cpu:x86_64\","
           "kernel=\"ns.expand\",phase=\"after_seal\"}") == 1);
  CHECK(at("jitwarm_compiles_total{platform=\"cuda\",target=\"cuda:sm_90\","
           "kernel=\"ns.scale\",phase=\"before_seal\"}") == 1);
  CHECK_FALSE(s.contains(
      "jitwarm_compiles_total{platform=\"cuda\",target=\"cuda:sm_90\","
      "kernel=\"ns.scale\",phase=\"after_seal\"}"));
  CHECK(at("jitwarm_compile_seconds_count{platform=\"cpu\"}") == 2);
  CHECK(at("jitwarm_compile_seconds_count{platform=\"cuda\"}") == 1);
  CHECK(at("jitwarm_load_seconds_count{tier=\"disk\"}") == 1);
  // The refusal and the warning by their keys' labels, and nothing else.
  const auto series_of = [&](const std::string& family) {
    std::vector<std::string> names;
    for (const auto& [series, value] : s) {
      if (series.starts_with(family + "{") || series == family)
        names.push_back(series);
    }
    return names;
  };
  const std::string expand_labels =
      "{platform=\"cpu\",target=\"cpu:x86_64\",kernel=\"ns.expand\"}";
  CHECK(series_of("jitwarm_monitor_refusals_total") ==
        std::vector<std::string>{"jitwarm_monitor_refusals_total" +
                                 expand_labels});
  CHECK(at("jitwarm_monitor_refusals_total" + expand_labels) == 1);
  CHECK(series_of("jitwarm_monitor_warnings_total") ==
        std::vector<std::string>{"jitwarm_monitor_warnings_total" +
                                 expand_labels});
  CHECK(at("jitwarm_monitor_warnings_total" + expand_labels) == 1);
  CHECK(at("jitwarm_monitor_compiles_after_seal_total") == 1);
  // The monitor's totals are what they were before the labels.
  CHECK(monitor.stats().refusals == 1);
  CHECK(monitor.stats().warnings == 1);
  CHECK(monitor.stats().compiles_after_seal == 1);
  CHECK(at("jitwarm_cache_entries") == 3);
  CHECK(at("jitwarm_sealed") == 1);
  // The existing counters are what they were before the metrics.
  CHECK(stats.hits == 2);
  CHECK(stats.misses == 4);
  CHECK(stats.compiles == 3);
  CHECK(stats.disk_hits == 1);
  CHECK(stats.disk_rejects == 1);
}

TEST_CASE(
    "given label values with quotes, backslashes and newlines, then they "
    "are escaped as the exposition format says") {
  CHECK(escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  CacheMetrics metrics;
  metrics.count_compile(key_of("ns.\"odd\"\\k", "cpu:x\ny", 1), false);
  const std::string text = metrics.render({}, {}, false);
  CHECK(text.find("kernel=\"ns.\\\"odd\\\"\\\\k\"") != std::string::npos);
  CHECK(text.find("target=\"cpu:x\\ny\"") != std::string::npos);
  // Families without samples are still declared, so a dashboard's query
  // finds the name before the first refusal.
  CHECK(text.find("# TYPE jitwarm_monitor_refusals_total counter\n# HELP "
                  "jitwarm_monitor_warnings_total") != std::string::npos);
  CHECK(platform_of_target("cuda:sm_90") == "cuda");
  CHECK(platform_of_target("cpu") == "cpu");
  check_form(text);
}

TEST_CASE("given observations, then a histogram's buckets are cumulative") {
  CacheMetrics metrics;
  for (double s : {0.0001, 0.003, 0.003, 7.0}) {
    metrics.observe_load(
        CacheTier::system,
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(s)));
  }
  const std::string text = metrics.render({}, {}, false);
  check_form(text);
  const auto s = samples_of(text);
  CHECK(s.at("jitwarm_load_seconds_bucket{tier=\"system\",le=\"0.0001\"}") ==
        1);
  CHECK(s.at("jitwarm_load_seconds_bucket{tier=\"system\",le=\"0.005\"}") == 3);
  CHECK(s.at("jitwarm_load_seconds_bucket{tier=\"system\",le=\"5\"}") == 3);
  CHECK(s.at("jitwarm_load_seconds_bucket{tier=\"system\",le=\"+Inf\"}") == 4);
  CHECK(s.at("jitwarm_load_seconds_count{tier=\"system\"}") == 4);
}
