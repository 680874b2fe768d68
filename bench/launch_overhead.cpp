// Host-side cost of the launch path: argument validation, derive_key, the
// cache lookup and the call into the implementation, per launch, for a
// kernel whose own work is negligible (expand of one request on the CPU
// reference). Also derive_key alone.
//
//   jitwarm-bench-launch-overhead [--iterations N]
#include <jitwarm/jitwarm.hpp>

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <iostream>
#include <string>

using namespace jitwarm;

int main(int argc, char** argv) {
  int iterations = 200000;
  if (argc == 3 && std::string(argv[1]) == "--iterations") {
    iterations = std::stoi(argv[2]);
  }
  try {
    Runtime runtime;
    runtime.load_plugins();
    const KernelHandle expand =
        runtime.kernel("vllm.v1.sample.rejection_sampler.expand");
    alignas(16) int32_t x[1] = {5}, cu[1] = {1}, out[1] = {0};
    const int64_t one[] = {1};
    const jw_tensor tx = make_tensor(x, JW_DTYPE_INT32, one);
    const jw_tensor tcu = make_tensor(cu, JW_DTYPE_INT32, one);
    const jw_tensor tout = make_tensor(out, JW_DTYPE_INT32, one);
    const std::array args{arg(tout),  arg(tx),    arg(tcu),
                          arg_int(5), arg_int(0), arg_int(8)};
    const LaunchOptions cpu{"cpu", 0, nullptr};
    expand.launch(args, cpu);  // compile once

    const auto time = [&](auto&& body) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) body();
      return std::chrono::duration<double, std::nano>(
                 std::chrono::steady_clock::now() - start)
                 .count() /
             iterations;
    };
    const double launch_ns = time([&] { expand.launch(args, cpu); });
    const KernelSchema& schema = expand.schema();
    const double derive_ns = time([&] {
      const CompileKey key =
          derive_key(schema, args, "cpu:x86_64", "reference-cpu");
      if (key.params().empty()) std::abort();
    });
    std::cout << fmt::format(
        "{} iterations: launch through a KernelHandle {:.0f} ns; derive_key "
        "alone {:.0f} ns; compiles {}\n",
        iterations, launch_ns, derive_ns, runtime.cache_stats().compiles);
    return out[0] == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "jitwarm-bench-launch-overhead: " << e.what() << "\n";
    return 1;
  }
}
