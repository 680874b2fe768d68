// Tuning (docs/tuning.md) through the core and the CUDA plugin, without a
// GPU: libcuda.so.1 is tests/gpu/model_libcuda, whose launches run nothing
// but go through the real plugin's launch path, so every candidate is a
// real NVRTC compile and a real (model) launch. Timings come from a
// measure the test gives (TuneOptions::measure), never from a clock, so
// which config wins is the test's choice and nothing depends on timing.
#include <jitwarm/jitwarm.hpp>

#include "redis_server.hpp"
#include "temporary_directory.hpp"

#include <doctest/doctest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace jitwarm;
namespace fs = std::filesystem;

namespace {

constexpr const char* kTunable = "example.kernels.tunable_scale";
constexpr const char* kPlain = "example.kernels.scale";
constexpr const char* kModelDevice = "jitwarm model GPU";  // model_libcuda

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The example kernel, and a copy of it whose block size is a choice.
struct Kernels {
  detail::TemporaryDirectory directory{"jitwarm-tuning-kernels-"};
  Kernels() {
    const fs::path example = EXAMPLE_KERNEL_DIR;
    std::ofstream(directory.path() / "scale.cu")
        << read_file(example / "scale.cu");
    std::ofstream(directory.path() / "scale.toml")
        << read_file(example / "scale.toml");
    std::string tunable = read_file(example / "scale.toml");
    tunable.replace(tunable.find(kPlain), std::string(kPlain).size(), kTunable);
    tunable.replace(
        tunable.find("[compile]\n"), 10,
        "[tune]\nchoices = [{ name = \"threads\", values = [256, 128, 512], "
        "default = 256 }]\n[compile]\n");
    tunable.replace(tunable.find("block = [\"256\"]"), 15,
                    "block = [\"threads\"]");
    tunable.replace(tunable.find("ceil_div(n, 256)"), 16,
                    "ceil_div(n, threads)");
    std::ofstream(directory.path() / "tunable_scale.toml") << tunable;
  }
};

// A runtime with the CUDA plugin and the kernels, on the caches `options`
// names.
std::unique_ptr<Runtime> runtime_with(const Kernels& kernels,
                                      RuntimeOptions options) {
  options.log = [](jw_log_level, const std::string&) {};
  auto runtime = std::make_unique<Runtime>(options);
  PluginLoadOptions load;
  load.search_path = {CUDA_PLUGIN};
  load.bundled_directories = {fs::path(CUDA_PLUGIN).parent_path().string()};
  load.kernel_path = {kernels.directory.path().string()};
  runtime->load_plugins(load);
  return runtime;
}

// The same on one cache directory and no remote tier.
std::unique_ptr<Runtime> runtime_on(const Kernels& kernels,
                                    const fs::path& cache_dir) {
  RuntimeOptions options;
  options.cache_dir = cache_dir.string();
  options.no_remote_cache = true;
  return runtime_with(kernels, std::move(options));
}

// out = x * factor over n floats, on the model's device 0.
struct ScaleOnDevice {
  explicit ScaleOnDevice(const Runtime& runtime, int64_t n = 256)
      : platform(runtime.platform("cuda")), elements(n) {
    for (void** p : {&out, &x}) {
      REQUIRE(platform.allocate(platform.user_data, 0,
                                static_cast<size_t>(n) * 4, p) == JW_OK);
    }
    const std::array<int64_t, 1> shape{n};
    out_tensor = make_tensor(out, JW_DTYPE_FLOAT32, shape, 0);
    x_tensor = make_tensor(x, JW_DTYPE_FLOAT32, shape, 0);
    values = {arg(out_tensor), arg(x_tensor), arg_int(n), arg_float(2.0)};
  }
  ~ScaleOnDevice() {
    for (void* p : {out, x}) platform.free_memory(platform.user_data, 0, p);
  }
  ScaleOnDevice(const ScaleOnDevice&) = delete;
  ScaleOnDevice& operator=(const ScaleOnDevice&) = delete;

  std::span<const jw_arg_value> args() const { return values; }

  const jw_platform_desc& platform;
  int64_t elements;
  void* out = nullptr;
  void* x = nullptr;
  jw_tensor out_tensor{}, x_tensor{};
  std::array<jw_arg_value, 4> values{};
};

// A measure that says `fast` is the fastest (1 us, the others 2 us), after
// launching each candidate twice; counts the candidates it measured.
struct FavouriteMeasure {
  TuneConfig fast;
  std::vector<std::string> measured;
  // Tuning options whose measure is this one (which must outlive them).
  TuneOptions options() {
    TuneOptions options;
    options.measure = [this](const CompileKey& candidate,
                             const std::function<void()>& launch_once) {
      launch_once();
      launch_once();
      measured.push_back(candidate.text());
      const TuneConfig& config = candidate.config();
      // The untuned key stands for the default config.
      const bool is_fast =
          config == fast ||
          (config.empty() && fast == TuneConfig{{"threads", 256}});
      return is_fast ? 1e-6 : 2e-6;
    };
    return options;
  }
};

}  // namespace

