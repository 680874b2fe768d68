// Host time per launch, side by side in one process: the raw driver call of
// the very function jitwarm launches, with the same arguments, against a
// jitwarm launch through the C++ API and through the C API, plus the launch
// path's signature + lookup alone and derive_key alone. The kernel is
// expand of one request (int32), whose device work is negligible.
//
//   jitwarm-bench-launch-overhead [--platform cpu|cuda|hip]
//                                 [--iterations N] [--rounds R] [--json]
//
// cpu: the "raw" call is the reference plugin's prepared instantiation run
// directly, so jitwarm's overhead is what the core and the C ABI add.
// cuda/hip: raw cuLaunchKernel / hipModuleLaunchKernel of the artifact's
// function on the same stream, grid and arguments. Launches go in batches
// of 256 with a synchronize between batches (not timed), so the device's
// launch queue never fills and blocks the host.
#include <jitwarm/jitwarm.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "kernel_definitions.hpp"
#include "reference_cpu.hpp"
#if JITWARM_BENCH_CUDA
#include "cuda_device_driver.hpp"
#endif
#if JITWARM_BENCH_HIP
#include "hip_device_driver.hpp"
#endif

using namespace jitwarm;

namespace {

constexpr const char* kExpand = "vllm.v1.sample.rejection_sampler.expand";
constexpr int kBatch = 256;

struct Options {
  std::string platform = "cpu";
  int iterations = 20000;
  int rounds = 5;
  bool json = false;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Host nanoseconds per call of each of `bodies`, the bodies taking turns
// batch by batch (each batch of kBatch calls timed alone, `sync` untimed
// after it), so that a host whose speed drifts (other tenants, clocks; over
// milliseconds as well as seconds) slows them alike.
struct InterleavedTimes {
  // Per body, the mean over each round.
  std::vector<std::vector<double>> rounds;
  // Per body, each batch; batch k of every body ran in the same turn.
  std::vector<std::vector<double>> batches;

  // The median over turns of body `b`'s batch minus body 0's.
  double median_over_first(std::size_t b) const {
    std::vector<double> differences;
    for (std::size_t k = 0; k < batches[b].size(); ++k) {
      differences.push_back(batches[b][k] - batches[0][k]);
    }
    return median(std::move(differences));
  }
};

InterleavedTimes time_interleaved(
    const Options& o, const std::vector<std::function<void()>>& bodies,
    const std::function<void()>& sync) {
  InterleavedTimes times;
  times.rounds.resize(bodies.size());
  times.batches.resize(bodies.size());
  for (int r = 0; r < o.rounds; ++r) {
    std::vector<double> total(bodies.size(), 0);
    for (int done = 0; done < o.iterations; done += kBatch) {
      const int n = std::min(kBatch, o.iterations - done);
      for (std::size_t b = 0; b < bodies.size(); ++b) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) bodies[b]();
        const double nanoseconds = std::chrono::duration<double, std::nano>(
                                       std::chrono::steady_clock::now() - start)
                                       .count();
        total[b] += nanoseconds;
        times.batches[b].push_back(nanoseconds / n);
        if (sync) sync();
      }
    }
    for (std::size_t b = 0; b < bodies.size(); ++b) {
      times.rounds[b].push_back(total[b] / o.iterations);
    }
  }
  return times;
}

// Median over rounds of the mean host nanoseconds per call of `body`;
// `sync` runs between batches, untimed.
double time_per_call(const Options& o, const std::function<void()>& body,
                     const std::function<void()>& sync) {
  return median(time_interleaved(o, {body}, sync).rounds[0]);
}

struct Measurement {
  std::string name;
  double nanoseconds;
  // For a launch measured in turns with the raw call: the median over
  // rounds of (this launch - the raw call) in the same round.
  std::optional<double> over_raw = std::nullopt;
  // What over_raw is over when not the first measurement (the raw call).
  std::string over = {};
};

// Device buffers and arguments of expand for one request, on `platform`.
struct ExpandCall {
  const jw_platform_desc& platform;
  void* x = nullptr;
  void* cu = nullptr;
  void* out = nullptr;
  jw_tensor tx{}, tcu{}, tout{};
  std::array<jw_arg_value, 6> args{};
  alignas(16) std::array<int32_t, 4> host{};

