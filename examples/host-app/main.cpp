// A minimal host application: load the plugins, warm what it will launch,
// seal, serve. Run it twice with JITWARM_CACHE_DIR set: the second start
// compiles nothing at all, not even during warmup.
//
//   JITWARM_CACHE_DIR=/tmp/jw-cache ./jitwarm-example-host [manifest.toml]
#include <jitwarm/jitwarm.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  try {
    jitwarm::Runtime runtime;
    const jitwarm::PluginLoadReport report = runtime.load_plugins();
    std::printf("%zu plugin(s) loaded, %zu rejected\n", report.loaded_count(),
                report.rejected_count());

    // 1. Warm everything this server will launch, compile-only.
    std::vector<jitwarm::WarmupRequest> requests;
    if (argc > 1) {
      requests = jitwarm::load_warmup_manifest(argv[1]).requests;
    } else {
      jitwarm::WarmupRequest silu;
      silu.kernel_name = "vllm.model_executor.layers.activation.silu_and_mul";
      silu.axes = {
          {"x", {{jitwarm::TensorChoice{JW_DTYPE_FLOAT32, true, {}}}, {}}},
          {"H", {{}, {jitwarm::IntRange{1, 16385, 1}}}}};
      requests.push_back(silu);
    }
    const jitwarm::WarmupResult warmed =
        runtime.warmup(requests, {"cpu", "", 2, {}});
    std::printf(
        "warmup: %zu keys, %zu compiled, %zu from cache, %zu failed, %.3f s\n",
        warmed.keys.size(), warmed.compiled, warmed.cached, warmed.failed,
        warmed.seconds);

    // 2. From now on, a launch that would compile is refused.
    runtime.set_jit_monitor(jitwarm::JitMonitorMode::error);
    runtime.seal();

    // 3. Serve: silu_and_mul over a batch of 4 rows of width 4096.
    const int64_t rows = 4, width = 4096;
    std::vector<float> x(rows * 2 * width, 0.5f), out(rows * width);
    const int64_t x_shape[] = {rows, 2 * width};
    const int64_t out_shape[] = {rows, width};
    const jw_tensor tx =
        jitwarm::make_tensor(x.data(), JW_DTYPE_FLOAT32, x_shape);
    const jw_tensor tout =
        jitwarm::make_tensor(out.data(), JW_DTYPE_FLOAT32, out_shape);
    const jitwarm::KernelHandle silu =
        runtime.kernel("vllm.model_executor.layers.activation.silu_and_mul");
    const uint64_t before = runtime.cache_stats().compiles;
    silu.launch({jitwarm::arg(tout), jitwarm::arg(tx), jitwarm::arg_int(rows),
                 jitwarm::arg_int(width)},
                {"cpu", 0, nullptr});
    std::printf("out[0] = %.6f; compiles during serving: %llu\n", out[0],
                static_cast<unsigned long long>(runtime.cache_stats().compiles -
                                                before));
    return 0;
  } catch (const jitwarm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