TEST_CASE(
    "given a tunable kernel tuned on a device, then the fastest config is "
    "stored for the device's kind, and a new runtime sharing the cache "
    "launches and warms it without measuring") {
  Kernels kernels;
  detail::TemporaryDirectory cache{"jitwarm-tuning-cache-"};
  CompileKey untuned("", "", "", {});
  {
    auto runtime = runtime_on(kernels, cache.path());
    CHECK(runtime->device_kind("cuda", 0) == kModelDevice);
    ScaleOnDevice scale(*runtime);
    untuned = runtime->kernel(kTunable).key_for(scale.args());
    REQUIRE(untuned.config().empty());

    FavouriteMeasure favourite{{{"threads", 512}}, {}};
    TuneOptions options = favourite.options();
    std::vector<std::size_t> progress;
    options.progress = [&](std::size_t done, std::size_t total,
                           const TuneTiming& timing) {
      CHECK(total == 3);
      CHECK(timing.error.empty());
      progress.push_back(done);
    };
    const TuneResult result = runtime->tune(kTunable, scale.args(), options);
    CHECK(progress == std::vector<std::size_t>{1, 2, 3});
    CHECK(favourite.measured.size() == 3);
    // The default is timed as the untuned key itself.
    CHECK(favourite.measured[0] == untuned.text());
    CHECK(result.key_text == untuned.text());
    CHECK(result.device_kind == kModelDevice);
    CHECK(result.best == TuneConfig{{"threads", 512}});
    CHECK(result.stored);
    REQUIRE(result.timings.size() == 3);
    CHECK(result.timings[0].config == TuneConfig{{"threads", 256}});
    CHECK(result.timings[2].seconds == doctest::Approx(1e-6));
    CHECK(result.to_text().find("{threads=512}") != std::string::npos);
    CHECK(result.to_text().find("<- best") != std::string::npos);

    // Found in this runtime, for this kind only.
    const std::optional<TuneResult> found =
        runtime->tune_result(untuned, kModelDevice);
    REQUIRE(found.has_value());
    CHECK(found->best == result.best);
    CHECK_FALSE(runtime->tune_result(untuned, "another GPU").has_value());
  }

  // A fresh runtime on the same cache: the result comes from disk, and a
  // launch compiles the winner only.
  auto fresh = runtime_on(kernels, cache.path());
  const std::optional<TuneResult> loaded =
      fresh->tune_result(untuned, kModelDevice);
  REQUIRE(loaded.has_value());
  CHECK(loaded->stored);
  CHECK(loaded->best == TuneConfig{{"threads", 512}});
  REQUIRE(loaded->timings.size() == 3);
  CHECK(loaded->timings[1].config == TuneConfig{{"threads", 128}});

  const CompileKey winner = untuned.with_config({{"threads", 512}});
  {
    ScaleOnDevice scale(*fresh);
    // key_for names the key a launch uses: the winner's.
    CHECK(fresh->kernel(kTunable).key_for(scale.args()) == winner);
    fresh->kernel(kTunable).launch(scale.args());
    CHECK(fresh->is_cached(winner));
    CHECK_FALSE(fresh->is_cached(untuned));
  }

  // A warmup for the model's kind warms the winner; for another kind (or
  // none, with a target given) the default.
  WarmupRequest request;
  request.kernel_name = kTunable;
  request.axes = {{"n", WarmupAxis{{__int128{256}}, {}}}};
  WarmupOptions for_model;
  for_model.target = untuned.target();
  for_model.device_kind = kModelDevice;
  CHECK(fresh->warmup_plan({request}, for_model) ==
        std::vector<CompileKey>{winner});
  CHECK(fresh->warmup_keys({untuned}, for_model).keys.at(0).key_text ==
        winner.text());
  WarmupOptions for_other = for_model;
  for_other.device_kind = "another GPU";
  CHECK(fresh->warmup_plan({request}, for_other) ==
        std::vector<CompileKey>{untuned});
  WarmupOptions for_none = for_model;
  for_none.device_kind.clear();
  CHECK(fresh->warmup_plan({request}, for_none) ==
        std::vector<CompileKey>{untuned});
  // Detected from device 0 when the target is.
  WarmupOptions detected;
  detected.platform = "cuda";
  CHECK(fresh->warmup_plan({request}, detected) ==
        std::vector<CompileKey>{winner});
}