  ExpandCall(Runtime& runtime, const std::string& name, bool device)
      : platform(runtime.platform(name)) {
    const int64_t one[] = {1};
    const int32_t device_index = device ? 0 : -1;
    if (device) {
      for (void** p : {&x, &cu, &out}) {
        if (platform.allocate(platform.user_data, 0, 16, p) != JW_OK)
          throw Error(JW_ERROR_OUT_OF_MEMORY, "allocate failed");
      }
      const int32_t values[] = {5, 1};
      copy_in(x, &values[0]);
      copy_in(cu, &values[1]);
    } else {
      host = {5, 1, 0, 0};
      x = &host[0];
      cu = &host[1];
      out = &host[2];
    }
    tx = make_tensor(x, JW_DTYPE_INT32, one, device_index);
    tcu = make_tensor(cu, JW_DTYPE_INT32, one, device_index);
    tout = make_tensor(out, JW_DTYPE_INT32, one, device_index);
    args = {arg(tout), arg(tx), arg(tcu), arg_int(5), arg_int(0), arg_int(8)};
  }
  void copy_in(void* dst, const int32_t* src) {
    platform.copy(platform.user_data, 0, dst, src, sizeof(int32_t),
                  JW_COPY_HOST_TO_DEVICE, nullptr);
  }
};

// How many batches each body of time_interleaved runs.
int batches_per_body(const Options& o) {
  return o.rounds * ((o.iterations + kBatch - 1) / kBatch);
}

void report(const Options& o, const std::string& device,
            const std::vector<Measurement>& m) {
  if (o.json) {
    std::cout << "{\"platform\": \"" << o.platform << "\", \"device\": \""
              << device << "\", \"iterations\": " << o.iterations
              << ", \"rounds\": " << o.rounds << ", \"ns_per_call\": {";
    for (std::size_t i = 0; i < m.size(); ++i) {
      std::cout << (i ? ", " : "") << "\"" << m[i].name
                << "\": " << fmt::format("{:.1f}", m[i].nanoseconds);
    }
    std::cout << "}, \"ns_over_raw\": {";
    bool first = true;
    for (const Measurement& x : m) {
      if (!x.over_raw || !x.over.empty()) continue;
      std::cout << (first ? "" : ", ") << "\"" << x.name
                << "\": " << fmt::format("{:.1f}", *x.over_raw);
      first = false;
    }
    std::cout << "}, \"ns_over_untuned\": {";
    first = true;
    for (const Measurement& x : m) {
      if (!x.over_raw || x.over.empty()) continue;
      std::cout << (first ? "" : ", ") << "\"" << x.name
                << "\": " << fmt::format("{:.1f}", *x.over_raw);
      first = false;
    }
    std::cout << "}}\n";
    return;
  }
  std::cout << fmt::format("{} ({}), {} iterations x {} rounds (median):\n",
                           o.platform, device, o.iterations, o.rounds);
  for (const Measurement& x : m) {
    std::cout << fmt::format("  {:<34} {:8.1f} ns", x.name, x.nanoseconds);
    if (x.over_raw) {
      std::cout << fmt::format(
          "   ({:+.1f} ns over {}: the median of {} per-batch differences)",
          *x.over_raw, x.over.empty() ? m.front().name : x.over,
          batches_per_body(o));
    }
    std::cout << "\n";
  }
}

// What every platform measures: its raw call (`raw_name`, `raw`) and
// jitwarm's launches through C++ and C, in turns batch by batch, then the
// parts of a jitwarm launch alone.
void measure_jitwarm(const Options& o, Runtime& runtime,
                     const KernelHandle& expand, jw_kernel_handle* c_expand,
                     ExpandCall& call, void* stream,
                     const std::function<void()>& sync,
                     const std::string& raw_name,
                     const std::function<void()>& raw,
                     std::vector<Measurement>& out) {
  LaunchOptions launch;
  launch.platform = o.platform;
  launch.stream = stream;
  const std::vector<std::function<void()>> bodies{
      raw, [&] { expand.launch(call.args, launch); },
      [&] {
        if (jw_kernel_launch(c_expand, o.platform.c_str(), 0, call.args.data(),
                             call.args.size(), stream) != JW_OK)
          throw Error(JW_ERROR_LAUNCH_FAILED, jw_last_error());
      }};
  const InterleavedTimes times = time_interleaved(o, bodies, sync);
  const auto& rounds = times.rounds;
  const auto over_raw = [&](std::size_t b) {
    return times.median_over_first(b);
  };
  out.push_back({raw_name, median(rounds[0]), std::nullopt});
  out.push_back(
      {"jitwarm launch (C++ KernelHandle)", median(rounds[1]), over_raw(1)});
  out.push_back(
      {"jitwarm launch (C jw_kernel_launch)", median(rounds[2]), over_raw(2)});
  out.push_back(
      {"signature + prepared lookup",
       time_per_call(o,
                     [&] {
                       if (!expand.is_prepared(call.args, {o.platform, 0}))
                         throw Error(JW_ERROR_INTERNAL, "not prepared");
                     },
                     {})});
  const KernelSchema& schema = expand.schema();
  const std::string target = runtime.target_for(o.platform);
  out.push_back({"derive_key alone",
                 time_per_call(o,
                               [&] {
                                 const CompileKey key = derive_key(
                                     schema, call.args, target, "bench");
                                 if (key.params().empty()) std::abort();
                               },
                               {})});
}

