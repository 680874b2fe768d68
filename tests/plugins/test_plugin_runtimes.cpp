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

#ifdef CUDA_PLUGIN
namespace {

// Whether `runtime` can launch on a CUDA device (none on a GPU-less
// machine: then only the compile test above runs).
bool cuda_device(Runtime& runtime) {
  for (const PlatformInfo& p : runtime.platforms()) {
    if (p.name == "cuda") return p.can_launch && p.device_count > 0;
  }
  return false;
}

void check_ok(jw_status status, const char* what) {
  INFO(what << ": " << jw_last_error());
  REQUIRE(status == JW_OK);
}

// silu_and_mul on the device through `runtime`, read back.
std::vector<float> silu_on_device(Runtime& runtime, const std::vector<float>& x,
                                  int64_t t, int64_t h) {
  const jw_platform_desc& cuda = runtime.platform("cuda");
  void* dx = nullptr;
  void* dout = nullptr;
  check_ok(cuda.allocate(cuda.user_data, 0, x.size() * 4, &dx), "allocate");
  check_ok(cuda.allocate(cuda.user_data, 0, t * h * 4, &dout), "allocate");
  check_ok(cuda.copy(cuda.user_data, 0, dx, x.data(), x.size() * 4,
                     JW_COPY_HOST_TO_DEVICE, nullptr),
           "copy in");
  const std::vector<int64_t> x_shape{t, 2 * h}, out_shape{t, h};
  const jw_tensor xt = make_tensor(dx, JW_DTYPE_FLOAT32, x_shape, 0);
  const jw_tensor outt = make_tensor(dout, JW_DTYPE_FLOAT32, out_shape, 0);
  runtime.kernel(kSilu).launch({arg(outt), arg(xt), arg_int(t), arg_int(h)},
                               {"cuda", 0, nullptr});
  std::vector<float> out(static_cast<std::size_t>(t * h));
  check_ok(cuda.copy(cuda.user_data, 0, out.data(), dout, out.size() * 4,
                     JW_COPY_DEVICE_TO_HOST, nullptr),
           "copy out");
  check_ok(cuda.synchronize(cuda.user_data, 0, nullptr), "synchronize");
  check_ok(cuda.free_memory(cuda.user_data, 0, dx), "free");
  check_ok(cuda.free_memory(cuda.user_data, 0, dout), "free");
  return out;
}

}  // namespace

TEST_CASE(
    "given two live runtimes with the CUDA plugin on a machine with a CUDA "
    "device, then each launches with its own backend, before and after the "
    "other is destroyed, and matches the CPU reference") {
  auto first = runtime_with({CUDA_PLUGIN});
  auto second = runtime_with({CUDA_PLUGIN});
  if (!cuda_device(*first)) {
    MESSAGE(
        "no CUDA device: launches not run (the compile test covers this "
        "machine)");
    return;
  }
  const int64_t t = 4, h = 8;
  std::vector<float> x(static_cast<std::size_t>(t * 2 * h));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<float> expected(static_cast<std::size_t>(t * h));
  const std::vector<int64_t> x_shape{t, 2 * h}, out_shape{t, h};
  first->kernel(kSilu).launch(
      {arg(make_tensor(expected.data(), JW_DTYPE_FLOAT32, out_shape, -1)),
       arg(make_tensor(x.data(), JW_DTYPE_FLOAT32, x_shape, -1)), arg_int(t),
       arg_int(h)},
      {"cpu", 0, nullptr});
  const auto close_to_expected = [&](const std::vector<float>& got) {
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-5));
    }
  };
  close_to_expected(silu_on_device(*first, x, t, h));
  close_to_expected(silu_on_device(*second, x, t, h));
  first.reset();
  close_to_expected(silu_on_device(*second, x, t, h));
}
#endif
