// CompiledKernelMemo (plugins/common/compiled_kernel_memo): one compile per
// program identity even under concurrency; failures are not remembered.
#include "compiled_kernel_memo.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

using jitwarm::gpu::CompiledKernel;
using jitwarm::gpu::CompiledKernelMemo;

namespace {

CompiledKernel kernel_named(std::string entry) {
  CompiledKernel k;
  k.binary = "binary of " + entry;
  k.format = "cubin";
  k.entry_point = std::move(entry);
  return k;
}

}  // namespace

TEST_CASE(
    "given the same identity twice, then the second request is served "
    "from the memo") {
  CompiledKernelMemo memo;
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return kernel_named("k");
  };
  const auto first = memo.get_or_compile("program A", compile);
  const auto second = memo.get_or_compile("program A", compile);
  const auto other = memo.get_or_compile("program B", compile);
  CHECK(compiles == 2);
  CHECK(first == second);
  CHECK(first != other);
  CHECK(memo.counters().requests == 3);
  CHECK(memo.counters().compiles == 2);
}

TEST_CASE(
    "given many threads asking for one program at once, then it "
    "compiles once and all get the same result") {
  CompiledKernelMemo memo;
  std::atomic<int> compiles{0};
  std::vector<std::shared_ptr<const CompiledKernel>> results(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = memo.get_or_compile("shared", [&] {
        ++compiles;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return kernel_named("shared");
      });
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(compiles.load() == 1);
  for (const auto& r : results) CHECK(r == results[0]);
}

TEST_CASE(
    "given a compile that fails, then the error reaches the caller and "
    "the next request compiles again") {
  CompiledKernelMemo memo;
  int attempts = 0;
  auto flaky = [&]() -> CompiledKernel {
    if (++attempts == 1) throw std::runtime_error("transient failure");
    return kernel_named("k");
  };
  CHECK_THROWS_WITH(memo.get_or_compile("p", flaky), "transient failure");
  const auto result = memo.get_or_compile("p", flaky);
  CHECK(result->entry_point == "k");
  CHECK(attempts == 2);
  CHECK(memo.counters().failures == 1);
}