// A launch of a tuned key against the same launch untuned (docs/tuning.md:
// a stored winner must cost nothing per launch): rms_norm of one row of 64
// floats in two runtimes, one with a stored winner (a config other than the
// default, which the measure below makes win) and one without, in turns
// batch by batch. Skipped where rms_norm is not tunable (the CPU
// reference).
void measure_tuned_launch(const Options& o, void* stream,
                          const std::function<void()>& sync,
                          std::vector<Measurement>& out) {
  constexpr const char* kRmsNorm =
      "vllm.model_executor.layers.layernorm.rms_norm";
  RuntimeOptions options;
  options.no_cache_dir = true;
  options.no_remote_cache = true;
  // `control`, a second untuned runtime timed last, shows what a body's
  // place in the turns costs alone.
  Runtime untuned(options), tuned(options), control(options);
  untuned.load_plugins();
  tuned.load_plugins();
  control.load_plugins();
  const jw_platform_desc& platform = untuned.platform(o.platform);
  const int64_t row[] = {1, 64}, weight[] = {64};
  std::array<void*, 3> buffers{};
  for (void*& p : buffers) {
    if (platform.allocate(platform.user_data, 0, 64 * sizeof(float), &p) !=
        JW_OK)
      throw Error(JW_ERROR_OUT_OF_MEMORY, "allocate failed");
    const std::vector<float> ones(64, 1.0f);
    platform.copy(platform.user_data, 0, p, ones.data(), 64 * sizeof(float),
                  JW_COPY_HOST_TO_DEVICE, nullptr);
  }
  const jw_tensor tout = make_tensor(buffers[0], JW_DTYPE_FLOAT32, row, 0);
  const jw_tensor tx = make_tensor(buffers[1], JW_DTYPE_FLOAT32, row, 0);
  const jw_tensor tw = make_tensor(buffers[2], JW_DTYPE_FLOAT32, weight, 0);
  const std::array<jw_arg_value, 7> args = {
      arg(tout),       arg(tx),    arg_int(64), arg(tw),
      arg_float(1e-6), arg_int(1), arg_int(64)};
  const LaunchOptions launch{o.platform, 0, stream};
  const KernelHandle plain = untuned.kernel(kRmsNorm);
  const KernelHandle winner = tuned.kernel(kRmsNorm);
  const KernelHandle plain_again = control.kernel(kRmsNorm);
  if (tuned.tune_candidates(winner.key_for(args, launch)).size() < 2) {
    for (void* p : buffers) platform.free_memory(platform.user_data, 0, p);
    return;
  }
  TuneOptions tuning;
  tuning.launch = launch;
  // The first config that is not the default wins: ties go to the earlier.
  tuning.measure = [](const CompileKey& candidate,
                      const std::function<void()>& launch_once) {
    launch_once();
    return candidate.config().empty() ? 2.0 : 1.0;
  };
  const TuneResult result = winner.tune(args, tuning);
  // Compiled and prepared before timing.
  for (const KernelHandle* k : {&plain, &winner, &plain_again})
    k->launch(args, launch);
  sync();
  const InterleavedTimes times =
      time_interleaved(o,
                       {[&] { plain.launch(args, launch); },
                        [&] { winner.launch(args, launch); },
                        [&] { plain_again.launch(args, launch); }},
                       sync);
  out.push_back({"rms_norm launch, untuned key", median(times.rounds[0])});
  out.push_back(
      {fmt::format("rms_norm launch, tuned {}", tune_config_text(result.best)),
       median(times.rounds[1]), times.median_over_first(1), "the untuned key"});
  out.push_back({"rms_norm launch, untuned again (control)",
                 median(times.rounds[2]), times.median_over_first(2),
                 "the untuned key"});
  for (void* p : buffers) platform.free_memory(platform.user_data, 0, p);
}

