// The HIP backend end to end without an AMD GPU (plugins/common/gpu_backend
// with the HIP plugin's compiler and driver): one key per compile, as the
// plugin compiles, through hiprtc (gfx90a) and clang (gfx942, gfx1100,
// targets with features); compile errors that carry the compiler's log,
// the key and the options; targets no compiler knows; describe,
// fingerprint; and what the driver says with no device.
#include <jitwarm/plugin.hpp>

#include "code_object.hpp"
#include "gpu_backend.hpp"
#include "gpu_test_support.hpp"
#include "hip_compiler.hpp"
#include "hip_device_driver.hpp"
#include "hip_target.hpp"
#include "kernel_set.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

using jitwarm::gpu::EmbeddedSource;
using jitwarm::gpu::GpuBackend;
using jitwarm::gpu_test::TestArgs;
using jitwarm::gpu_test::TestKey;
using jitwarm::plugin::PluginError;
namespace gpu = jitwarm::gpu;
namespace hip = jitwarm::hip;
namespace ks = jitwarm::kernel_set;

namespace {

// e_flags: processor (EF_AMDGPU_MACH_AMDGCN_*) and, for code object v4 and
// later, the xnack (0x300) and sramecc (0xc00) settings.
constexpr uint32_t kMachGfx90a = 0x3f;
constexpr uint32_t kMachGfx942 = 0x4c;
constexpr uint32_t kMachGfx1100 = 0x41;
constexpr uint32_t kXnackOff = 0x200;
constexpr uint32_t kSrameccOn = 0xc00;

// Which compilers the backend gets: both (as the plugin), or clang only.
enum class Compilers { hiprtc_and_clang, clang_only };

std::unique_ptr<hip::HipCompiler> make_compiler(Compilers which) {
  std::string hiprtc_missing = "left out by the test";
  std::unique_ptr<hip::HiprtcCompiler> hiprtc;
  if (which == Compilers::hiprtc_and_clang) {
    hiprtc = hip::HiprtcCompiler::open(hiprtc_missing);
    if (hiprtc == nullptr) FAIL("hiprtc is needed: " << hiprtc_missing);
  }
  std::string searched;
  auto candidates = hip::ClangHipCompiler::find_candidates(searched);
  if (candidates.empty()) FAIL("clang-19 is needed: searched " << searched);
  return std::make_unique<hip::HipCompiler>(
      std::move(hiprtc), hiprtc_missing,
      std::make_unique<hip::ClangHipCompiler>(std::move(candidates), searched),
      "");
}

std::unique_ptr<GpuBackend> make_backend(
    Compilers which = Compilers::hiprtc_and_clang,
    std::span<const EmbeddedSource> sources = gpu::embedded_kernel_sources()) {
  gpu::GpuBackendDescription description;
  description.plugin_name = "jitwarm-hip";
  description.platform = "hip";
  description.impl_name = "hip-rtc";
  description.compiler_label = "hiprtc/clang";
  description.parse_target = &hip::parse_hip_target;
  return std::make_unique<GpuBackend>(
      std::move(description), make_compiler(which), "",
      std::make_unique<hip::HipDeviceDriver>(), sources);
}

const hip::HipCompiler& hip_compiler(const GpuBackend& backend) {
  return *dynamic_cast<const hip::HipCompiler*>(backend.compiler().rtc());
}

bool machine_has_rocm_driver() {
  return std::filesystem::exists("/dev/kfd");
}

template <typename Body>
PluginError error_of(Body&& body) {
  try {
    body();
  } catch (const PluginError& e) {
    return e;
  }
  FAIL("no PluginError was thrown");
  return PluginError(JW_OK, "");
}

// The artifact of `key` checked as a code object for `mach`; returns it.
hip::CodeObject check_code_object(const gpu::CompiledKernel& compiled,
                                  uint32_t mach) {
  CHECK(compiled.format == "hsaco");
  const std::optional<hip::CodeObject> code_object =
      hip::read_code_object(compiled.binary);
  REQUIRE(code_object.has_value());
  CHECK((code_object->flags & 0xff) == mach);
  CHECK(std::binary_search(code_object->kernels.begin(),
                           code_object->kernels.end(), compiled.entry_point));
  return *code_object;
}

}  // namespace

