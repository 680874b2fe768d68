// The built-in kernels' [tune] tables (rms_norm.toml, silu_and_mul.toml),
// through the core and both GPU plugins, compile-only: for the benchmark's
// shapes (bench/kernel_bandwidth.cpp: H = 8192, aligned tensors, bf16 and
// fp32) and a small odd shape, the candidates a tuner would measure are
// listed default first, and every one compiles for sm_90 (NVRTC) and gfx90a
// (hiprtc). A candidate that does not compile would fail the tuner's run on
// that device, so each is compiled here, not a sample.
#include <jitwarm/jitwarm.hpp>

#include <doctest/doctest.h>

#include "temp_dir.hpp"

#include <filesystem>
#include <set>

namespace fs = std::filesystem;
using namespace jitwarm;

namespace {

constexpr const char* kRmsNorm =
    "vllm.model_executor.layers.layernorm.rms_norm";
constexpr const char* kSiluAndMul =
    "vllm.model_executor.layers.activation.silu_and_mul";

// The built-in kernels only: an empty kernel directory keeps installed or
// JITWARM_KERNEL_PATH kernels out, and no cache directory makes every key a
// real compile.
struct TuningRuntime {
  test::TempDir kernels{"kernels"};
  std::unique_ptr<Runtime> runtime;
  TuningRuntime() {
    RuntimeOptions options;
    options.log = [](jw_log_level, const std::string&) {};
    options.no_cache_dir = true;
    options.no_remote_cache = true;
    runtime = std::make_unique<Runtime>(options);
    PluginLoadOptions load;
    load.search_path = {CUDA_PLUGIN, HIP_PLUGIN, REFERENCE_PLUGIN};
    // The build's plugins stand for the installed (bundled) ones.
    for (const char* plugin : {CUDA_PLUGIN, HIP_PLUGIN, REFERENCE_PLUGIN}) {
      load.bundled_directories.push_back(fs::path(plugin).parent_path());
    }
    load.kernel_path = {kernels.path.string()};
    runtime->load_plugins(load);
  }
};

WarmupAxis one(__int128 value) {
  return WarmupAxis{{value}, {}};
}
WarmupAxis tensor(jw_dtype dtype, bool aligned) {
  return WarmupAxis{{TensorChoice{dtype, aligned, {}}}, {}};
}

// One key per request: out and weight follow x's dtype and alignment.
WarmupRequest rms_norm(jw_dtype dtype, bool aligned, int64_t hidden,
                       int64_t rows) {
  WarmupRequest r;
  r.kernel_name = kRmsNorm;
  r.axes = {{"x", tensor(dtype, aligned)},
            {"x_stride", one(hidden)},
            {"T", one(rows)},
            {"H", one(hidden)}};
  return r;
}
WarmupRequest silu_and_mul(jw_dtype dtype, bool aligned, int64_t hidden,
                           int64_t rows) {
  WarmupRequest r;
  r.kernel_name = kSiluAndMul;
  r.axes = {
      {"x", tensor(dtype, aligned)}, {"T", one(rows)}, {"H", one(hidden)}};
  return r;
}

// The values of the named choices in `config`, in that order.
std::string values_of(const TuneConfig& config,
                      const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    for (const TuneValue& v : config) {
      if (v.name == name) text += name + "=" + std::to_string(v.value) + " ";
    }
  }
  return text;
}

struct Shape {
  const char* what;
  WarmupRequest request;
  std::size_t candidates;  // the [tune] checks' count for this key
  const char* default_config;
};

