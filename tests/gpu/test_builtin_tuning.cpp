// The built-in kernels' [tune] tables (rms_norm.toml, silu_and_mul.toml),
// through the core and both GPU plugins, compile-only: for the benchmark's
// shapes (bench/kernel_bandwidth.cpp: H = 8192, aligned tensors, bf16 and
// fp32) and a small odd shape, the candidates a tuner would measure are
// listed default first, and every one compiles for sm_90 (NVRTC) and gfx90a
// (hiprtc). A candidate that does not compile would fail the tuner's run on
// that device, so each is compiled here, not a sample. Then the plugins'
// instantiation and launch planning (plugins/common) show that the choices
// reach the kernel and its launch as the descriptors say.
#include <jitwarm/jitwarm.hpp>

#include <doctest/doctest.h>

#include "gpu_test_support.hpp"
#include "kernel_instantiation.hpp"
#include "kernel_set.hpp"
#include "launch_plan.hpp"
#include "temporary_directory.hpp"

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
  detail::TemporaryDirectory kernels{"jitwarm-kernels-"};
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
    load.kernel_path = {kernels.path().string()};
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
  // Five cached-access counts by three thread caps, less the pairs that
  // spill (8 or 16 accesses at 1024 threads, 16 at 512), for every key;
  // each with and without streaming where vectors may run.
  const char* fallback = "{accesses=4, max_block=1024, streaming=0}";
  const std::vector<Shape> shapes = {
      {"bf16 [16384, 8192]", rms_norm(JW_DTYPE_BFLOAT16, true, 8192, 16384), 24,
       fallback},
      {"fp32 [8192, 8192]", rms_norm(JW_DTYPE_FLOAT32, true, 8192, 8192), 24,
       fallback},
      // Aligned, but vectors only after the kernel's run-time check of H.
      {"bf16 [5, 37]", rms_norm(JW_DTYPE_BFLOAT16, true, 37, 5), 24, fallback},
      // Unaligned: elements only, so no streaming.
      {"fp32 [5, 37] unaligned", rms_norm(JW_DTYPE_FLOAT32, false, 37, 5), 12,
       fallback},
  };
  // Every choice reaches the source (the cache length, the launch bound,
  // the cache hint), so every config is its own program.
  warm_every_candidate(*t.runtime, shapes,
                       {"accesses", "max_block", "streaming"});
}

TEST_CASE(
    "given silu_and_mul keys of the benchmark's shapes and an odd one, then "
    "every tune candidate compiles for sm_90 and gfx90a, the default first "
    "and the untuned key's program") {
  TuningRuntime t;
  // Four thread caps by five unrolls, less the explicit unroll the kernel
  // already picks for the key (1 for bf16 vectors, 2 for fp32 vectors, 4
  // for elements; with vectors decided at run time, none) and an unroll of
  // 8 at 1024 threads; each with and without streaming where vectors may
  // run.
  const char* fallback = "{max_block=256, streaming=0, unroll=0}";
  const std::vector<Shape> shapes = {
      {"bf16 [16384, 2x8192]",
       silu_and_mul(JW_DTYPE_BFLOAT16, true, 8192, 16384), 30, fallback},
      {"fp32 [8192, 2x8192]", silu_and_mul(JW_DTYPE_FLOAT32, true, 8192, 8192),
       30, fallback},
      {"bf16 [5, 2x37]", silu_and_mul(JW_DTYPE_BFLOAT16, true, 37, 5), 38,
       fallback},
      {"fp32 [5, 2x37] unaligned", silu_and_mul(JW_DTYPE_FLOAT32, false, 37, 5),
       15, fallback},
  };
  // The unroll and the cache hint reach the source; the thread cap is the
  // launch's.
  warm_every_candidate(*t.runtime, shapes, {"streaming", "unroll"});
}

