// Every kernel through the real NVRTC for sm_90, with no GPU: for each
// kernel, the instantiations of every dtype, every integer type and class,
// both alignments and the constexpr shapes that change code paths. The
// distinct name expressions of a kernel compile as one NVRTC program (one
// front-end pass instead of one per key, so the suite stays fast on a
// 2-core CI box); the CUBIN must be an EM_CUDA ELF that defines every
// lowered name.
#include "cuda_target.hpp"
#include "elf_symbols.hpp"
#include "embedded_kernel_sources.hpp"
#include "gpu_test_support.hpp"
#include "kernel_instantiation.hpp"
#include "kernel_key_matrix.hpp"
#include "kernel_set.hpp"
#include "nvrtc_compiler.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <set>

using jitwarm::gpu_test::TestKey;
namespace gpu = jitwarm::gpu;
namespace ks = jitwarm::kernel_set;

namespace {

gpu::RtcProgram program_of(const std::string& source_file,
                           const std::set<std::string>& expressions,
                           const gpu::RtcCompiler& compiler,
                           const gpu::GpuTarget& target) {
  const auto sources = gpu::embedded_kernel_sources();
  gpu::RtcProgram program;
  program.source_name = source_file;
  program.source_text =
      std::string(gpu::find_source(sources, source_file).text);
  for (const gpu::EmbeddedSource* h :
       gpu::include_closure(sources, source_file)) {
    program.headers.push_back({std::string(h->name), std::string(h->text)});
  }
  program.name_expressions.assign(expressions.begin(), expressions.end());
  program.options = compiler.options_for(target);
  return program;
}

const jitwarm::cuda::NvrtcCompiler& nvrtc() {
  static std::string why_not;
  static const std::unique_ptr<jitwarm::cuda::NvrtcCompiler> compiler =
      jitwarm::cuda::NvrtcCompiler::open(why_not);
  if (compiler == nullptr) FAIL("NVRTC is needed for this test: " << why_not);
  return *compiler;
}

void compile_every_instantiation(std::string_view kernel) {
  const gpu::GpuTarget target = jitwarm::cuda::parse_cuda_target("cuda:sm_90");
  std::vector<TestKey> keys =
      jitwarm::gpu_test::key_matrix(kernel, target.text);
  std::set<std::string> expressions;
  std::string source_file;
  for (TestKey& key : keys) {
    CAPTURE(key.text());
    const gpu::KernelInstantiation inst =
        gpu::instantiate_kernel(key.view(), target);
    source_file = inst.source_file;
    expressions.insert(inst.name_expression());
  }
  const gpu::RtcProgram program =
      program_of(source_file, expressions, nvrtc(), target);
  const auto start = std::chrono::steady_clock::now();
  gpu::CompiledProgram out;
  try {
    out = nvrtc().compile(program, target);
  } catch (const gpu::RtcCompileError& e) {
    FAIL(source_file << ": " << e.what() << "\n" << e.log());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  MESSAGE(kernel << ": " << keys.size() << " keys, " << expressions.size()
                 << " instantiations, one NVRTC program: " << seconds << " s");
  CHECK(out.format == "cubin");
  REQUIRE(out.lowered_names.size() == expressions.size());
  // The kernels a cubin defines.
  const auto functions_of = [](const std::string& binary) {
    const auto elf = gpu::read_elf(binary);
    REQUIRE(elf.has_value());
    CHECK(elf->machine == gpu::kElfMachineCuda);
    std::set<std::string> functions;
    for (const gpu::ElfSymbol& s : elf->symbols) {
      if (s.defined && s.type == 2 /* STT_FUNC */) functions.insert(s.name);
    }
    return functions;
  };
  // Linked per kernel (nvjitlink_linker.hpp): each expression's cubin
  // defines its kernel and none of the others; else one cubin defines all.
  const bool apart = nvrtc().links_apart(target);
  CHECK(out.binaries.size() == (apart ? expressions.size() : 0));
  const std::set<std::string> shared =
      apart ? std::set<std::string>{} : functions_of(out.binary);
  for (std::size_t i = 0; i < out.lowered_names.size(); ++i) {
    const std::string& lowered = out.lowered_names[i];
    CAPTURE(lowered);
    CHECK(lowered.rfind("_ZN2jw7kernels", 0) == 0);
    const std::set<std::string> functions =
        apart ? functions_of(out.binaries.at(i)) : shared;
    for (const std::string& other : out.lowered_names) {
      CHECK(functions.count(other) == (other == lowered || !apart ? 1 : 0));
    }
  }
}

}  // namespace

TEST_CASE(
    "nvrtc compiles every instantiation of compute_slot_mapping for sm_90") {
  compile_every_instantiation(ks::kComputeSlotMapping);
}
TEST_CASE("nvrtc compiles every instantiation of expand for sm_90") {
  compile_every_instantiation(ks::kExpand);
}
TEST_CASE("nvrtc compiles every instantiation of batch_memcpy for sm_90") {
  compile_every_instantiation(ks::kBatchMemcpy);
}
TEST_CASE("nvrtc compiles every instantiation of zero_kv_blocks for sm_90") {
  compile_every_instantiation(ks::kZeroKvBlocks);
}
TEST_CASE("nvrtc compiles every instantiation of scatter_states for sm_90") {
  compile_every_instantiation(ks::kScatterStates);
}
TEST_CASE("nvrtc compiles every instantiation of pack_seq for sm_90") {
  compile_every_instantiation(ks::kPackSeq);
}
TEST_CASE("nvrtc compiles every instantiation of unpack_seq for sm_90") {
  compile_every_instantiation(ks::kUnpackSeq);
}
TEST_CASE(
    "nvrtc compiles every instantiation of prepare_pos_seq_lens for sm_90") {
  compile_every_instantiation(ks::kPreparePosSeqLens);
}
TEST_CASE("nvrtc compiles every instantiation of rms_norm for sm_90") {
  compile_every_instantiation(ks::kRmsNorm);
}
TEST_CASE("nvrtc compiles every instantiation of silu_and_mul for sm_90") {
  compile_every_instantiation(ks::kSiluAndMul);
}
