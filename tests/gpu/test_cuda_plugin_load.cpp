// libjitwarm-cuda.so as the core sees it: loaded with dlopen through its one
// entry symbol, negotiated, registered against a fake host table, and used
// through the C callbacks only. Runs on a machine with no GPU and no
// driver, where the plugin must load and compile.
#include "elf_symbols.hpp"
#include "gpu_test_support.hpp"
#include "kernel_set.hpp"

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <sstream>

using jitwarm::gpu_test::CapturedArtifact;
using jitwarm::gpu_test::compile_into;
using jitwarm::gpu_test::FakeHost;
using jitwarm::gpu_test::TestKey;
namespace ks = jitwarm::kernel_set;

namespace {

using jitwarm::gpu_test::DlopenedPlugin;

DlopenedPlugin& plugin() {
  return jitwarm::gpu_test::dlopened_plugin(JW_CUDA_PLUGIN_PATH);
}

bool machine_has_cuda_driver() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

}  // namespace

TEST_CASE(
    "given the plugin file, then it exports only jitwarm_plugin_negotiate") {
  const auto result = jitwarm::gpu_test::run_command(
      std::string(JW_NM) + " -D --defined-only " + JW_CUDA_PLUGIN_PATH);
  REQUIRE(result.status == 0);
  std::istringstream lines(result.output);
  std::set<std::string> symbols;
  for (std::string line; std::getline(lines, line);) {
    const std::size_t space = line.rfind(' ');
    symbols.insert(line.substr(space + 1));
  }
  CHECK(symbols == std::set<std::string>{"jitwarm_plugin_negotiate"});
}

TEST_CASE("given ABI versions, then the handshake picks version 1 or refuses") {
  DlopenedPlugin& p = plugin();
  jw_plugin_negotiation n{};
  n.struct_size = sizeof(n);
  n.core_max_version = 7;
  n.core_min_version = 1;
  CHECK(p.negotiate(&n) == JW_OK);
  CHECK(n.plugin_version == 1);
  CHECK(std::strcmp(n.plugin->name, "jitwarm-cuda") == 0);
  n.core_min_version = 2;  // a core that no longer speaks version 1
  CHECK(p.negotiate(&n) == JW_ERROR_ABI_MISMATCH);
  CHECK(p.negotiate(nullptr) == JW_ERROR_INVALID_ARGUMENT);
}

TEST_CASE(
    "given registration, then the ten kernels and the cuda platform "
    "are registered, and no schema is defined") {
  DlopenedPlugin& p = plugin();
  CHECK(p.host.schemas.empty());  // the reference plugin defines them
  REQUIRE(p.host.impls.size() == ks::schemas().size());
  for (const jw_kernel_schema& schema : ks::schemas()) {
    CAPTURE(schema.name);
    const FakeHost::RecordedImpl* impl = p.host.impl_for(schema.name);
    REQUIRE(impl != nullptr);
    CHECK(impl->platform == "cuda");
    CHECK(impl->impl_name == "cuda-nvrtc");
    REQUIRE(impl->param_names.size() == schema.num_params);
    for (uint32_t i = 0; i < schema.num_params; ++i) {
      CHECK(impl->param_names[i] == schema.params[i].name);
    }
    CHECK((impl->impl.compile != nullptr));
    CHECK((impl->impl.launch != nullptr));
    CHECK((impl->impl.describe != nullptr));
    CHECK((impl->impl.fingerprint != nullptr));
  }
  CHECK(p.host.platform_names == std::vector<std::string>{"cuda"});
}

TEST_CASE("given no CUDA driver, then the load report says compile-only") {
  DlopenedPlugin& p = plugin();
  REQUIRE(p.host.platforms.size() == 1);
  const jw_platform_desc& platform = p.host.platforms[0];
  uint32_t flags = 0;
  std::string detail;
  const jw_text_sink sink = jitwarm::gpu_test::text_sink(detail);
  REQUIRE(platform.capabilities(platform.user_data, &flags, &sink) == JW_OK);
  CHECK((flags & JW_PLATFORM_CAN_COMPILE) != 0);
  std::string log;
  for (const std::string& line : p.host.logs) log += line + "\n";
  CHECK(log.find("jitwarm-cuda: nvrtc ") != std::string::npos);
  int32_t count = -1;
  REQUIRE(platform.device_count(platform.user_data, &count) == JW_OK);
  if (!machine_has_cuda_driver()) {
    CHECK((flags & JW_PLATFORM_CAN_LAUNCH) == 0);
    CHECK(detail.find("no CUDA driver: ") != std::string::npos);
    CHECK(log.find("no CUDA driver: ") != std::string::npos);
    CHECK(count == 0);
    void* memory = nullptr;
    CHECK(platform.allocate(platform.user_data, 0, 64, &memory) ==
          JW_ERROR_NO_DEVICE);
    CHECK(p.host.last_error.find("no CUDA driver") != std::string::npos);
  } else {
    CHECK((flags & JW_PLATFORM_CAN_LAUNCH) != 0);
    CHECK(count >= 0);
  }
}

TEST_CASE("given a key, then the compile callback emits one CUBIN artifact") {
  DlopenedPlugin& p = plugin();
  const FakeHost::RecordedImpl* impl = p.host.impl_for(ks::kScatterStates);
  REQUIRE(impl != nullptr);
  TestKey key(ks::kScatterStates);
  CapturedArtifact artifact;
  REQUIRE(compile_into(*impl, &key, artifact) == JW_OK);
  CHECK(artifact.emits == 1);
  CHECK(artifact.format == "cubin");
  const auto elf = jitwarm::gpu::read_elf(artifact.binary);
  REQUIRE(elf.has_value());
  CHECK(elf->machine == jitwarm::gpu::kElfMachineCuda);
  bool found = false;
  for (const auto& s : elf->symbols)
    found = found || s.name == artifact.entry_point;
  CHECK(found);

  std::string describe;
  const jw_text_sink text = jitwarm::gpu_test::text_sink(describe);
  CHECK(impl->impl.describe(impl->impl.user_data, &key.view(), &text) == JW_OK);
  CHECK(describe.find("scatter_states.cuh") != std::string::npos);
  std::string fingerprint;
  const jw_text_sink fp = jitwarm::gpu_test::text_sink(fingerprint);
  CHECK(impl->impl.fingerprint(impl->impl.user_data, &key.view(), &fp) ==
        JW_OK);
  CHECK(fingerprint.find("compiler: nvrtc") != std::string::npos);
}

TEST_CASE(
    "given misuse through the C ABI, then statuses and the host's "
    "error message say what went wrong") {
  DlopenedPlugin& p = plugin();
  const FakeHost::RecordedImpl* impl = p.host.impl_for(ks::kRmsNorm);
  REQUIRE(impl != nullptr);
  CapturedArtifact artifact;
  TestKey other(ks::kExpand);  // a key for another kernel
  CHECK(compile_into(*impl, &other, artifact) == JW_ERROR_INVALID_ARGUMENT);
  CHECK(p.host.last_error.find(std::string(ks::kExpand)) != std::string::npos);
  CHECK(compile_into(*impl, nullptr, artifact) == JW_ERROR_INVALID_ARGUMENT);
  CHECK(artifact.emits == 0);

  if (!machine_has_cuda_driver()) {
    TestKey key(ks::kRmsNorm);
    REQUIRE(compile_into(*impl, &key, artifact) == JW_OK);
    CHECK(jitwarm::gpu_test::launch_rms_norm(*impl, key, artifact) ==
          JW_ERROR_NO_DEVICE);
    CHECK(p.host.last_error.find("cannot launch") != std::string::npos);
  }
}