TEST_CASE(
    "given a key for gfx90a, then hiprtc compiles it in-process to a code "
    "object whose kernel is the entry point") {
  auto backend = make_backend();
  TestKey key(ks::kRmsNorm, "hip:gfx90a");
  key.dtype("x", JW_DTYPE_BFLOAT16)
      .integer("H", JW_INT_I32, JW_INT_CLASS_DIV16)
      .integer("x_stride", JW_INT_I32, JW_INT_CLASS_DIV16);
  CHECK(std::string(hip_compiler(*backend)
                        .choose(hip::parse_hip_target("hip:gfx90a"))
                        .name) == "hiprtc");
  const auto compiled = backend->compiler().compile(key.view());
  check_code_object(*compiled, kMachGfx90a);
  CHECK(compiled->entry_point.rfind("_ZN2jw7kernels8rms_normI", 0) == 0);
  CHECK(backend->compiler().fingerprint(key.view()).find("compiler: hiprtc ") !=
        std::string::npos);
}

TEST_CASE(
    "given a key for gfx942, then clang compiles it out of process to a "
    "code object whose kernel is the entry point") {
  auto backend = make_backend();
  const hip::HipCompiler& compiler = hip_compiler(*backend);
  const gpu::GpuTarget gfx942 = hip::parse_hip_target("hip:gfx942");
  REQUIRE(compiler.hiprtc() != nullptr);
  if (compiler.hiprtc()->isas().knows("gfx942")) {
    MESSAGE("this comgr lists gfx942: hiprtc compiles it here");
  } else {
    CHECK(std::string(compiler.choose(gfx942).name) == "clang");
  }
  TestKey key(ks::kScatterStates, "hip:gfx942");
  key.dtype("state", JW_DTYPE_FLOAT16).dtype("indices", JW_DTYPE_INT64);
  const auto compiled = backend->compiler().compile(key.view());
  check_code_object(*compiled, kMachGfx942);
  CHECK(compiled->entry_point.rfind("_ZN2jw7kernels14scatter_statesI", 0) == 0);
  CHECK(backend->compiler()
            .fingerprint(key.view())
            .find("compiler: " + compiler.identity_for(gfx942)) !=
        std::string::npos);
}

TEST_CASE(
    "given RDNA and targets with features, then clang builds them with the "
    "processor and settings in e_flags") {
  auto backend = make_backend();
  TestKey rdna(ks::kSiluAndMul, "hip:gfx1100");
  check_code_object(*backend->compiler().compile(rdna.view()), kMachGfx1100);

  TestKey features(ks::kSiluAndMul, "hip:gfx90a:xnack-:sramecc+");
  const auto compiled = backend->compiler().compile(features.view());
  const hip::CodeObject code_object = check_code_object(*compiled, kMachGfx90a);
  CHECK((code_object.flags & 0xf00) == (kSrameccOn | kXnackOff));
}

TEST_CASE(
    "given one key per kernel, then hiprtc (gfx90a) and clang (gfx942, and "
    "gfx90a when forced) give each the same entry point (timed)") {
  auto backend = make_backend();
  auto clang_only = make_backend(Compilers::clang_only);
  double hiprtc_seconds = 0;
  double clang_seconds = 0;
  for (const auto& descriptor : gpu::builtin_descriptors()) {
    const std::string_view kernel = descriptor->kernel_name;
    CAPTURE(kernel);
    TestKey gfx90a(kernel, "hip:gfx90a");
    TestKey gfx942(kernel, "hip:gfx942");
    auto start = std::chrono::steady_clock::now();
    const auto by_hiprtc = backend->compiler().compile(gfx90a.view());
    hiprtc_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    start = std::chrono::steady_clock::now();
    const auto by_clang = backend->compiler().compile(gfx942.view());
    clang_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    const auto forced = clang_only->compiler().compile(gfx90a.view());
    check_code_object(*by_hiprtc, kMachGfx90a);
    check_code_object(*by_clang, kMachGfx942);
    check_code_object(*forced, kMachGfx90a);
    CHECK(by_hiprtc->entry_point == by_clang->entry_point);
    CHECK(by_hiprtc->entry_point == forced->entry_point);
  }
  MESSAGE("10 single-key compiles: hiprtc (gfx90a) "
          << hiprtc_seconds << " s, clang (gfx942) " << clang_seconds << " s");
}