TEST_CASE(
    "given a runtime that already launched a tunable key, when it tunes it, "
    "then its next launch prepares again and runs the winner") {
  Kernels kernels;
  detail::TemporaryDirectory cache{"jitwarm-tuning-cache-"};
  auto runtime = runtime_on(kernels, cache.path());
  ScaleOnDevice scale(*runtime);
  const KernelHandle kernel = runtime->kernel(kTunable);
  const CompileKey untuned = kernel.key_for(scale.args());
  kernel.launch(scale.args());
  REQUIRE(kernel.is_prepared(scale.args()));

  FavouriteMeasure favourite{{{"threads", 128}}, {}};
  TuneOptions options = favourite.options();
  REQUIRE(kernel.tune(scale.args(), options).best ==
          TuneConfig{{"threads", 128}});
  // The launch prepared with the default config is gone ...
  CHECK_FALSE(kernel.is_prepared(scale.args()));
  CHECK(kernel.key_for(scale.args()) ==
        untuned.with_config({{"threads", 128}}));
  // ... and the next launch prepares the winner's.
  kernel.launch(scale.args());
  CHECK(kernel.is_prepared(scale.args()));

  // Measuring without storing leaves prepared launches alone.
  options.store = false;
  kernel.tune(scale.args(), options);
  CHECK(kernel.is_prepared(scale.args()));
}

TEST_CASE(
    "given a tuning result, then the read-only system layer and the remote "
    "tier carry it to runtimes that share no cache directory") {
  Kernels kernels;
  FavouriteMeasure favourite{{{"threads", 512}}, {}};
  TuneOptions options = favourite.options();

  SUBCASE("the system layer") {
    detail::TemporaryDirectory tuned{"jitwarm-tuning-system-"};
    detail::TemporaryDirectory own{"jitwarm-tuning-own-"};
    CompileKey untuned("", "", "", {});
    {
      auto runtime = runtime_on(kernels, tuned.path());
      ScaleOnDevice scale(*runtime);
      untuned = runtime->kernel(kTunable).key_for(scale.args());
      REQUIRE(runtime->tune(kTunable, scale.args(), options).stored);
    }
    RuntimeOptions reader;
    reader.cache_dir = own.path().string();
    reader.system_cache_dir = tuned.path().string();
    reader.no_remote_cache = true;
    auto runtime = runtime_with(kernels, reader);
    const std::optional<TuneResult> found =
        runtime->tune_result(untuned, kModelDevice);
    REQUIRE(found.has_value());
    CHECK(found->best == TuneConfig{{"threads", 512}});
    ScaleOnDevice scale(*runtime);
    CHECK(runtime->kernel(kTunable).key_for(scale.args()) ==
          untuned.with_config({{"threads", 512}}));
  }

  SUBCASE("the remote tier") {
    if (!test::RedisServer::available()) {
      MESSAGE("redis-server is not installed: the remote tier is not tested");
      return;
    }
    test::RedisServer server;
    RuntimeOptions remote_only;
    remote_only.no_cache_dir = true;
    remote_only.remote_cache = server.url();
    CompileKey untuned("", "", "", {});
    {
      auto runtime = runtime_with(kernels, remote_only);
      ScaleOnDevice scale(*runtime);
      untuned = runtime->kernel(kTunable).key_for(scale.args());
      REQUIRE(runtime->tune(kTunable, scale.args(), options).stored);
    }
    auto elsewhere = runtime_with(kernels, remote_only);
    const std::optional<TuneResult> found =
        elsewhere->tune_result(untuned, kModelDevice);
    REQUIRE(found.has_value());
    CHECK(found->best == TuneConfig{{"threads", 512}});
    ScaleOnDevice scale(*elsewhere);
    elsewhere->kernel(kTunable).launch(scale.args());
    CHECK(elsewhere->is_cached(untuned.with_config({{"threads", 512}})));
    CHECK_FALSE(elsewhere->is_cached(untuned));
  }
}

TEST_CASE(
    "given a tuning result, then it travels in a cache bundle to another "
    "cache, where a launch uses it") {
  Kernels kernels;
  detail::TemporaryDirectory cache{"jitwarm-tuning-cache-"};
  detail::TemporaryDirectory other{"jitwarm-tuning-other-"};
  detail::TemporaryDirectory bundle_dir{"jitwarm-tuning-bundle-"};
  CompileKey untuned("", "", "", {});
  {
    auto runtime = runtime_on(kernels, cache.path());
    ScaleOnDevice scale(*runtime);
    untuned = runtime->kernel(kTunable).key_for(scale.args());
    FavouriteMeasure favourite{{{"threads", 128}}, {}};
    TuneOptions options = favourite.options();
    REQUIRE(runtime->tune(kTunable, scale.args(), options).stored);
  }
  RuntimeOptions from;
  from.cache_dir = cache.path().string();
  RuntimeOptions to;
  to.cache_dir = other.path().string();
  const std::string bundle = (bundle_dir.path() / "fleet.jwb").string();
  export_cache_bundle(bundle, {}, from);
  import_cache_bundle(bundle, to);

  auto elsewhere = runtime_on(kernels, other.path());
  const std::optional<TuneResult> found =
      elsewhere->tune_result(untuned, kModelDevice);
  REQUIRE(found.has_value());
  CHECK(found->best == TuneConfig{{"threads", 128}});
  ScaleOnDevice scale(*elsewhere);
  elsewhere->kernel(kTunable).launch(scale.args());
  CHECK(elsewhere->is_cached(untuned.with_config({{"threads", 128}})));
}

