// libjitwarm-hip.so as the core sees it: loaded with dlopen through its one
// entry symbol, negotiated, registered against a fake host table, and used
// through the C callbacks only. On a machine with no AMD GPU and no ROCm
// driver (every machine this was written and tested on) it must load,
// report compile-only, compile for gfx90a (hiprtc) and gfx942 (clang), and
// refuse device work with "no device".
#include "code_object.hpp"
#include "gpu_test_support.hpp"
#include "kernel_set.hpp"

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
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
  return jitwarm::gpu_test::dlopened_plugin(JW_HIP_PLUGIN_PATH);
}

bool machine_has_rocm_driver() {
  return std::filesystem::exists("/dev/kfd");
}

std::string text_of(jw_status (*callback)(void*, const jw_compile_key_view*,
                                          const jw_text_sink*),
                    void* user_data, TestKey& key) {
  std::string text;
  const jw_text_sink sink = jitwarm::gpu_test::text_sink(text);
  REQUIRE(callback(user_data, &key.view(), &sink) == JW_OK);
  return text;
}

}  // namespace

TEST_CASE(
    "given the plugin file, then it exports only jitwarm_plugin_negotiate "
    "and needs no AMD library to load") {
  const auto exported = jitwarm::gpu_test::run_command(
      std::string(JW_NM) + " -D --defined-only " + JW_HIP_PLUGIN_PATH);
  REQUIRE(exported.status == 0);
  std::istringstream lines(exported.output);
  std::set<std::string> symbols;
  for (std::string line; std::getline(lines, line);) {
    symbols.insert(line.substr(line.rfind(' ') + 1));
  }
  CHECK(symbols == std::set<std::string>{"jitwarm_plugin_negotiate"});
  // libamdhip64, libhiprtc and comgr are opened at run time (P3): none is
  // a DT_NEEDED of the plugin.
  const auto needed = jitwarm::gpu_test::run_command(
      std::string(JW_READELF) + " -d " + JW_HIP_PLUGIN_PATH);
  REQUIRE(needed.status == 0);
  CHECK(needed.output.find("NEEDED") != std::string::npos);
  for (const char* library : {"amdhip64", "hiprtc", "comgr", "hsa"}) {
    CAPTURE(library);
    CHECK(needed.output.find(library) == std::string::npos);
  }
}

TEST_CASE("given ABI versions, then the handshake picks version 1 or refuses") {
  DlopenedPlugin& p = plugin();
  jw_plugin_negotiation n{};
  n.struct_size = sizeof(n);
  n.core_max_version = 7;
  n.core_min_version = 1;
  CHECK(p.negotiate(&n) == JW_OK);
  CHECK(n.plugin_version == 1);
  CHECK(std::strcmp(n.plugin->name, "jitwarm-hip") == 0);
  n.core_min_version = 2;
  CHECK(p.negotiate(&n) == JW_ERROR_ABI_MISMATCH);
  CHECK(p.negotiate(nullptr) == JW_ERROR_INVALID_ARGUMENT);
  CHECK(p.api->register_all(p.host.api()) == JW_ERROR_ALREADY_EXISTS);
}

TEST_CASE(
    "given registration, then the ten kernels and the hip platform are "
    "registered, and no schema is defined") {
  DlopenedPlugin& p = plugin();
  CHECK(p.host.schemas.empty());
  REQUIRE(p.host.impls.size() == ks::schemas().size());
  for (const jw_kernel_schema& schema : ks::schemas()) {
    CAPTURE(schema.name);
    const FakeHost::RecordedImpl* impl = p.host.impl_for(schema.name);
    REQUIRE(impl != nullptr);
    CHECK(impl->platform == "hip");
    CHECK(impl->impl_name == "hip-rtc");
    REQUIRE(impl->param_names.size() == schema.num_params);
    CHECK((impl->impl.compile != nullptr));
    CHECK((impl->impl.launch != nullptr));
    CHECK((impl->impl.describe != nullptr));
    CHECK((impl->impl.fingerprint != nullptr));
  }
  CHECK(p.host.platform_names == std::vector<std::string>{"hip"});
}