TEST_CASE(
    "given one key compiled by two backends, then both compilers give "
    "byte-identical code objects (P11: deterministic)") {
  auto first = make_backend();
  auto second = make_backend();
  for (const char* target : {"hip:gfx90a", "hip:gfx942"}) {
    CAPTURE(target);
    TestKey key(ks::kPreparePosSeqLens, target);
    const auto a = first->compiler().compile(key.view());
    const auto b = second->compiler().compile(key.view());
    CHECK(a != b);  // two compiles, not one memo entry
    CHECK(a->binary == b->binary);
    CHECK(a->entry_point == b->entry_point);
  }
}

TEST_CASE(
    "given compiles for gfx90a from several threads at once, then hiprtc "
    "takes them one at a time and every one succeeds") {
  // Unserialized, Debian's hiprtc 5.2 aborts this process within a few
  // concurrent compiles (LLVM option registry, double free). Small
  // programs, so that many compiles start while others run.
  std::string why_not;
  const auto hiprtc = hip::HiprtcCompiler::open(why_not);
  REQUIRE_MESSAGE(hiprtc != nullptr, why_not);
  const gpu::GpuTarget gfx90a = hip::parse_hip_target("hip:gfx90a");
  constexpr int kThreads = 4;
  constexpr int kCompilesPerThread = 10;
  std::vector<std::string> outcomes(kThreads * kCompilesPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCompilesPerThread; ++c) {
        const int i = t * kCompilesPerThread + c;
        gpu::RtcProgram program;
        program.source_name = "tiny.hip";
        program.source_text =
            "template <int N> __global__ void tiny(int* out) { out[0] = N; }\n";
        program.name_expressions = {"tiny<" + std::to_string(i) + ">"};
        program.options = hiprtc->options_for(gfx90a);
        try {
          const gpu::CompiledProgram out = hiprtc->compile(program, gfx90a);
          outcomes[i] = out.lowered_names.at(0);
        } catch (const std::exception& e) {
          outcomes[i] = std::string("error: ") + e.what();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads * kCompilesPerThread; ++i) {
    CHECK(outcomes[i] == "_Z4tinyILi" + std::to_string(i) + "EEvPi");
  }
}

TEST_CASE("given keys with the same instantiation, then they compile once") {
  auto backend = make_backend();
  for (const char* target : {"hip:gfx90a", "hip:gfx942"}) {
    CAPTURE(target);
    const uint64_t before = backend->compiler().counters().compiles;
    TestKey out_unaligned(ks::kSiluAndMul, target);
    out_unaligned.aligned("out", false);
    TestKey x_unaligned(ks::kSiluAndMul, target);
    x_unaligned.aligned("x", false);
    CHECK(backend->compiler().compile(out_unaligned.view()) ==
          backend->compiler().compile(x_unaligned.view()));
    CHECK(backend->compiler().counters().compiles == before + 1);
  }
}

TEST_CASE(
    "given a deliberately broken source, then each compiler's error carries "
    "its log, the key and the options") {
  const auto embedded = gpu::embedded_kernel_sources();
  std::vector<EmbeddedSource> sources(embedded.begin(), embedded.end());
  const std::string broken =
      std::string(gpu::find_source(embedded, "silu_and_mul.cuh").text) +
      "\nnamespace jw { int deliberately_broken = undeclared_identifier; }\n";
  for (EmbeddedSource& s : sources) {
    if (s.name == "silu_and_mul.cuh") s.text = broken;
  }
  auto backend = make_backend(Compilers::hiprtc_and_clang, sources);
  struct Case {
    const char* target;
    const char* options;
  };
  for (const Case& c :
       {Case{"hip:gfx90a", "options: --offload-arch=gfx90a -O3 -std=c++17"},
        Case{"hip:gfx942",
             "options: -x hip --offload-arch=gfx942 --cuda-device-only "
             "--no-gpu-bundle-output -nogpulib -nogpuinc -O3 -std=c++17 "
             "-fuse-cuid=none"}}) {
    CAPTURE(c.target);
    TestKey key(ks::kSiluAndMul, c.target);
    const uint64_t before = backend->compiler().counters().compiles;
    const PluginError e =
        error_of([&] { backend->compiler().compile(key.view()); });
    const std::string message = e.what();
    CHECK(e.status() == JW_ERROR_COMPILE_FAILED);
    CHECK(message.find("undeclared_identifier") != std::string::npos);
    CHECK(message.find("hiprtc/clang log:") != std::string::npos);
    CHECK(message.find(key.text()) != std::string::npos);
    CHECK(message.find(c.options) != std::string::npos);
    CHECK(message.find("jw::kernels::silu_and_mul<") != std::string::npos);
    // Not memoized: the next request compiles (and fails) again.
    CHECK_THROWS_AS(backend->compiler().compile(key.view()), PluginError);
    CHECK(backend->compiler().counters().compiles == before + 2);
  }
}

TEST_CASE(
    "given a processor no compiler knows, then the compile is refused "
    "naming both compilers, and the process lives on") {
  auto backend = make_backend();
  TestKey unknown(ks::kExpand, "hip:gfx9999");
  PluginError e =
      error_of([&] { backend->compiler().compile(unknown.view()); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  std::string message = e.what();
  CHECK(message.find("no HIP compiler here compiles for hip:gfx9999") !=
        std::string::npos);
  CHECK(message.find("hiprtc: comgr ") != std::string::npos);
  CHECK(message.find("does not list gfx9999") != std::string::npos);
  CHECK(error_of([&] {
          backend->compiler().fingerprint(unknown.view());
        }).status() == JW_ERROR_UNSUPPORTED);
  // A feature the processor does not have: clang refuses the target ID.
  TestKey bad_feature(ks::kExpand, "hip:gfx1030:xnack+");
  e = error_of([&] { backend->compiler().compile(bad_feature.view()); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  CHECK(std::string(e.what()).find("invalid target ID") != std::string::npos);
  // Not a HIP target at all.
  TestKey cuda(ks::kExpand, "cuda:sm_90");
  CHECK(error_of([&] { backend->compiler().compile(cuda.view()); }).status() ==
        JW_ERROR_UNSUPPORTED);
  // Still compiling afterwards.
  TestKey fine(ks::kExpand, "hip:gfx90a");
  CHECK_FALSE(backend->compiler().compile(fine.view())->binary.empty());
}

TEST_CASE(
    "given keys, then describe and the fingerprint name the compiler of "
    "their target, the sources and the options") {
  auto backend = make_backend();
  const hip::HipCompiler& compiler = hip_compiler(*backend);
  TestKey gfx90a(ks::kZeroKvBlocks, "hip:gfx90a");
  TestKey gfx942(ks::kZeroKvBlocks, "hip:gfx942");
  const std::string described = backend->compiler().describe(gfx942.view());
  CHECK(described.find("target: hip:gfx942 -> hsaco for gfx942") !=
        std::string::npos);
  CHECK(described.find("implementation: hip-rtc (jitwarm-hip)") !=
        std::string::npos);
  CHECK(described.find("name expression: jw::kernels::zero_kv_blocks<") !=
        std::string::npos);
  CHECK(
      described.find("compiler: " + compiler.identity_for(hip::parse_hip_target(
                                        "hip:gfx942"))) != std::string::npos);
  CHECK(described.find("--offload-arch=gfx942") != std::string::npos);

  const std::string fingerprint =
      backend->compiler().fingerprint(gfx90a.view());
  CHECK(fingerprint.find("compiler: hiprtc ") != std::string::npos);
  CHECK(fingerprint.find("source: zero_kv_blocks.cuh xxh128 ") !=
        std::string::npos);
  CHECK(fingerprint.find("header: portability.cuh xxh128 ") !=
        std::string::npos);
  CHECK(fingerprint.find("options: --offload-arch=gfx90a -O3 -std=c++17") !=
        std::string::npos);
  CHECK(backend->compiler().fingerprint(gfx90a.view()) == fingerprint);
  CHECK(backend->compiler().fingerprint(gfx942.view()) != fingerprint);
  // Forcing gfx90a to clang changes the fingerprint: the cache never hands
  // one compiler's code object to a lookup for the other's.
  CHECK(make_backend(Compilers::clang_only)
            ->compiler()
            .fingerprint(gfx90a.view()) != fingerprint);
}

TEST_CASE(
    "given no AMD GPU, then capabilities say compile-only without calling "
    "the runtime, and device use fails cleanly with no device") {
  if (machine_has_rocm_driver()) {
    MESSAGE("/dev/kfd exists: this machine may have an AMD GPU; skipped");
    return;
  }
  auto backend = make_backend();
  std::string detail;
  const uint32_t flags = backend->capabilities(detail);
  CHECK((flags & JW_PLATFORM_CAN_COMPILE) != 0);
  CHECK((flags & JW_PLATFORM_CAN_LAUNCH) == 0);
  CHECK(detail.find("no AMD GPU / ROCm driver: /dev/kfd not found") !=
        std::string::npos);

  TestKey key(ks::kRmsNorm, "hip:gfx90a");
  key.all_aligned(false);
  const auto compiled = backend->compiler().compile(key.view());
  TestArgs args = jitwarm::gpu_test::rms_norm_args(2, 8, 1e-6);
  const jw_artifact_view artifact = jitwarm::gpu_test::artifact_view(
      key, compiled->binary, compiled->format, compiled->entry_point, 1);
  // The first device use asks the runtime, which answers "no device".
  const PluginError e = error_of(
      [&] { backend->launcher().launch(artifact, args.values(), nullptr); });
  CHECK(e.status() == JW_ERROR_NO_DEVICE);
  CHECK(std::string(e.what()).find(key.text()) != std::string::npos);
  CHECK(std::string(e.what()).find("hipErrorNoDevice") != std::string::npos);
  CHECK(backend->driver().device_count() == 0);
  CHECK(error_of([&] { backend->driver().allocate(0, 64); }).status() ==
        JW_ERROR_NO_DEVICE);
  CHECK(error_of([&] { backend->driver().device_arch(0); }).status() ==
        JW_ERROR_NO_DEVICE);
  backend->capabilities(detail);
  CHECK(detail.find("no AMD GPU / ROCm driver: hipGetDeviceCount: "
                    "hipErrorNoDevice") != std::string::npos);
  backend->shutdown();  // nothing loaded: nothing to release
}

TEST_CASE(
    "given the driver node exists, then capabilities promise launches "
    "without asking the runtime") {
  // /dev/null stands in for /dev/kfd: status() must not call the runtime,
  // so it cannot know yet that there is no device behind it.
  hip::HipDeviceDriver driver("/dev/null");
  REQUIRE(driver.library_available());
  const gpu::DriverStatus before = driver.status();
  CHECK(before.can_launch);
  CHECK(before.detail.find("devices are probed on first use") !=
        std::string::npos);
  if (!machine_has_rocm_driver()) {
    CHECK(driver.device_count() == 0);
    const gpu::DriverStatus after = driver.status();
    CHECK_FALSE(after.can_launch);
    CHECK(after.detail.find("hipErrorNoDevice") != std::string::npos);
  }
}
