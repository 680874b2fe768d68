// The CUDA backend end to end without a GPU (plugins/common/gpu_backend with
// NVRTC and the CUDA driver of plugins/cuda): compile per key through the
// memo, PTX targets, compile errors that carry the NVRTC log, describe,
// fingerprint, and what happens without a driver.
#include <jitwarm/plugin.hpp>

#include "cuda_device_driver.hpp"
#include "cuda_target.hpp"
#include "elf_symbols.hpp"
#include "gpu_backend.hpp"
#include "gpu_test_support.hpp"
#include "kernel_set.hpp"
#include "nvrtc_compiler.hpp"

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <set>

using jitwarm::cuda::NvrtcCompiler;
using jitwarm::gpu::CompiledKernel;
using jitwarm::gpu::EmbeddedSource;
using jitwarm::gpu::GpuBackend;
using jitwarm::gpu_test::TestArgs;
using jitwarm::gpu_test::TestKey;
using jitwarm::plugin::PluginError;
namespace gpu = jitwarm::gpu;
namespace ks = jitwarm::kernel_set;

namespace {

std::unique_ptr<NvrtcCompiler> open_nvrtc() {
  std::string why_not;
  auto nvrtc = NvrtcCompiler::open(why_not);
  if (nvrtc == nullptr) FAIL("NVRTC is needed for this test: " << why_not);
  return nvrtc;
}

std::unique_ptr<GpuBackend> make_backend(
    std::span<const EmbeddedSource> sources = gpu::embedded_kernel_sources(),
    std::unique_ptr<NvrtcCompiler> nvrtc = open_nvrtc()) {
  gpu::GpuBackendDescription description;
  description.plugin_name = "jitwarm-cuda";
  description.platform = "cuda";
  description.impl_name = "cuda-nvrtc";
  description.compiler_label = "NVRTC";
  description.parse_target = &jitwarm::cuda::parse_cuda_target;
  return std::make_unique<GpuBackend>(
      std::move(description), std::move(nvrtc), "",
      std::make_unique<jitwarm::cuda::CudaDeviceDriver>(), sources);
}

bool machine_has_cuda_driver() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

bool defines_function(const std::string& binary, const std::string& name) {
  const auto elf = gpu::read_elf(binary);
  if (!elf) return false;
  return std::any_of(elf->symbols.begin(), elf->symbols.end(),
                     [&](const gpu::ElfSymbol& s) {
                       return s.defined && s.type == 2 && s.name == name;
                     });
}

// Whether this NVRTC gets --split-compile at all (12.8 and later do).
bool splits_compiles(const NvrtcCompiler& nvrtc) {
  return nvrtc.major_version() > 12 ||
         (nvrtc.major_version() == 12 && nvrtc.minor_version() >= 8);
}

// The options ptxas recorded in a cubin (its .note.nv.tkinfo note), or
// empty when it has none.
std::string ptxas_note(const std::string& cubin) {
  const auto elf = gpu::read_elf(cubin);
  if (!elf) return {};
  for (const gpu::ElfSection& section : elf->sections) {
    if (section.name == ".note.nv.tkinfo") {
      return cubin.substr(section.offset, section.size);
    }
  }
  return {};
}

gpu::GpuCompiler::Descriptor builtin(std::string_view kernel) {
  for (const gpu::GpuCompiler::Descriptor& descriptor :
       gpu::builtin_descriptors()) {
    if (descriptor->kernel_name == kernel) return descriptor;
  }
  FAIL("no built-in descriptor for " << kernel);
  return nullptr;
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

}  // namespace

TEST_CASE(
    "given a key, then compile returns a CUBIN for sm_90 whose symbol "
    "table defines the lowered name") {
  auto backend = make_backend();
  TestKey key(ks::kRmsNorm);
  key.dtype("x", JW_DTYPE_BFLOAT16)
      .integer("H", JW_INT_I32, JW_INT_CLASS_DIV16)
      .integer("x_stride", JW_INT_I32, JW_INT_CLASS_DIV16);
  const auto compiled = backend->compiler().compile(key.view());
  CHECK(compiled->format == "cubin");
  CHECK(compiled->entry_point.rfind("_ZN2jw7kernels8rms_norm", 0) == 0);
  CHECK(defines_function(compiled->binary, compiled->entry_point));
  CHECK(gpu::read_elf(compiled->binary)->machine == gpu::kElfMachineCuda);
}

TEST_CASE("given keys with the same instantiation, then they compile once") {
  auto backend = make_backend();
  // Either unaligned tensor rules out vectors: one binary for both keys.
  TestKey out_unaligned(ks::kSiluAndMul);
  out_unaligned.aligned("out", false);
  TestKey x_unaligned(ks::kSiluAndMul);
  x_unaligned.aligned("x", false);
  const auto first = backend->compiler().compile(out_unaligned.view());
  const auto second = backend->compiler().compile(x_unaligned.view());
  CHECK(first == second);
  CHECK(backend->compiler().counters().compiles == 1);
  CHECK(backend->compiler().counters().requests == 2);
  // ... and a key that vectorizes is another program.
  TestKey vectorized(ks::kSiluAndMul);
  vectorized.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16);
  CHECK(backend->compiler().compile(vectorized.view()) != first);
  CHECK(backend->compiler().counters().compiles == 2);
}

