// Several runtimes in one process, each loading the CUDA and HIP plugins:
// each gets its own registration (its own backend: compiler, driver,
// modules), and each compiles. Compile-only, so no GPU is needed.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace jitwarm;

namespace {

constexpr const char* kSilu =
    "vllm.model_executor.layers.activation.silu_and_mul";

std::unique_ptr<Runtime> runtime_with(const std::vector<std::string>& gpu) {
  auto runtime = std::make_unique<Runtime>(RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}});
  std::vector<std::string> path = {REFERENCE_PLUGIN};
  path.insert(path.end(), gpu.begin(), gpu.end());
  const PluginLoadReport report = runtime->load_plugins({path});
  for (const PluginLoadRecord& r : report.records) {
    CAPTURE(r.path);
    REQUIRE_MESSAGE(r.loaded, r.detail);
  }
  return runtime;
}

// Compiles silu_and_mul's first key for `target` (compile-only).
void compiles(Runtime& runtime, const std::string& target) {
  WarmupRequest silu;
  silu.kernel_name = kSilu;
  WarmupOptions options;
  options.target = target;
  const std::vector<CompileKey> plan = runtime.warmup_plan({silu}, options);
  REQUIRE_FALSE(plan.empty());
  const WarmupResult result = runtime.warmup_keys({plan.front()}, options);
  REQUIRE(result.keys.size() == 1);
  CHECK_MESSAGE(!result.keys[0].failed, result.keys[0].error);
  CHECK(result.compiled == 1);
  CHECK(runtime.is_cached(plan.front()));
}

std::vector<std::string> gpu_plugins() {
  std::vector<std::string> plugins;
#ifdef CUDA_PLUGIN
  plugins.push_back(CUDA_PLUGIN);
#endif
#ifdef HIP_PLUGIN
  plugins.push_back(HIP_PLUGIN);
#endif
  return plugins;
}

}  // namespace

TEST_CASE(
    "given two live runtimes that both load the CUDA and HIP plugins, then "
    "both load them and each compiles a key on each platform") {
  auto first = runtime_with(gpu_plugins());
  auto second = runtime_with(gpu_plugins());
  for (Runtime* runtime : {first.get(), second.get()}) {
#ifdef CUDA_PLUGIN
    compiles(*runtime, "cuda:sm_90");
#endif
#ifdef HIP_PLUGIN
    compiles(*runtime, "hip:gfx90a");
#endif
  }
  // One runtime's end leaves the other's backends alone; a new runtime
  // registers again.
  first.reset();
  auto third = runtime_with(gpu_plugins());
  for (Runtime* runtime : {second.get(), third.get()}) {
#ifdef CUDA_PLUGIN
    compiles(*runtime, "cuda:sm_80");
#endif
#ifdef HIP_PLUGIN
    compiles(*runtime, "hip:gfx942");
#endif
  }
}