// For each shape and target: the key's candidates, default first and as many
// as expected; every candidate and the untuned key compile; the default
// config builds exactly the untuned key's program (the same entry point, as
// its template arguments are the same); and each config whose choices reach
// the source (`source_choices`) is its own program.
void warm_every_candidate(Runtime& runtime, const std::vector<Shape>& shapes,
                          const std::vector<std::string>& source_choices) {
  for (const char* target : {"cuda:sm_90", "hip:gfx90a"}) {
    WarmupOptions options;
    options.target = target;
    for (const Shape& shape : shapes) {
      CAPTURE(target);
      CAPTURE(shape.what);
      const std::vector<CompileKey> keys =
          runtime.warmup_plan({shape.request}, options);
      REQUIRE(keys.size() == 1);
      const CompileKey& key = keys[0];
      const std::vector<TuneConfig> candidates = runtime.tune_candidates(key);
      REQUIRE(candidates.size() == shape.candidates);
      CHECK(tune_config_text(candidates[0]) == shape.default_config);
      CHECK(std::set<TuneConfig>(candidates.begin(), candidates.end()).size() ==
            candidates.size());

      std::vector<CompileKey> wanted = {key};
      for (const TuneConfig& c : candidates)
        wanted.push_back(key.with_config(c));
      const WarmupResult w = runtime.warmup_keys(wanted, options);
      REQUIRE(w.keys.size() == wanted.size());
      for (const WarmupKeyResult& k : w.keys) {
        CHECK_MESSAGE(!k.failed, k.key_text << ": " << k.error);
      }
      REQUIRE(w.failed == 0);

      std::vector<std::string> entries;
      for (const CompileKey& k : wanted) {
        const auto artifact = runtime.cached_artifact(k);
        REQUIRE(artifact.has_value());
        entries.emplace_back(artifact->entry_point);
      }
      CHECK(entries[1] == entries[0]);
      std::set<std::string> source_values;
      for (const TuneConfig& c : candidates) {
        source_values.insert(values_of(c, source_choices));
      }
      CHECK(std::set<std::string>(entries.begin(), entries.end()).size() ==
            source_values.size());
    }
  }
}

}  // namespace

TEST_CASE(
    "given rms_norm keys of the benchmark's shapes and an odd one, then "
    "every tune candidate compiles for sm_90 and gfx90a, the default first "
    "and the untuned key's program") {
  TuningRuntime t;
  // Five cached-access counts by three thread caps, less 16 accesses at
  // 1024 threads (the check against spilling), for every key.
  const char* fallback = "{accesses=4, max_block=1024}";
  const std::vector<Shape> shapes = {
      {"bf16 [16384, 8192]", rms_norm(JW_DTYPE_BFLOAT16, true, 8192, 16384), 14,
       fallback},
      {"fp32 [8192, 8192]", rms_norm(JW_DTYPE_FLOAT32, true, 8192, 8192), 14,
       fallback},
      // Aligned, but vectors only after the kernel's run-time check of H.
      {"bf16 [5, 37]", rms_norm(JW_DTYPE_BFLOAT16, true, 37, 5), 14, fallback},
      // Unaligned: elements only.
      {"fp32 [5, 37] unaligned", rms_norm(JW_DTYPE_FLOAT32, false, 37, 5), 14,
       fallback},
  };
  // Both choices reach the source (the cache length and the launch bound),
  // so every config is its own program.
  warm_every_candidate(*t.runtime, shapes, {"accesses", "max_block"});
}

TEST_CASE(
    "given silu_and_mul keys of the benchmark's shapes and an odd one, then "
    "every tune candidate compiles for sm_90 and gfx90a, the default first "
    "and the untuned key's program") {
  TuningRuntime t;
  // Four thread caps by five unrolls, less the explicit unroll the kernel
  // already picks for the key (1 for bf16 vectors, 2 for fp32 vectors, 4
  // for elements); with vectors decided at run time, none is left out.
  const char* fallback = "{max_block=256, unroll=0}";
  const std::vector<Shape> shapes = {
      {"bf16 [16384, 2x8192]",
       silu_and_mul(JW_DTYPE_BFLOAT16, true, 8192, 16384), 16, fallback},
      {"fp32 [8192, 2x8192]", silu_and_mul(JW_DTYPE_FLOAT32, true, 8192, 8192),
       16, fallback},
      {"bf16 [5, 2x37]", silu_and_mul(JW_DTYPE_BFLOAT16, true, 37, 5), 20,
       fallback},
      {"fp32 [5, 2x37] unaligned", silu_and_mul(JW_DTYPE_FLOAT32, false, 37, 5),
       16, fallback},
  };
  // Only the unroll reaches the source; the thread cap is the launch's.
  warm_every_candidate(*t.runtime, shapes, {"unroll"});
}
