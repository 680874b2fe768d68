// Why a key misses (core/src/miss_explanation.cpp): entries written through
// the disk cache with fingerprints of the GPU plugins' shape ("label:
// value" lines) and of another shape, each one factor away from the key;
// Runtime::explain_miss and the warmup's one warning with the fake plugin.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <mutex>

#include "disk_cache.hpp"
#include "miss_explanation.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::DiskCache;
using jitwarm::detail::EntryRef;
using jitwarm::detail::TemporaryDirectory;

namespace {

// The fingerprint GpuCompiler::fingerprint writes, with each part a
// parameter so a test can change exactly one.
struct GpuFingerprint {
  std::string format = "jitwarm GPU kernel fingerprint, format 1";
  std::string compiler = "NVRTC 12.4 (libnvrtc.so.12)";
  std::string target = "sm_90 (cubin)";
  std::string source = "rms_norm.cu xxh128 0123";
  std::string header = "common.cuh xxh128 4567";
  std::string options = "-std=c++17 -O3";
  std::string text() const {
    return format + "\nimplementation: cuda-nvrtc\ncompiler: " + compiler +
           "\ntarget: " + target + "\nsource: " + source +
           "\nheader: " + header +
           "\nname expression: rms_norm<float>\noptions: " + options + "\n";
  }
};

CompileKey key_for(const std::string& target, jw_int_class n_class,
                   const std::string& kernel = "ns.rms_norm") {
  ParamSpec n;
  n.name = "n";
  n.kind = JW_PARAM_INT;
  n.int_spec = IntSpec{JW_INT_I32, n_class};
  return CompileKey(kernel, "cuda-nvrtc", target, {n});
}

const CompileKey kKey = key_for("cuda:sm_90", JW_INT_CLASS_DIV16);

detail::Artifact artifact() {
  detail::Artifact a;
  a.binary = "bytes";
  a.format = "cubin";
  a.entry_point = "entry";
  return a;
}

struct Cache {
  TemporaryDirectory dir{"jitwarm-miss-"};
  DiskCache disk{dir.path(), "", 0, nullptr};
  void put(const CompileKey& key, const std::string& fingerprint) {
    REQUIRE(disk.store(EntryRef(key, fingerprint), artifact()));
  }
  MissExplanation explain(
      const std::string& fingerprint = GpuFingerprint{}.text()) {
    return detail::explain_against(kKey, fingerprint, disk);
  }
};

std::vector<std::string> factor_names(const MissExplanation& e) {
  REQUIRE(!e.neighbours.empty());
  std::vector<std::string> names;
  for (const MissFactor& f : e.neighbours.front().factors)
    names.push_back(f.name);
  return names;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE(
    "given an entry whose fingerprint differs in one line, when the key is "
    "explained, then exactly that factor is named with both values") {
  Cache cache;
  GpuFingerprint entry;
  Names expected;
  SUBCASE("options") {
    entry.options = "-std=c++17 -O3 -lineinfo";
    expected = {"options"};
  }
  SUBCASE("source") {
    entry.source = "rms_norm.cu xxh128 89ab";
    expected = {"source"};
  }
  SUBCASE("compiler version") {
    entry.compiler = "NVRTC 12.2 (libnvrtc.so.12)";
    expected = {"compiler"};
  }
  SUBCASE("a header, by name") {
    entry.header = "common.cuh xxh128 cdef";
    expected = {"header common.cuh"};
  }
  SUBCASE("the format line") {
    entry.format = "jitwarm GPU kernel fingerprint, format 0";
    expected = {"jitwarm version"};
  }
  cache.put(kKey, entry.text());
  const MissExplanation e = cache.explain();
  CHECK_FALSE(e.would_hit);
  CHECK(factor_names(e) == expected);
  const MissFactor& f = e.neighbours.front().factors.front();
  CHECK(f.wanted != f.found);
  CHECK(e.to_text().find(expected.front() + ": wanted ") != std::string::npos);
}

TEST_CASE(
    "given a cache built for cuda:sm_89, when a key for cuda:sm_90 is "
    "explained, then the one factor is target") {
  Cache cache;
  GpuFingerprint entry;
  entry.target = "sm_89 (cubin)";
  cache.put(key_for("cuda:sm_89", JW_INT_CLASS_DIV16), entry.text());
  const MissExplanation e = cache.explain();
  CHECK(factor_names(e) == Names{"target"});
  CHECK(e.neighbours.front().factors.front().wanted == "cuda:sm_90");
  CHECK(e.neighbours.front().factors.front().found == "cuda:sm_89");
  CHECK(e.neighbours.front().target == "cuda:sm_89");
}

TEST_CASE(
    "given a cache built for cuda:sm_89 with the architecture in its options, "
    "when a key for cuda:sm_90 is explained, then the options are named only "
    "when they differ in more than the target") {
  Cache cache;
  GpuFingerprint wanted;
  wanted.options = "--gpu-architecture=sm_90 -std=c++17";
  GpuFingerprint entry = wanted;
  entry.target = "sm_89 (cubin)";
  Names expected;
  SUBCASE("the same options for their target") {
    entry.options = "--gpu-architecture=sm_89 -std=c++17";
    expected = {"target"};
  }
  SUBCASE("another option too") {
    entry.options = "--gpu-architecture=sm_89 -std=c++17 -lineinfo";
    expected = {"target", "options"};
  }
  cache.put(key_for("cuda:sm_89", JW_INT_CLASS_DIV16), entry.text());
  const MissExplanation e = cache.explain(wanted.text());
  CHECK(factor_names(e) == expected);
  // What was found is the entry's own text, never the rewritten one.
  if (expected.size() == 2) {
    CHECK(e.neighbours.front().factors.back().found == entry.options);
    CHECK(e.neighbours.front().factors.back().wanted == wanted.options);
  }
}

TEST_CASE(
    "given an entry of another specialization, then the parameter is named "
    "with its key text on both sides") {
  Cache cache;
  cache.put(key_for("cuda:sm_90", JW_INT_CLASS_NONE), GpuFingerprint{}.text());
  const MissExplanation e = cache.explain();
  CHECK(factor_names(e) == Names{"parameter n"});
  CHECK(e.neighbours.front().factors.front().wanted == "n:i32:D");
  CHECK(e.neighbours.front().factors.front().found == "n:i32");
}

TEST_CASE(
    "given several entries, then the nearest (fewest factors) comes first") {
  Cache cache;
  GpuFingerprint far;
  far.options = "-O0";
  far.compiler = "NVRTC 11.8";
  cache.put(kKey, far.text());
  GpuFingerprint near;
  near.options = "-O0";
  cache.put(key_for("cuda:sm_90", JW_INT_CLASS_ONE), far.text());
  cache.put(kKey, near.text());
  const MissExplanation e = cache.explain();
  REQUIRE(e.neighbours.size() == 3);
  CHECK(factor_names(e) == Names{"options"});
  CHECK(e.neighbours[1].factors.size() == 2);
  CHECK(e.neighbours[2].factors.size() == 3);
}

TEST_CASE(
    "given fingerprints of another shape, then each differing line is a "
    "fingerprint line") {
  Cache cache;
  const std::string wanted = "reference-cpu 0.2\nrecord 1\ninstantiation a\n";
  cache.put(kKey, "reference-cpu 0.1\nrecord 1\ninstantiation a\n");
  const MissExplanation e = cache.explain(wanted);
  CHECK(factor_names(e) == Names{"fingerprint line"});
  CHECK(e.neighbours.front().factors.front().wanted == "reference-cpu 0.2");
  CHECK(e.neighbours.front().factors.front().found == "reference-cpu 0.1");
}

TEST_CASE(
    "given the key's own entry, then it would hit; given entries of other "
    "kernels or platforms only, then there is no entry of this kernel and "
    "target") {
  Cache cache;
  cache.put(key_for("cuda:sm_90", JW_INT_CLASS_DIV16, "ns.other"),
            GpuFingerprint{}.text());
  cache.put(key_for("hip:gfx942", JW_INT_CLASS_DIV16), GpuFingerprint{}.text());
  MissExplanation e = cache.explain();
  CHECK_FALSE(e.would_hit);
  CHECK(e.neighbours.empty());
  CHECK(e.entries == 2);
  CHECK(e.to_text().find("no entry of this kernel and target") !=
        std::string::npos);
  cache.put(kKey, GpuFingerprint{}.text());
  e = cache.explain();
  CHECK(e.would_hit);
  CHECK(e.to_text() == kKey.text() + ": would hit");
}

TEST_CASE(
    "given an entry in the system layer, then it is a neighbour marked as "
    "system") {
  TemporaryDirectory system("jitwarm-miss-system-");
  GpuFingerprint entry;
  entry.options = "-O2";
  DiskCache(system.path(), "", 0, nullptr)
      .store(EntryRef(kKey, entry.text()), artifact());
  TemporaryDirectory user("jitwarm-miss-user-");
  const DiskCache disk(user.path(), system.path(), 0, nullptr);
  const MissExplanation e =
      detail::explain_against(kKey, GpuFingerprint{}.text(), disk);
  REQUIRE(e.neighbours.size() == 1);
  CHECK(e.neighbours.front().system);
  CHECK(e.neighbours.front().factors.front().name == "options");
}

namespace {

constexpr const char* kScale = "jitwarm.test.scale";

struct LoggedRuntime {
  std::mutex mutex;
  std::vector<std::pair<jw_log_level, std::string>> log;
  Runtime runtime;
  explicit LoggedRuntime(const std::filesystem::path& cache_dir)
      : runtime([&] {
          RuntimeOptions o;
          o.cache_dir = cache_dir.string();
          o.no_remote_cache = true;
          o.log = [this](jw_log_level l, const std::string& m) {
            std::lock_guard lock(mutex);
            log.emplace_back(l, m);
          };
          return o;
        }()) {
    const PluginLoadRecord r = runtime.load_plugin(FAKE_GOOD_PLUGIN);
    REQUIRE_MESSAGE(r.loaded, r.detail);
  }
  std::vector<std::string> warnings_containing(const std::string& text) {
    std::lock_guard lock(mutex);
    std::vector<std::string> found;
    for (const auto& [level, m] : log) {
      if (level == JW_LOG_WARNING && m.find(text) != std::string::npos)
        found.push_back(m);
    }
    return found;
  }
};

WarmupRequest scale_request(std::initializer_list<WarmupValue> n_values) {
  WarmupRequest r;
  r.kernel_name = kScale;
  r.axes = {{"x", WarmupAxis{{TensorChoice{JW_DTYPE_FLOAT32, true, {}}}, {}}},
            {"n", WarmupAxis{n_values, {}}}};
  return r;
}

}  // namespace

TEST_CASE(
    "given entries of a warmup's keys under another fingerprint, when the "
    "warmup compiles them, then one warning names the factor and the count, "
    "and the counts are a warmup's") {
  TemporaryDirectory dir("jitwarm-miss-warmup-");
  const std::vector<WarmupRequest> requests = {
      scale_request({__int128{1}, __int128{16}, __int128{7}})};
  {
    LoggedRuntime first(dir.path());
    const std::vector<CompileKey> plan = first.runtime.warmup_plan(requests);
    REQUIRE(plan.size() == 3);
    // Two of them cached by an older build of the plugin.
    DiskCache disk(dir.path(), "", 0, nullptr);
    for (std::size_t i = 0; i < 2; ++i)
      REQUIRE(disk.store(EntryRef(plan[i], "fake-scale-v0"), artifact()));
    const MissExplanation before = first.runtime.explain_miss(plan[0]);
    CHECK_FALSE(before.would_hit);
    CHECK(factor_names(before) == Names{"fingerprint line"});
  }
  LoggedRuntime second(dir.path());
  const WarmupResult result = second.runtime.warmup(requests);
  CHECK(result.compiled == 3);
  CHECK(result.cached == 0);
  const std::vector<std::string> warnings =
      second.warnings_containing("differs only in");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings.front().find("3 keys, 2 of which") != std::string::npos);
  CHECK(warnings.front().find("fingerprint line (2 keys)") !=
        std::string::npos);
  const std::vector<CompileKey> plan = second.runtime.warmup_plan(requests);
  CHECK(second.runtime.explain_miss(plan[0]).would_hit);

  SUBCASE("a warmup that compiles nothing scans nothing, warns nothing") {
    LoggedRuntime third(dir.path());
    CHECK(third.runtime.warmup(requests).cached == 3);
    CHECK(third.warnings_containing("differs only in").empty());
  }
}

TEST_CASE(
    "given a cache with only other specializations of a kernel, when a "
    "warmup compiles new ones, then it does not warn") {
  TemporaryDirectory dir("jitwarm-miss-quiet-");
  {
    LoggedRuntime first(dir.path());
    CHECK(first.runtime.warmup({scale_request({__int128{1}})}).compiled == 1);
  }
  LoggedRuntime second(dir.path());
  const std::vector<WarmupRequest> wider = {scale_request({__int128{7}})};
  CHECK(second.runtime.warmup(wider).compiled == 1);
  CHECK(second.warnings_containing("differs only in").empty());
  CHECK_THROWS_AS(
      second.runtime.explain_miss(key_for("cuda:sm_90", JW_INT_CLASS_ONE)),
      Error);
}
