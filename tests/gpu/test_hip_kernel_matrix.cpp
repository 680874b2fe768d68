// Every kernel through the HIP plugin's compiler (plugins/hip/hip_compiler:
// hiprtc for gfx90a, clang for gfx942 with Debian's hiprtc 5.2), with no
// GPU: per kernel, the instantiations of every warmup key of
// manifests/kernel-set.toml (expanded by the core, as `jitwarm warmup`
// does) and of the compile-key matrix of tests/gpu/kernel_key_matrix (every
// dtype, integer type and class, both alignments, the constexpr shapes that
// change code paths). The distinct name expressions of a kernel compile as
// one program per target (a few seconds instead of one compile per key);
// the code object must be an AMDGPU ELF for the target's processor that
// defines each expression's kernel and its descriptor, and the two
// compilers must agree on every lowered name (mangling does not depend on
// the target).
#include "code_object.hpp"
#include "embedded_kernel_sources.hpp"
#include "gpu_test_support.hpp"
#include "hip_compiler.hpp"
#include "hip_target.hpp"
#include "kernel_instantiation.hpp"
#include "kernel_key_matrix.hpp"
#include "kernel_set.hpp"

#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <chrono>
#include <map>
#include <set>

namespace gpu = jitwarm::gpu;
namespace ks = jitwarm::kernel_set;
namespace hip = jitwarm::hip;

namespace {

// e_flags processor numbers (EF_AMDGPU_MACH_AMDGCN_*).
constexpr uint32_t kMachGfx90a = 0x3f;
constexpr uint32_t kMachGfx942 = 0x4c;

const hip::HipCompiler& compilers() {
  static const std::unique_ptr<hip::HipCompiler> compiler = [] {
    std::string hiprtc_missing;
    auto hiprtc = hip::HiprtcCompiler::open(hiprtc_missing);
    std::string searched;
    auto candidates = hip::ClangHipCompiler::find_candidates(searched);
    auto clang = std::make_unique<hip::ClangHipCompiler>(std::move(candidates),
                                                         searched);
    return std::make_unique<hip::HipCompiler>(
        std::move(hiprtc), hiprtc_missing, std::move(clang),
        "no clang found (searched " + searched + ")");
  }();
  return *compiler;
}

// A compile key of the core as the plugin receives it (jw_compile_key_view
// over owned storage), in schema order like the core's key views.
class KeyView {
 public:
  explicit KeyView(const jitwarm::CompileKey& key) : key_(key) {
    text_ = key.text();
    for (const jitwarm::ParamSpec& p : key.params()) {
      jw_param_spec spec{};
      spec.struct_size = sizeof(jw_param_spec);
      spec.name = p.name.c_str();
      spec.kind = p.kind;
      spec.dtype = p.dtype;
      spec.alignment = p.alignment;
      spec.num_stride_specs = static_cast<uint32_t>(p.stride_specs.size());
      for (std::size_t d = 0; d < p.stride_specs.size(); ++d) {
        spec.stride_specs[d] = {p.stride_specs[d].type,
                                p.stride_specs[d].value_class};
      }
      spec.int_spec = {p.int_spec.type, p.int_spec.value_class};
      spec.float_type = p.float_type;
      spec.scalar_kind = p.scalar_kind;
      spec.constexpr_value = p.constexpr_value;
      specs_.push_back(spec);
    }
    view_.struct_size = sizeof(jw_compile_key_view);
    view_.kernel_name = key_.kernel_name().c_str();
    view_.impl_name = key_.impl_name().c_str();
    view_.target = key_.target().c_str();
    view_.params = specs_.data();
    view_.num_params = static_cast<uint32_t>(specs_.size());
    view_.hash_lo = key_.hash().lo;
    view_.hash_hi = key_.hash().hi;
    view_.text = text_.c_str();
  }
  const jw_compile_key_view& view() const { return view_; }
  const std::string& text() const { return text_; }