TEST_CASE(
    "given a compute_ target, then compile returns NUL-terminated PTX "
    "with the entry") {
  auto backend = make_backend();
  TestKey key(ks::kExpand, "cuda:compute_90");
  const auto compiled = backend->compiler().compile(key.view());
  CHECK(compiled->format == "ptx");
  REQUIRE(!compiled->binary.empty());
  CHECK(compiled->binary.back() == '\0');
  CHECK(compiled->binary.find(".entry " + compiled->entry_point) !=
        std::string::npos);
  CHECK(compiled->binary.find(".target sm_90") != std::string::npos);
}

TEST_CASE(
    "given targets NVRTC cannot build, then compile is unsupported and "
    "says why") {
  auto backend = make_backend();
  TestKey hip(ks::kExpand, "hip:gfx942");
  PluginError e = error_of([&] { backend->compiler().compile(hip.view()); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  CHECK(std::string(e.what()).find("hip:gfx942") != std::string::npos);
  TestKey ancient(ks::kExpand, "cuda:sm_20");
  e = error_of([&] { backend->compiler().compile(ancient.view()); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  CHECK(std::string(e.what()).find("sm_20") != std::string::npos);
  CHECK(std::string(e.what()).find("90") != std::string::npos);
}

TEST_CASE(
    "given a deliberately broken source, then the error carries the "
    "NVRTC log, the key and the options") {
  const auto embedded = gpu::embedded_kernel_sources();
  std::vector<EmbeddedSource> sources(embedded.begin(), embedded.end());
  const std::string broken =
      std::string(gpu::find_source(embedded, "silu_and_mul.cuh").text) +
      "\nnamespace jw { int deliberately_broken = undeclared_identifier; }\n";
  for (EmbeddedSource& s : sources) {
    if (s.name == "silu_and_mul.cuh") s.text = broken;
  }
  auto backend = make_backend(sources);
  TestKey key(ks::kSiluAndMul);
  const PluginError e =
      error_of([&] { backend->compiler().compile(key.view()); });
  const std::string message = e.what();
  CHECK(e.status() == JW_ERROR_COMPILE_FAILED);
  CHECK(message.find("undeclared_identifier") != std::string::npos);  // log
  CHECK(message.find("NVRTC log:") != std::string::npos);
  CHECK(message.find(key.text()) != std::string::npos);
  CHECK(message.find("--gpu-architecture=sm_90 -std=c++17") !=
        std::string::npos);
  CHECK(message.find("jw::kernels::silu_and_mul<") != std::string::npos);
  // A failure is not memoized: the next request compiles (and fails) again.
  CHECK_THROWS_AS(backend->compiler().compile(key.view()), PluginError);
  CHECK(backend->compiler().counters().compiles == 2);
  // The intact sources fingerprint differently.
  CHECK(backend->compiler().fingerprint(key.view()) !=
        make_backend()->compiler().fingerprint(key.view()));
}

TEST_CASE(
    "given a key, then describe shows source, name expression, options "
    "and compiler") {
  auto backend = make_backend();
  TestKey key(ks::kPackSeq);
  const std::string text = backend->compiler().describe(key.view());
  CHECK(text.find("source: pack_unpack_seq.cuh + portability.cuh + "
                  "kernel_support.cuh") != std::string::npos);
  CHECK(text.find("name expression: jw::kernels::pack_seq<") !=
        std::string::npos);
  CHECK(text.find("options: --gpu-architecture=sm_90 -std=c++17") !=
        std::string::npos);
  CHECK(text.find("compiler: nvrtc ") != std::string::npos);
  CHECK(text.find("BLOCK_T") != std::string::npos);
}

TEST_CASE(
    "given keys, then the fingerprint covers compiler, sources, name "
    "expression and options") {
  auto backend = make_backend();
  TestKey key(ks::kZeroKvBlocks);
  const std::string text = backend->compiler().fingerprint(key.view());
  CHECK(text.find("compiler: nvrtc ") != std::string::npos);
  CHECK(text.find("source: zero_kv_blocks.cuh xxh128 ") != std::string::npos);
  CHECK(text.find("header: portability.cuh xxh128 ") != std::string::npos);
  CHECK(text.find("header: kernel_support.cuh xxh128 ") != std::string::npos);
  CHECK(text.find("name expression: jw::kernels::zero_kv_blocks<jw::i32, 0, "
                  "jw::i32>") != std::string::npos);
  CHECK(text.find("options: --gpu-architecture=sm_90 -std=c++17") !=
        std::string::npos);
  // Stable for a key, different for another instantiation or target.
  CHECK(backend->compiler().fingerprint(key.view()) == text);
  TestKey div16(ks::kZeroKvBlocks);
  div16.integer("n_blocks", JW_INT_I32, JW_INT_CLASS_DIV16);
  CHECK(backend->compiler().fingerprint(div16.view()) != text);
  TestKey sm80(ks::kZeroKvBlocks, "cuda:sm_80");
  CHECK(backend->compiler().fingerprint(sm80.view()) != text);
}

TEST_CASE(
    "given compile threads, then NVRTC splits a compile over them unless "
    "one thread is asked for, and a bad count is refused and changes "
    "nothing") {
  auto nvrtc = open_nvrtc();
  const gpu::GpuTarget target = jitwarm::cuda::parse_cuda_target("cuda:sm_90");
  const bool splits = splits_compiles(*nvrtc);
  auto split_option = [&] {
    const std::vector<std::string> options = nvrtc->options_for(target);
    const auto found = std::find_if(
        options.begin(), options.end(),
        [](const auto& o) { return o.rfind("--split-compile", 0) == 0; });
    return found == options.end() ? std::string() : *found;
  };
  CHECK(nvrtc->compile_threads() == 0);
  CHECK(split_option() == (splits ? "--split-compile=0" : ""));
  nvrtc->set_compile_threads("1");
  CHECK(split_option().empty());
  nvrtc->set_compile_threads("8");
  CHECK(split_option() == (splits ? "--split-compile=8" : ""));
  nvrtc->set_compile_threads("4096");
  CHECK(nvrtc->compile_threads() == 4096);
  for (const char* bad : {"", "-1", "x", "4x", " 4", "4097", "99999999999"}) {
    CAPTURE(bad);
    const PluginError e = error_of([&] { nvrtc->set_compile_threads(bad); });
    CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("JITWARM_CUDA_COMPILE_THREADS is '" +
                                     std::string(bad) + "'") !=
          std::string::npos);
    CHECK(nvrtc->compile_threads() == 4096);
  }
}

TEST_CASE(
    "given NVRTC 13 or later, then every compile bypasses NVRTC's cache in "
    "the driver, whatever the other settings") {
  // The cache would initialize the CUDA driver inside a compile-only
  // warmup (test_cuda_fork_after_warmup needs a GPU to show what that
  // breaks); here: that the option is always there, and compiles with it.
  auto nvrtc = open_nvrtc();
  const bool bypasses = nvrtc->major_version() >= 13;
  const gpu::GpuTarget target = jitwarm::cuda::parse_cuda_target("cuda:sm_90");
  for (const char* threads : {"0", "1", "8"}) {
    CAPTURE(threads);
    nvrtc->set_compile_threads(threads);
    const std::vector<std::string> options = nvrtc->options_for(target);
    CHECK(std::count(options.begin(), options.end(), "--no-cache") ==
          (bypasses ? 1 : 0));
  }
  auto backend = make_backend(gpu::embedded_kernel_sources(), std::move(nvrtc));
  TestKey key(ks::kZeroKvBlocks);
  CHECK((backend->compiler().fingerprint(key.view()).find("--no-cache") !=
         std::string::npos) == bypasses);
  const gpu::GpuCompiler::Descriptor zero_kv_blocks =
      builtin(ks::kZeroKvBlocks);
  const std::vector<const jw_compile_key_view*> keys{&key.view()};
  const auto results = backend->compiler().compile_batch(zero_kv_blocks, keys);
  REQUIRE(results.size() == 1);
  REQUIRE(results.front().compiled != nullptr);
  CHECK(defines_function(results.front().compiled->binary,
                         results.front().compiled->entry_point));
}

TEST_CASE(
    "given one thread or all of them, then a batch compiles to the same "
    "kernels under fingerprints of their own") {
  auto one_thread = open_nvrtc();
  const bool splits = splits_compiles(*one_thread);
  one_thread->set_compile_threads("1");
  auto single =
      make_backend(gpu::embedded_kernel_sources(), std::move(one_thread));
  auto split = make_backend();
  // Two instantiations: a program with two kernels to split.
  TestKey vectorized(ks::kSiluAndMul);
  vectorized.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16);
  TestKey scalar(ks::kSiluAndMul);
  scalar.all_aligned(false);
  const std::vector<const jw_compile_key_view*> keys{&vectorized.view(),
                                                     &scalar.view()};
  const gpu::GpuCompiler::Descriptor silu_and_mul = builtin(ks::kSiluAndMul);
  for (GpuBackend* backend : {single.get(), split.get()}) {
    const auto results = backend->compiler().compile_batch(silu_and_mul, keys);
    REQUIRE(results.size() == 2);
    for (const gpu::GpuCompiler::BatchResult& result : results) {
      REQUIRE(result.compiled != nullptr);
      CHECK(defines_function(result.compiled->binary,
                             result.compiled->entry_point));
    }
  }
  CHECK(single->compiler().fingerprint(scalar.view()).find("--split-compile") ==
        std::string::npos);
  CHECK(
      (split->compiler().fingerprint(scalar.view()).find("--split-compile=0") !=
       std::string::npos) == splits);
  if (splits) {
    CHECK(single->compiler().fingerprint(scalar.view()) !=
          split->compiler().fingerprint(scalar.view()));
  }
}

TEST_CASE(
    "given one key, then it compiles without --split-compile (one kernel has "
    "nothing to split), and a batch on one shared cubin keeps it") {
  // ptxas notes its options in the cubin: what NVRTC was really asked.
  auto one_kernel = make_backend();
  if (!splits_compiles(
          *static_cast<const NvrtcCompiler*>(one_kernel->compiler().rtc()))) {
    return;  // no --split-compile before NVRTC 12.8
  }
  TestKey key(ks::kSiluAndMul);
  key.all_aligned(false);
  const auto alone = one_kernel->compiler().compile(key.view());
  const std::string note = ptxas_note(alone->binary);
  REQUIRE_MESSAGE(note.find("-arch sm_90") != std::string::npos, note);
  CHECK(note.find("split-compile") == std::string::npos);
  // The fingerprint still names the setting (a batch uses it).
  CHECK(one_kernel->compiler()
            .fingerprint(key.view())
            .find("--split-compile=0") != std::string::npos);
  // A batch that is not linked per kernel (fast compile: one shared cubin)
  // is split.
  auto fast = open_nvrtc();
  fast->set_fast_compile("mid");
  auto batches = make_backend(gpu::embedded_kernel_sources(), std::move(fast));
  TestKey other(ks::kSiluAndMul);
  other.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16);
  const std::vector<const jw_compile_key_view*> keys{&key.view(),
                                                     &other.view()};
  const auto results =
      batches->compiler().compile_batch(builtin(ks::kSiluAndMul), keys);
  REQUIRE(results.size() == 2);
  REQUIRE(results[0].compiled != nullptr);
  CHECK(ptxas_note(results[0].compiled->binary).find("split-compile") !=
        std::string::npos);
}

TEST_CASE(
    "given a built-in kernel, then NVRTC compiles it with -minimal (its "
    "sources include only jitwarm's headers), and a kernel from source "
    "without it") {
  auto backend = make_backend();
  const auto* nvrtc =
      static_cast<const NvrtcCompiler*>(backend->compiler().rtc());
  const bool minimal =
      nvrtc->major_version() > 12 ||
      (nvrtc->major_version() == 12 && nvrtc->minor_version() >= 4);
  const gpu::GpuTarget target = jitwarm::cuda::parse_cuda_target("cuda:sm_90");
  const gpu::GpuCompiler::Descriptor expand = builtin(ks::kExpand);
  const auto has_minimal = [](const std::vector<std::string>& options) {
    return std::count(options.begin(), options.end(), "-minimal") == 1;
  };
  CHECK(has_minimal(backend->compiler().options_of(*expand, target)) ==
        minimal);
  // The same descriptor as a kernel from source (its files its own).
  gpu::KernelDescriptor from_source = *expand;
  const auto embedded = gpu::embedded_kernel_sources();
  from_source.sources = embedded;
  CHECK_FALSE(has_minimal(backend->compiler().options_of(from_source, target)));
  // What the key's fingerprint and describe() say, and it compiles.
  TestKey key(ks::kExpand);
  CHECK((backend->compiler().fingerprint(key.view()).find("-minimal") !=
         std::string::npos) == minimal);
  CHECK((backend->compiler().describe(key.view()).find("-minimal") !=
         std::string::npos) == minimal);
  const auto compiled = backend->compiler().compile(key.view());
  CHECK(defines_function(compiled->binary, compiled->entry_point));
}

TEST_CASE(
    "given nvJitLink, then each key of a batch gets a cubin of its own kernel "
    "only, with the machine code of the key compiled alone, unless one "
    "thread or fast compile is asked for") {
  const gpu::GpuTarget target = jitwarm::cuda::parse_cuda_target("cuda:sm_90");
  auto nvrtc = open_nvrtc();
  if (!nvrtc->links_apart(target)) {
    // A toolkit without libnvJitLink.so.13 (CI has CUDA 13.0, which has it).
    CHECK(!nvrtc->linker_unavailable().empty());
    MESSAGE("batches share one cubin here: " << nvrtc->linker_unavailable());
    return;
  }
  CHECK(nvrtc->linker_unavailable().empty());
  CHECK(nvrtc->identity_for(target).find(nvrtc->identity() + " + nvjitlink ") ==
        0);
  CHECK(nvrtc->preferred_batch_size(target) == NvrtcCompiler::kLinkedBatchSize);
  // Either setting compiles a batch into one cubin again, under the
  // fingerprint of NVRTC alone.
  nvrtc->set_compile_threads("1");
  CHECK_FALSE(nvrtc->links_apart(target));
  CHECK(nvrtc->identity_for(target) == nvrtc->identity());
  CHECK(nvrtc->preferred_batch_size(target) == 0);
  nvrtc->set_compile_threads("0");
  nvrtc->set_fast_compile("min");
  CHECK_FALSE(nvrtc->links_apart(target));
  CHECK(nvrtc->identity_for(target) == nvrtc->identity());
  CHECK(nvrtc->preferred_batch_size(target) == 0);
  nvrtc->set_fast_compile("off");
  REQUIRE(nvrtc->links_apart(target));

  auto backend = make_backend(gpu::embedded_kernel_sources(), std::move(nvrtc));
  CHECK(backend->compiler().preferred_batch_size("cuda:sm_90") ==
        NvrtcCompiler::kLinkedBatchSize);
  TestKey vectorized(ks::kSiluAndMul);
  vectorized.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16);
  TestKey scalar(ks::kSiluAndMul);
  scalar.all_aligned(false);
  TestKey bf16(ks::kSiluAndMul);
  bf16.dtype("x", JW_DTYPE_BFLOAT16);
  const std::vector<const jw_compile_key_view*> keys{
      &vectorized.view(), &scalar.view(), &bf16.view()};
  CHECK(backend->compiler().fingerprint(scalar.view()).find("nvjitlink") !=
        std::string::npos);
  const auto results =
      backend->compiler().compile_batch(builtin(ks::kSiluAndMul), keys);
  REQUIRE(results.size() == keys.size());
  std::set<std::string> entry_points;
  for (const gpu::GpuCompiler::BatchResult& result : results) {
    REQUIRE(result.compiled != nullptr);
    entry_points.insert(result.compiled->entry_point);
  }
  REQUIRE(entry_points.size() == keys.size());
  // Each key compiled alone, by a backend of its own (this one remembers
  // the batch's kernels): the same machine code as its kernel linked apart.
  auto alone = make_backend();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const CompiledKernel& linked = *results[i].compiled;
    CAPTURE(linked.entry_point);
    for (const std::string& entry : entry_points) {
      CHECK(defines_function(linked.binary, entry) ==
            (entry == linked.entry_point));
    }
    const auto single = alone->compiler().compile(*keys[i]);
    REQUIRE(single->entry_point == linked.entry_point);
    const std::string text = ".text." + linked.entry_point;
    const auto code = [&](const std::string& binary) {
      const auto elf = gpu::read_elf(binary);
      REQUIRE(elf.has_value());
      for (const gpu::ElfSection& section : elf->sections) {
        if (section.name == text) {
          return binary.substr(section.offset, section.size);
        }
      }
      FAIL("no section " << text);
      return std::string();
    };
    const std::string linked_code = code(linked.binary);
    CHECK(!linked_code.empty());
    CHECK(linked_code == code(single->binary));
  }
}