namespace {

using jitwarm::gpu::DeviceLimits;
using jitwarm::gpu::LaunchGeometry;
using jitwarm::gpu_test::TestArgs;
using jitwarm::gpu_test::TestKey;
namespace ks = jitwarm::kernel_set;

// `key` with a config, as the core hands a tuned key to the plugin (names
// sorted); no config is the untuned key.
struct Tuned {
  std::vector<jw_tune_value> config;
  jw_compile_key_view view;
  Tuned(TestKey& key, std::vector<jw_tune_value> values)
      : config(std::move(values)), view(key.view()) {
    view.config = config.data();
    view.num_config = static_cast<uint32_t>(config.size());
  }
};

jitwarm::gpu::GpuTarget target_of(const char* arch, uint32_t warp_size) {
  jitwarm::gpu::GpuTarget t;
  t.platform = arch[0] == 's' ? "cuda" : "hip";
  t.arch = arch;
  t.text = t.platform + ":" + arch;
  t.binary_format = arch[0] == 's' ? "cubin" : "hsaco";
  t.warp_size = warp_size;
  return t;
}

struct Planned {
  std::string name_expression;
  LaunchGeometry geometry;
};
Planned plan(Tuned& tuned, TestArgs& args, const char* arch = "sm_90",
             uint32_t warp_size = 32) {
  const auto inst =
      jitwarm::gpu::instantiate_kernel(tuned.view, target_of(arch, warp_size));
  DeviceLimits limits;
  limits.multiprocessor_count = 132;
  limits.warp_size = warp_size;
  return {inst.name_expression(),
          plan_launch(inst, tuned.view, args.values(), limits).geometry};
}

TestKey bench_key(std::string_view kernel, jw_dtype dtype) {
  TestKey key(kernel);
  key.dtype("x", dtype).integer("H", JW_INT_I32, JW_INT_CLASS_DIV16);
  if (kernel == ks::kRmsNorm) {
    key.integer("x_stride", JW_INT_I32, JW_INT_CLASS_DIV16);
  }
  return key;
}
TestArgs rms_args(jw_dtype dtype, int64_t rows, int64_t hidden) {
  TestArgs args(ks::kRmsNorm);
  args.tensor("out", dtype, {rows, hidden})
      .tensor("x", dtype, {rows, hidden})
      .integer("x_stride", hidden)
      .tensor("weight", dtype, {hidden})
      .floating("eps", 1e-6)
      .integer("T", rows)
      .integer("H", hidden);
  return args;
}
TestArgs silu_args(jw_dtype dtype, int64_t rows, int64_t hidden) {
  TestArgs args(ks::kSiluAndMul);
  args.tensor("out", dtype, {rows, hidden})
      .tensor("x", dtype, {rows, 2 * hidden})
      .integer("T", rows)
      .integer("H", hidden);
  return args;
}

}  // namespace

TEST_CASE(
    "given rms_norm configs, then the cached accesses size the block, the "
    "thread cap caps it and is the launch bound, and the default config is "
    "the untuned key") {
  TestKey bf16 = bench_key(ks::kRmsNorm, JW_DTYPE_BFLOAT16);
  TestArgs bf16_args = rms_args(JW_DTYPE_BFLOAT16, 16384, 8192);
  Tuned untuned(bf16, {});
  const Planned u = plan(untuned, bf16_args);
  CHECK(u.name_expression ==
        "jw::kernels::rms_norm<jw::bf16, jw::i32, 2, float, jw::i32, jw::i32, "
        "2, 2>");
  CHECK(u.geometry.text() == "grid (16384, 1, 1) block (256, 1, 1)");
  Tuned fallback(bf16,
                 {{"accesses", 4}, {"max_block", 1024}, {"streaming", 0}});
  CHECK(plan(fallback, bf16_args).name_expression == u.name_expression);
  CHECK(plan(fallback, bf16_args).geometry.text() == u.geometry.text());
  // 8192 bf16 = 1024 vectors: 8 per thread in 128 threads, the cap 512
  // (8 + 4 * 8 + 256 * 512 / 32 in the last argument).
  Tuned eight(bf16, {{"accesses", 8}, {"max_block", 512}, {"streaming", 0}});
  const Planned e = plan(eight, bf16_args);
  CHECK(e.name_expression ==
        "jw::kernels::rms_norm<jw::bf16, jw::i32, 2, float, jw::i32, jw::i32, "
        "2, 4130>");
  CHECK(e.geometry.text() == "grid (16384, 1, 1) block (128, 1, 1)");
  // Streaming: the same geometry, its bit in the last argument
  // (2 + 16384).
  Tuned streaming(bf16,
                  {{"accesses", 4}, {"max_block", 1024}, {"streaming", 1}});
  const Planned st = plan(streaming, bf16_args);
  CHECK(st.name_expression ==
        "jw::kernels::rms_norm<jw::bf16, jw::i32, 2, float, jw::i32, jw::i32, "
        "2, 16386>");
  CHECK(st.geometry.text() == u.geometry.text());
  // One per thread would take 1024 threads; the cap of 256 makes each
  // thread re-read three more.
  Tuned capped(bf16, {{"accesses", 1}, {"max_block", 256}, {"streaming", 0}});
  CHECK(plan(capped, bf16_args).geometry.block.x == 256);
  Tuned sixteen(bf16, {{"accesses", 16}, {"max_block", 256}, {"streaming", 0}});
  CHECK(plan(sixteen, bf16_args).geometry.block.x == 64);
  // fp32: 2048 vectors, 512 threads by default, 1024 with 2 each.
  TestKey fp32 = bench_key(ks::kRmsNorm, JW_DTYPE_FLOAT32);
  TestArgs fp32_args = rms_args(JW_DTYPE_FLOAT32, 8192, 8192);
  Tuned fp32_untuned(fp32, {});
  CHECK(plan(fp32_untuned, fp32_args).geometry.block.x == 512);
  Tuned two(fp32, {{"accesses", 2}, {"max_block", 1024}, {"streaming", 0}});
  CHECK(plan(two, fp32_args).geometry.block.x == 1024);
  // 64-wide wavefronts: whole wavefronts, at least one.
  TestArgs odd = rms_args(JW_DTYPE_BFLOAT16, 5, 37);
  TestKey odd_key(ks::kRmsNorm);
  odd_key.dtype("x", JW_DTYPE_BFLOAT16).target("hip:gfx90a");
  Tuned odd_sixteen(odd_key,
                    {{"accesses", 16}, {"max_block", 256}, {"streaming", 0}});
  CHECK(plan(odd_sixteen, odd, "gfx90a", 64).geometry.block.x == 64);
}