int run(const Options& o) {
  // The C API runtime is the one measured for both APIs, so the C++ handle
  // and the C handle share prepared launches and artifacts.
  // Neither runtime has a persistent or remote cache: a first launch must
  // compile, and the bench leaves the user's cache alone.
  jw_runtime* c_runtime = nullptr;
  jw_runtime_options c_options{};
  c_options.struct_size = sizeof(c_options);
  c_options.no_cache_dir = 1;
  c_options.no_remote_cache = 1;
  if (jw_runtime_create_with_options(&c_options, &c_runtime) != JW_OK ||
      jw_runtime_load_plugins(c_runtime, nullptr, 0) != JW_OK) {
    throw Error(JW_ERROR_INTERNAL, jw_last_error());
  }
  RuntimeOptions options;
  options.no_cache_dir = true;
  options.no_remote_cache = true;
  Runtime runtime(options);
  runtime.load_plugins();
  const bool device = o.platform != "cpu";
  if (device) {
    bool can_launch = false;
    for (const PlatformInfo& p : runtime.platforms()) {
      if (p.name == o.platform) can_launch = p.can_launch && p.device_count > 0;
    }
    if (!can_launch) {
      std::cout << o.platform << ": no device here; nothing measured\n";
      jw_runtime_destroy(c_runtime);
      return 0;
    }
  }
  const KernelHandle expand = runtime.kernel(kExpand);
  jw_kernel_handle* c_expand = nullptr;
  (void)c_expand;
  ExpandCall call(runtime, o.platform, device);
  LaunchOptions first;
  first.platform = o.platform;
  // A first launch that must compile: keys no one warmed (MAX_NUM_TOKENS
  // 9 to 13), each compiled, loaded and launched by its own first launch;
  // the median of five.
  std::vector<double> first_launch_ms;
  for (int max_tokens = 9; max_tokens <= 13; ++max_tokens) {
    auto cold = call.args;
    cold[5] = arg_int(max_tokens);
    const auto start = std::chrono::steady_clock::now();
    expand.launch(cold, first);
    const jw_platform_desc& platform = runtime.platform(o.platform);
    if (platform.synchronize != nullptr) {
      platform.synchronize(platform.user_data, 0, nullptr);
    }
    first_launch_ms.push_back(std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
  }
  std::sort(first_launch_ms.begin(), first_launch_ms.end());
  expand.launch(call.args, first);  // compile and prepare the timed key
  const CompileKey key = expand.key_for(call.args, first);
  const auto artifact = runtime.cached_artifact(key);
  if (!artifact) throw Error(JW_ERROR_INTERNAL, "the artifact is not cached");
  // A second runtime for the C API would compile again: the C handle is
  // measured on its own runtime after one warming launch.
  if (jw_kernel_find(c_runtime, kExpand, &c_expand) != JW_OK ||
      jw_kernel_launch(c_expand, o.platform.c_str(), 0, call.args.data(),
                       call.args.size(), nullptr) != JW_OK) {
    throw Error(JW_ERROR_INTERNAL, jw_last_error());
  }

  std::vector<Measurement> m;
  std::string device_name = runtime.target_for(o.platform);
  if (o.platform == "cpu") {
    const reference_cpu::KernelDefinition& definition =
        *reference_cpu::find_kernel_definition(kExpand);
    const reference_cpu::Instantiation& instantiation =
        reference_cpu::prepare_instantiation(
            kExpand,
            jw_artifact_view{sizeof(jw_artifact_view), nullptr, nullptr,
                             artifact->binary.data(), artifact->binary.size(),
                             std::string(artifact->format).c_str(),
                             std::string(artifact->entry_point).c_str(), 0});
    measure_jitwarm(
        o, runtime, expand, c_expand, call, nullptr, {},
        "kernel alone (reference, prepared)",
        [&] {
          reference_cpu::run_prepared(definition, instantiation, call.args);
        },
        m);
  }
#if JITWARM_BENCH_CUDA
  else if (o.platform == "cuda") {
    using namespace jitwarm::cuda;
    const gpu::DynamicLibrary library =
        gpu::DynamicLibrary::open_first({"libcuda.so.1"});
    const CudaDriverApi api(library);
    const auto check = [](CUresult r, const char* what) {
      if (r != CUDA_SUCCESS) throw Error(JW_ERROR_LAUNCH_FAILED, what);
    };
    CUdevice dev = 0;
    CUcontext context = nullptr;
    check(api.cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(api.cuDevicePrimaryCtxRetain(&context, dev), "retain");
    check(api.cuCtxPushCurrent(context), "push");
    CUstream stream = nullptr;
    check(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "stream");
    const std::string image(artifact->binary);
    const std::string entry(artifact->entry_point);
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    check(api.cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
    check(api.cuModuleGetFunction(&function, module, entry.c_str()),
          "cuModuleGetFunction");
    // expand's parameters for this key: three pointers, replace_from and
    // replace_to as int32 (x is int32), then B (int64).
    CUdeviceptr out = reinterpret_cast<CUdeviceptr>(call.out);
    CUdeviceptr x = reinterpret_cast<CUdeviceptr>(call.x);
    CUdeviceptr cu = reinterpret_cast<CUdeviceptr>(call.cu);
    int32_t from = 5, to = 0;
    int64_t batch = 1;
    void* params[] = {&out, &x, &cu, &from, &to, &batch};
    const auto sync = [&] {
      check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
    };
    const auto raw_launch = [&] {
      check(api.cuLaunchKernel(function, 1, 1, 1, 64, 1, 1, 0, stream, params,
                               nullptr),
            "cuLaunchKernel");
    };
    // A prepared launch asks the driver nothing but the launch itself (the
    // plugin tries the context its key last ran in: gpu_launcher.cpp), so
    // the raw call is all of the driver's part.
    measure_jitwarm(o, runtime, expand, c_expand, call, stream, sync,
                    "raw cuLaunchKernel", raw_launch, m);
    measure_tuned_launch(o, stream, sync, m);
    sync();
    api.cuModuleUnload(module);
  }
#endif
#if JITWARM_BENCH_HIP
  else if (o.platform == "hip") {
    using namespace jitwarm::hip;
    const gpu::DynamicLibrary library =
        gpu::DynamicLibrary::open_first({"libamdhip64.so.5", "libamdhip64.so"});
    const HipRuntimeApi api(library);
    const auto check = [](hipError_t r, const char* what) {
      if (r != hipSuccess) throw Error(JW_ERROR_LAUNCH_FAILED, what);
    };
    check(api.hipSetDevice(0), "hipSetDevice");
    hipModule_t module = nullptr;
    hipFunction_t function = nullptr;
    check(api.hipModuleLoadData(&module, artifact->binary.data()),
          "hipModuleLoadData");
    const std::string entry(artifact->entry_point);
    check(api.hipModuleGetFunction(&function, module, entry.c_str()),
          "hipModuleGetFunction");
    void* out = call.out;
    void* x = call.x;
    void* cu = call.cu;
    int32_t from = 5, to = 0;
    int64_t batch = 1;
    void* params[] = {&out, &x, &cu, &from, &to, &batch};
    const auto sync = [&] {
      check(api.hipStreamSynchronize(nullptr), "hipStreamSynchronize");
    };
    measure_jitwarm(
        o, runtime, expand, c_expand, call, nullptr, sync,
        "raw hipModuleLaunchKernel",
        [&] {
          check(api.hipModuleLaunchKernel(function, 1, 1, 1, 64, 1, 1, 0,
                                          nullptr, params, nullptr),
                "hipModuleLaunchKernel");
        },
        m);
    measure_tuned_launch(o, nullptr, sync, m);
    sync();
    static_cast<void>(api.hipModuleUnload(module));
  }
#endif
  else {
    throw Error(JW_ERROR_UNSUPPORTED,
                "this build cannot measure platform " + o.platform);
  }
  report(o, device_name, m);
  // One compile per first launch above, and the timed key's; any other
  // was a timed launch's, which would make the numbers meaningless.
  const uint64_t timed_compiles =
      runtime.cache_stats().compiles - 1 - first_launch_ms.size();
  if (!o.json) {
    std::cout << fmt::format(
        "  compiles during the timed launches: {}\n"
        "  first launch that compiles (compile, load, launch; median of {} "
        "keys): {:.1f} ms\n",
        timed_compiles, first_launch_ms.size(),
        first_launch_ms[first_launch_ms.size() / 2]);
  }
  jw_kernel_release(c_expand);
  jw_runtime_destroy(c_runtime);
  return timed_compiles == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "jitwarm-bench-launch-overhead: " << a
                  << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--platform") {
      o.platform = value();
    } else if (a == "--iterations") {
      o.iterations = std::max(1, std::stoi(value()));
    } else if (a == "--rounds") {
      o.rounds = std::max(1, std::stoi(value()));
    } else if (a == "--json") {
      o.json = true;
    } else {
      std::cerr << "usage: jitwarm-bench-launch-overhead [--platform "
                   "cpu|cuda|hip] [--iterations N] [--rounds R] [--json]\n";
      return 2;
    }
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "jitwarm-bench-launch-overhead: " << e.what() << "\n";
    return 1;
  }
}