TEST_CASE(
    "given this machine's driver situation, then capabilities and "
    "launch report it without initializing the driver") {
  auto backend = make_backend();
  std::string detail;
  const uint32_t flags = backend->capabilities(detail);
  CHECK((flags & JW_PLATFORM_CAN_COMPILE) != 0);
  TestKey key(ks::kRmsNorm);
  key.all_aligned(false);
  const auto compiled = backend->compiler().compile(key.view());
  TestArgs args = jitwarm::gpu_test::rms_norm_args(2, 8, 1e-6);
  const jw_artifact_view artifact = jitwarm::gpu_test::artifact_view(
      key, compiled->binary, compiled->format, compiled->entry_point, 1);
  if (!machine_has_cuda_driver()) {
    CHECK((flags & JW_PLATFORM_CAN_LAUNCH) == 0);
    CHECK(detail.find("no CUDA driver: ") != std::string::npos);
    CHECK(detail.find("libcuda.so.1") != std::string::npos);
    CHECK(backend->driver().device_count() == 0);
    const PluginError e = error_of(
        [&] { backend->launcher().launch(artifact, args.values(), nullptr); });
    CHECK(e.status() == JW_ERROR_NO_DEVICE);
    CHECK(std::string(e.what()).find(key.text()) != std::string::npos);
    CHECK(std::string(e.what()).find("no CUDA driver") != std::string::npos);
  } else {
    // A driver is present: capabilities promise launches without having
    // called cuInit (devices are probed on first use).
    CHECK((flags & JW_PLATFORM_CAN_LAUNCH) != 0);
    CHECK(detail.find("probed on first use") != std::string::npos);
  }
}

TEST_CASE("given one key per kernel, then each compiles alone (timed)") {
  auto backend = make_backend();
  double total = 0;
  for (const auto& descriptor : gpu::builtin_descriptors()) {
    const std::string_view kernel = descriptor->kernel_name;
    TestKey key(kernel);
    const auto start = std::chrono::steady_clock::now();
    const auto compiled = backend->compiler().compile(key.view());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    total += seconds;
    MESSAGE(kernel << ": " << seconds << " s (" << compiled->binary.size()
                   << " bytes of CUBIN)");
    CHECK(defines_function(compiled->binary, compiled->entry_point));
  }
  MESSAGE("10 single-key NVRTC compiles: " << total << " s");
}