 private:
  jitwarm::CompileKey key_;
  std::string text_;
  std::vector<jw_param_spec> specs_;
  jw_compile_key_view view_{};
};

// The warmup keys of the kernel-set manifest for one kernel and target.
std::vector<jitwarm::CompileKey> manifest_keys(std::string_view kernel,
                                               const std::string& target) {
  static const jitwarm::WarmupManifest manifest =
      jitwarm::load_warmup_manifest(JW_KERNEL_SET_MANIFEST);
  const std::string_view name = kernel;
  const jw_kernel_schema* c_schema = jitwarm::kernel_set::find_schema(name);
  REQUIRE(c_schema != nullptr);
  const jitwarm::KernelSchema schema =
      jitwarm::KernelSchema::from_c(*c_schema, "plugins/common/kernel_set");
  std::vector<jitwarm::CompileKey> keys;
  for (const jitwarm::WarmupRequest& request : manifest.requests) {
    if (request.kernel_name != name) continue;
    for (jitwarm::CompileKey& key :
         jitwarm::enumerate_warmup_keys(schema, request, target, "hip-rtc")) {
      keys.push_back(std::move(key));
    }
  }
  return keys;
}

struct TargetCase {
  const char* target;
  uint32_t mach;
};

// Compiles the kernel's instantiations for `target`; returns the lowered
// name of each name expression.
std::map<std::string, std::string> compile_for(std::string_view kernel,
                                               const TargetCase& target_case) {
  const gpu::GpuTarget target = hip::parse_hip_target(target_case.target);
  CAPTURE(target.text);
  std::set<std::string> expressions;
  std::set<std::string> warmup_expressions;
  std::string source_file;
  const std::vector<jitwarm::CompileKey> warmup =
      manifest_keys(kernel, target.text);
  REQUIRE(!warmup.empty());
  for (const jitwarm::CompileKey& key : warmup) {
    const KeyView view(key);
    CAPTURE(view.text());
    const gpu::KernelInstantiation inst =
        gpu::instantiate_kernel(view.view(), target);
    source_file = inst.source_file;
    expressions.insert(inst.name_expression());
    warmup_expressions.insert(inst.name_expression());
  }
  std::size_t matrix_keys = 0;
  for (jitwarm::gpu_test::TestKey& key :
       jitwarm::gpu_test::key_matrix(kernel, target.text)) {
    CAPTURE(key.text());
    expressions.insert(
        gpu::instantiate_kernel(key.view(), target).name_expression());
    ++matrix_keys;
  }

  const hip::HipCompiler& compiler = compilers();
  const hip::HipCompiler::Choice choice = compiler.choose(target);
  // gfx90a is in every comgr's list; gfx942 only in ROCm 6's and later
  // (Debian's hiprtc 5.2 would abort on it), so clang compiles it here.
  REQUIRE_MESSAGE(compiler.hiprtc() != nullptr,
                  "hiprtc (libamdhip64) is needed for this test");
  const bool comgr_lists = compiler.hiprtc()->isas().knows(target.arch);
  CHECK(std::string(choice.name) == (comgr_lists ? "hiprtc" : "clang"));
  if (target.arch == "gfx90a") CHECK(std::string(choice.name) == "hiprtc");

  const auto sources = gpu::embedded_kernel_sources();
  gpu::RtcProgram program;
  program.source_name = source_file;
  program.source_text =
      std::string(gpu::find_source(sources, source_file).text);
  for (const gpu::EmbeddedSource* header :
       gpu::include_closure(sources, source_file)) {
    program.headers.push_back(
        {std::string(header->name), std::string(header->text)});
  }
  program.name_expressions.assign(expressions.begin(), expressions.end());
  program.options = compiler.options_for(target);

  const auto start = std::chrono::steady_clock::now();
  gpu::CompiledProgram out;
  try {
    out = compiler.compile(program, target);
  } catch (const gpu::RtcCompileError& e) {
    FAIL(source_file << ": " << e.what() << "\n" << e.log());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  MESSAGE(kernel << " for " << target.arch << " by " << std::string(choice.name)
                 << ": " << warmup.size() << " warmup keys + " << matrix_keys
                 << " matrix keys, " << expressions.size()
                 << " instantiations, one program: " << seconds << " s");

  CHECK(out.format == "hsaco");
  const std::optional<hip::CodeObject> code_object =
      hip::read_code_object(out.binary);
  REQUIRE(code_object.has_value());
  CHECK((code_object->flags & 0xff) == target_case.mach);
  REQUIRE(out.lowered_names.size() == expressions.size());
  std::map<std::string, std::string> lowered;
  std::size_t i = 0;
  for (const std::string& expression : expressions) {
    CAPTURE(expression);
    const std::string& name = out.lowered_names[i++];
    CHECK(name.rfind(hip::mangled_template_prefix(expression), 0) == 0);
    CHECK(std::binary_search(code_object->kernels.begin(),
                             code_object->kernels.end(), name));
    lowered[expression] = name;
  }
  // Distinct instantiations are distinct kernels.
  std::set<std::string> distinct;
  for (const auto& [expression, name] : lowered) distinct.insert(name);
  CHECK(distinct.size() == lowered.size());
  for (const std::string& expression : warmup_expressions) {
    CHECK(lowered.count(expression) == 1);
  }
  return lowered;
}

void compile_every_instantiation(std::string_view kernel) {
  const std::map<std::string, std::string> gfx90a =
      compile_for(kernel, {"hip:gfx90a", kMachGfx90a});
  const std::map<std::string, std::string> gfx942 =
      compile_for(kernel, {"hip:gfx942", kMachGfx942});
  // Both targets instantiate the same templates (64-wide wavefronts both),
  // so each expression must lower to one name whichever compiler built it.
  CHECK(gfx90a == gfx942);
}

}  // namespace

TEST_CASE(
    "hip compiles every instantiation of compute_slot_mapping for gfx90a "
    "and gfx942") {
  compile_every_instantiation(ks::kComputeSlotMapping);
}
TEST_CASE("hip compiles every instantiation of expand for gfx90a and gfx942") {
  compile_every_instantiation(ks::kExpand);
}
TEST_CASE(
    "hip compiles every instantiation of batch_memcpy for gfx90a and gfx942") {
  compile_every_instantiation(ks::kBatchMemcpy);
}
TEST_CASE(
    "hip compiles every instantiation of zero_kv_blocks for gfx90a and "
    "gfx942") {
  compile_every_instantiation(ks::kZeroKvBlocks);
}
TEST_CASE(
    "hip compiles every instantiation of scatter_states for gfx90a and "
    "gfx942") {
  compile_every_instantiation(ks::kScatterStates);
}
TEST_CASE(
    "hip compiles every instantiation of pack_seq for gfx90a and gfx942") {
  compile_every_instantiation(ks::kPackSeq);
}
TEST_CASE(
    "hip compiles every instantiation of unpack_seq for gfx90a and gfx942") {
  compile_every_instantiation(ks::kUnpackSeq);
}
TEST_CASE(
    "hip compiles every instantiation of prepare_pos_seq_lens for gfx90a and "
    "gfx942") {
  compile_every_instantiation(ks::kPreparePosSeqLens);
}
TEST_CASE(
    "hip compiles every instantiation of rms_norm for gfx90a and gfx942") {
  compile_every_instantiation(ks::kRmsNorm);
}
TEST_CASE(
    "hip compiles every instantiation of silu_and_mul for gfx90a and gfx942") {
  compile_every_instantiation(ks::kSiluAndMul);
}