TEST_CASE(
    "given no AMD GPU and no ROCm driver, then the load report says "
    "compile-only and device services say no device") {
  if (machine_has_rocm_driver()) {
    MESSAGE("/dev/kfd exists: this machine may have an AMD GPU; skipped");
    return;
  }
  DlopenedPlugin& p = plugin();
  REQUIRE(p.host.platforms.size() == 1);
  const jw_platform_desc& platform = p.host.platforms[0];
  uint32_t flags = 0;
  std::string detail;
  const jw_text_sink sink = jitwarm::gpu_test::text_sink(detail);
  REQUIRE(platform.capabilities(platform.user_data, &flags, &sink) == JW_OK);
  CHECK((flags & JW_PLATFORM_CAN_COMPILE) != 0);
  CHECK((flags & JW_PLATFORM_CAN_LAUNCH) == 0);
  CHECK(detail.find("no AMD GPU / ROCm driver: ") != std::string::npos);
  std::string log;
  for (const std::string& line : p.host.logs) log += line + "\n";
  MESSAGE(log);
  CHECK(log.find("jitwarm-hip: hiprtc in-process for ") != std::string::npos);
  CHECK(log.find("clang out-of-process for other targets") !=
        std::string::npos);
  CHECK(log.find("no AMD GPU / ROCm driver: ") != std::string::npos);

  int32_t count = -1;
  REQUIRE(platform.device_count(platform.user_data, &count) == JW_OK);
  CHECK(count == 0);
  void* memory = nullptr;
  CHECK(platform.allocate(platform.user_data, 0, 64, &memory) ==
        JW_ERROR_NO_DEVICE);
  CHECK(p.host.last_error.find("no AMD GPU") != std::string::npos);
  std::string target;
  const jw_text_sink target_sink = jitwarm::gpu_test::text_sink(target);
  CHECK(platform.device_target(platform.user_data, 0, &target_sink) ==
        JW_ERROR_NO_DEVICE);
}

TEST_CASE(
    "given keys for gfx90a and gfx942, then the compile callback emits one "
    "code object each, with the entry point as a kernel") {
  DlopenedPlugin& p = plugin();
  const FakeHost::RecordedImpl* impl = p.host.impl_for(ks::kPackSeq);
  REQUIRE(impl != nullptr);
  for (const char* target : {"hip:gfx90a", "hip:gfx942"}) {
    CAPTURE(target);
    TestKey key(ks::kPackSeq, target);
    CapturedArtifact artifact;
    REQUIRE_MESSAGE(compile_into(*impl, &key, artifact) == JW_OK,
                    p.host.last_error);
    CHECK(artifact.emits == 1);
    CHECK(artifact.format == "hsaco");
    const auto code_object = jitwarm::hip::read_code_object(artifact.binary);
    REQUIRE(code_object.has_value());
    CHECK(std::binary_search(code_object->kernels.begin(),
                             code_object->kernels.end(), artifact.entry_point));
    const std::string describe =
        text_of(impl->impl.describe, impl->impl.user_data, key);
    CHECK(describe.find("pack_unpack_seq.cuh") != std::string::npos);
    const std::string fingerprint =
        text_of(impl->impl.fingerprint, impl->impl.user_data, key);
    CHECK(fingerprint.find(std::string("target: ") + target) !=
          std::string::npos);
    if (std::string(target) == "hip:gfx90a") {
      CHECK(fingerprint.find("compiler: hiprtc ") != std::string::npos);
    } else {
      CHECK(fingerprint.find("clang version") != std::string::npos);
    }
  }
}

TEST_CASE(
    "given misuse and impossible requests through the C ABI, then statuses "
    "and the host's error message say what went wrong") {
  DlopenedPlugin& p = plugin();
  const FakeHost::RecordedImpl* impl = p.host.impl_for(ks::kRmsNorm);
  REQUIRE(impl != nullptr);
  CapturedArtifact artifact;
  TestKey other(ks::kExpand, "hip:gfx90a");  // a key for another kernel
  CHECK(compile_into(*impl, &other, artifact) == JW_ERROR_INVALID_ARGUMENT);
  CHECK(p.host.last_error.find(std::string(ks::kExpand)) != std::string::npos);
  TestKey unknown(ks::kRmsNorm, "hip:gfx9999");
  CHECK(compile_into(*impl, &unknown, artifact) == JW_ERROR_UNSUPPORTED);
  CHECK(p.host.last_error.find("no HIP compiler here compiles for "
                               "hip:gfx9999") != std::string::npos);
  CHECK(artifact.emits == 0);

  if (!machine_has_rocm_driver()) {
    TestKey key(ks::kRmsNorm, "hip:gfx90a");
    REQUIRE(compile_into(*impl, &key, artifact) == JW_OK);
    CHECK(jitwarm::gpu_test::launch_rms_norm(*impl, key, artifact) ==
          JW_ERROR_NO_DEVICE);
    CHECK(p.host.last_error.find("jitwarm-hip cannot launch") !=
          std::string::npos);
  }
}