TEST_CASE(
    "given silu_and_mul configs, then the unroll reaches the kernel and the "
    "column blocks, the thread cap the block, and the default config is the "
    "untuned key") {
  TestKey bf16 = bench_key(ks::kSiluAndMul, JW_DTYPE_BFLOAT16);
  TestArgs bf16_args = silu_args(JW_DTYPE_BFLOAT16, 16384, 8192);
  Tuned untuned(bf16, {});
  const Planned u = plan(untuned, bf16_args);
  CHECK(u.name_expression ==
        "jw::kernels::silu_and_mul<jw::bf16, jw::i32, jw::i32, 2, 2>");
  // 1024 vectors a row, one per thread per step.
  CHECK(u.geometry.text() == "grid (16384, 4, 1) block (256, 1, 1)");
  Tuned fallback(bf16, {{"max_block", 256}, {"streaming", 0}, {"unroll", 0}});
  CHECK(plan(fallback, bf16_args).name_expression == u.name_expression);
  CHECK(plan(fallback, bf16_args).geometry.text() == u.geometry.text());
  Tuned wide(bf16, {{"max_block", 512}, {"streaming", 0}, {"unroll", 0}});
  const Planned w = plan(wide, bf16_args);
  CHECK(w.name_expression == u.name_expression);  // the launch's alone
  CHECK(w.geometry.text() == "grid (16384, 2, 1) block (512, 1, 1)");
  Tuned four(bf16, {{"max_block", 128}, {"streaming", 0}, {"unroll", 4}});
  const Planned f = plan(four, bf16_args);
  CHECK(f.name_expression ==
        "jw::kernels::silu_and_mul<jw::bf16, jw::i32, jw::i32, 2, 18>");
  CHECK(f.geometry.text() == "grid (16384, 2, 1) block (128, 1, 1)");
  // Streaming: its bit in the last argument (2 + 256), the same geometry.
  Tuned streaming(bf16, {{"max_block", 256}, {"streaming", 1}, {"unroll", 0}});
  const Planned st = plan(streaming, bf16_args);
  CHECK(st.name_expression ==
        "jw::kernels::silu_and_mul<jw::bf16, jw::i32, jw::i32, 2, 258>");
  CHECK(st.geometry.text() == u.geometry.text());
  // fp32: 2048 vectors, two per thread per step by default.
  TestKey fp32 = bench_key(ks::kSiluAndMul, JW_DTYPE_FLOAT32);
  TestArgs fp32_args = silu_args(JW_DTYPE_FLOAT32, 8192, 8192);
  Tuned fp32_untuned(fp32, {});
  CHECK(plan(fp32_untuned, fp32_args).geometry.text() ==
        "grid (8192, 4, 1) block (256, 1, 1)");
  Tuned one(fp32, {{"max_block", 1024}, {"streaming", 0}, {"unroll", 1}});
  CHECK(plan(one, fp32_args).geometry.text() ==
        "grid (8192, 2, 1) block (1024, 1, 1)");
}
