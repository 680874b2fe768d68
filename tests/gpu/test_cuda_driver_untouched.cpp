// Loading the plugins and a compile-only CUDA warmup leave the CUDA driver
// uninitialized (docs/plugin-abi.md "Platforms"): a process may fork
// children that use CUDA afterwards, and a driver initialized before the
// fork is unusable in them (test_cuda_fork_after_warmup.cpp shows that on a
// GPU). Here, without one: the driver is tests/gpu/fake_libcuda, which
// counts cuInit calls, put first on LD_LIBRARY_PATH for the plugin and for
// NVRTC and nvJitLink (NVRTC opens libcuda.so.1 itself for its cache, 12.9
// and later, unless told not to).
#include <jitwarm/jitwarm.hpp>

#include "compile_only_warmup.hpp"

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <string>

namespace {

// The fake's count, read through the library the process resolves as
// libcuda.so.1: the same one the plugin and NVRTC open.
int init_calls() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_NOW);
  REQUIRE_MESSAGE(driver != nullptr, "libcuda.so.1 does not open");
  const auto count =
      reinterpret_cast<int (*)()>(dlsym(driver, "fake_libcuda_init_calls"));
  const bool is_the_fake = count != nullptr;
  REQUIRE_MESSAGE(is_the_fake,
                  "libcuda.so.1 is not the fake of tests/gpu/fake_libcuda: "
                  "LD_LIBRARY_PATH must name its directory first");
  const int calls = count();
  dlclose(driver);
  return calls;
}

}  // namespace

TEST_CASE(
    "given a CUDA driver, then loading the plugins and a compile-only warmup "
    "never initialize it, and counting devices does") {
  jitwarm::RuntimeOptions options;
  options.no_cache_dir = true;
  jitwarm::Runtime runtime(options);
  runtime.load_plugins();
  CHECK(init_calls() == 0);
  bool loaded_cuda = false;
  for (const jitwarm::PluginLoadRecord& record : runtime.load_history()) {
    for (const std::string& platform : record.platforms) {
      if (platform.rfind("cuda: launch", 0) == 0) loaded_cuda = true;
    }
  }
  REQUIRE_MESSAGE(loaded_cuda,
                  "the CUDA plugin did not load with the fake "
                  "driver as a platform that can launch");

  const jitwarm::WarmupResult result = jitwarm::test::warm_cuda_keys(runtime);
  REQUIRE(result.keys.size() == jitwarm::test::kWarmedCudaKeys);
  CHECK_MESSAGE(result.compiled == jitwarm::test::kWarmedCudaKeys,
                result.keys.front().error);
  CHECK(init_calls() == 0);

  // The count is the plugin's driver: asking for devices initializes it.
  for (const jitwarm::PlatformInfo& platform : runtime.platforms()) {
    if (platform.name == "cuda") CHECK(platform.device_count == 0);
  }
  CHECK(init_calls() == 1);
}
