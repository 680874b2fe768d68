// driver_caches.hpp: what the CUDA and HIP drivers cache per device and per
// module. Made once even when many threads ask at once; a make or load that
// throws leaves nothing behind; clear visits everything made.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "driver_caches.hpp"

using jitwarm::gpu::ModuleCache;
using jitwarm::gpu::PerDevice;

TEST_CASE(
    "given many threads asking for a device's value, then it is made once") {
  PerDevice<int> values;
  values.resize(3);
  std::atomic<int> made{0};
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        const int device = (t + i) % 3;
        const int& value = values.get(device, [&] {
          made.fetch_add(1);
          return 100 + device;
        });
        if (value != 100 + device) wrong.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(made.load() == 3);
  CHECK(wrong.load() == 0);
  // The same object every time: callers may keep the reference.
  CHECK(&values.get(1, [] { return -1; }) == &values.get(1, [] { return -2; }));
}

TEST_CASE(
    "given a make that throws, then the device is made by the next get, and "
    "clear visits what was made") {
  PerDevice<int> values;
  values.resize(2);
  CHECK_THROWS_AS(
      values.get(0, []() -> int { throw std::runtime_error("no"); }),
      std::runtime_error);
  CHECK(values.get(0, [] { return 7; }) == 7);
  std::vector<std::pair<int32_t, int>> visited;
  values.clear(
      [&](int32_t device, int value) { visited.emplace_back(device, value); });
  CHECK(visited == std::vector<std::pair<int32_t, int>>{{0, 7}});
  // Cleared: made again on the next get.
  CHECK(values.get(0, [] { return 8; }) == 8);
}

TEST_CASE(
    "given threads missing the same module at once, then it is loaded once; "
    "a failed load is not kept") {
  ModuleCache<int, int, std::hash<int>> modules;
  std::atomic<int> loads{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        const int key = (t * 7 + i) % 5;
        const int module = modules.find_or_load(key, [&] {
          loads.fetch_add(1);
          return key * 10;
        });
        if (module != key * 10) wrong.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(loads.load() == 5);
  CHECK(wrong.load() == 0);
  CHECK(modules.size() == 5);

  CHECK_THROWS_AS(
      modules.find_or_load(
          9, []() -> int { throw std::runtime_error("bad image"); }),
      std::runtime_error);
  CHECK(modules.size() == 5);
  CHECK(modules.find_or_load(9, [] { return 90; }) == 90);

  int unloaded = 0;
  modules.clear([&](int key, int module) {
    CHECK(module == key * 10);
    ++unloaded;
  });
  CHECK(unloaded == 6);
  CHECK(modules.size() == 0);
}