TEST_CASE(
    "given the default config is fastest, then launches use the untuned "
    "key's binary, with no second entry for the same code") {
  Kernels kernels;
  detail::TemporaryDirectory cache{"jitwarm-tuning-cache-"};
  auto runtime = runtime_on(kernels, cache.path());
  ScaleOnDevice scale(*runtime);
  const CompileKey untuned = runtime->kernel(kTunable).key_for(scale.args());
  FavouriteMeasure favourite{{{"threads", 256}}, {}};
  TuneOptions options = favourite.options();
  CHECK(runtime->tune(kTunable, scale.args(), options).best ==
        TuneConfig{{"threads", 256}});
  CHECK_FALSE(runtime->is_cached(untuned.with_config({{"threads", 256}})));

  auto fresh = runtime_on(kernels, cache.path());
  ScaleOnDevice again(*fresh);
  fresh->kernel(kTunable).launch(again.args());
  CHECK(fresh->is_cached(untuned));
  WarmupOptions for_model;
  for_model.target = untuned.target();
  for_model.device_kind = kModelDevice;
  CHECK(fresh->warmup_keys({untuned}, for_model).keys.at(0).key_text ==
        untuned.text());
}

TEST_CASE(
    "given candidates that fail, then each failure is its candidate's, the "
    "others still compete, and tuning fails only when none ran") {
  Kernels kernels;
  detail::TemporaryDirectory cache{"jitwarm-tuning-cache-"};
  auto runtime = runtime_on(kernels, cache.path());
  ScaleOnDevice scale(*runtime);

  TuneOptions options;
  options.measure = [](const CompileKey& candidate,
                       const std::function<void()>&) {
    if (candidate.config() == TuneConfig{{"threads", 128}}) {
      throw Error(JW_ERROR_LAUNCH_FAILED, "the model refused it");
    }
    // A measure's nonsense is that candidate's error too.
    return candidate.config().empty() ? -1.0 : 3e-6;
  };
  const TuneResult result = runtime->tune(kTunable, scale.args(), options);
  REQUIRE(result.timings.size() == 3);
  CHECK(result.timings[0].error.find("-1 seconds") != std::string::npos);
  CHECK(result.timings[1].error.find("the model refused it") !=
        std::string::npos);
  CHECK(result.timings[2].error.empty());
  CHECK(result.best == TuneConfig{{"threads", 512}});
  CHECK(result.to_text().find("failed: the model refused it") !=
        std::string::npos);

  options.measure = [](const CompileKey&, const std::function<void()>&) {
    throw Error(JW_ERROR_LAUNCH_FAILED, "no luck");
    return 0.0;
  };
  options.store = false;
  try {
    runtime->tune(kTunable, scale.args(), options);
    FAIL("tuning with no candidate that ran succeeded");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_LAUNCH_FAILED);
    const std::string what = e.what();
    CHECK(what.find("no candidate ran") != std::string::npos);
    CHECK(what.find("{threads=128}: no luck") != std::string::npos);
    CHECK(what.find("{threads=512}: no luck") != std::string::npos);
  }
}

TEST_CASE(
    "given a kernel without [tune], then tuning it is refused naming why, "
    "and a launch counts only its own compile") {
  Kernels kernels;
  detail::TemporaryDirectory cache{"jitwarm-tuning-cache-"};
  auto runtime = runtime_on(kernels, cache.path());
  ScaleOnDevice scale(*runtime);
  try {
    runtime->tune(kPlain, scale.args());
    FAIL("tuning an untunable kernel succeeded");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("is not tunable") != std::string::npos);
  }
  const CompileKey key = runtime->kernel(kPlain).key_for(scale.args());
  CHECK_FALSE(runtime->tune_result(key, kModelDevice).has_value());
  const CacheStats before = runtime->cache_stats();
  runtime->kernel(kPlain).launch(scale.args());
  CHECK(runtime->is_cached(key));
  // One miss, the launch's own compile: no lookup of a tuning result.
  CHECK(runtime->cache_stats().misses == before.misses + 1);
}
