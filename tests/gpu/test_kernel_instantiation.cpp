// Compile key -> kernel instantiation (plugins/common/kernel_instantiation):
// the exact name expressions, what folds and what specializes, and the keys
// that are refused.
#include <jitwarm/plugin.hpp>

#include "gpu_test_support.hpp"
#include "kernel_instantiation.hpp"
#include "kernel_set.hpp"

#include <doctest/doctest.h>

#include <set>

using jitwarm::gpu::GpuTarget;
using jitwarm::gpu::instantiate_kernel;
using jitwarm::gpu::KernelInstantiation;
using jitwarm::gpu_test::TestKey;
using jitwarm::plugin::PluginError;
namespace ks = jitwarm::kernel_set;

namespace {

GpuTarget target(uint32_t warp_size = 32) {
  GpuTarget t;
  t.text = "cuda:sm_90";
  t.platform = "cuda";
  t.arch = "sm_90";
  t.binary_format = "cubin";
  t.warp_size = warp_size;
  return t;
}

KernelInstantiation instantiate(TestKey& key, uint32_t warp_size = 32) {
  return instantiate_kernel(key.view(), target(warp_size));
}

// The message and status of the PluginError `body` throws.
template <typename Body>
std::pair<jw_status, std::string> error_of(Body&& body) {
  try {
    body();
  } catch (const PluginError& e) {
    return {e.status(), e.what()};
  }
  FAIL("no PluginError was thrown");
  return {JW_OK, ""};
}

}  // namespace

TEST_CASE(
    "given the default key of every kernel, then it instantiates its "
    "own template from its own source") {
  const auto descriptors = jitwarm::gpu::builtin_descriptors();
  CHECK(descriptors.size() == jitwarm::kernel_set::schemas().size());
  for (const auto& descriptor : descriptors) {
    const std::string& name = descriptor->kernel_name;
    CAPTURE(name);
    TestKey key(name);
    const KernelInstantiation inst = instantiate(key);
    CHECK(inst.descriptor == descriptor);
    const std::string short_name(name.substr(name.rfind('.') + 1));
    CHECK(inst.function_template == "jw::kernels::" + short_name);
    CHECK(inst.name_expression().rfind(inst.function_template + "<", 0) == 0);
    CHECK(!inst.source_file.empty());
    CHECK(jitwarm::gpu::find_builtin_descriptor(name) == descriptor.get());
  }
  CHECK(jitwarm::gpu::find_builtin_descriptor("vllm.not.a.kernel") == nullptr);
}

TEST_CASE(
    "given keys of each kernel, then the name expressions list the "
    "template arguments in the order the .cuh files declare them") {
  SUBCASE("compute_slot_mapping") {
    TestKey key(ks::kComputeSlotMapping);
    key.integer("block_table_stride", JW_INT_I64, JW_INT_CLASS_DIV16)
        .integer("num_reqs", JW_INT_I32)
        .integer("max_num_tokens", JW_INT_I64)
        .integer("block_size", JW_INT_I32, JW_INT_CLASS_ONE)
        .constant("blocks_per_kv_block", 2)
        .constant("cp_world_size", 4)
        .constant("cp_rank", 3)
        .constant("cp_interleave", 8);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::compute_slot_mapping<jw::i64, 2, jw::i32, jw::i64, "
          "jw::i32, 1, 2, 4, 3, 8, true>");
    key.aligned("slot_mapping", false);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::compute_slot_mapping<jw::i64, 2, jw::i32, jw::i64, "
          "jw::i32, 1, 2, 4, 3, 8, false>");
  }
  SUBCASE("expand") {
    TestKey key(ks::kExpand);
    key.dtype("x", JW_DTYPE_INT64)
        .integer("replace_from", JW_INT_U64)
        .integer("replace_to", JW_INT_I32)
        .constant("MAX_NUM_TOKENS", 5);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::expand<jw::i64, jw::u64, jw::i32, 5, true>");
    key.aligned("output", false);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::expand<jw::i64, jw::u64, jw::i32, 5, false>");
    TestKey floats(ks::kExpand);
    floats.floating("replace_to", JW_FLOAT_F64);
    CHECK(instantiate(floats).name_expression() ==
          "jw::kernels::expand<float, float, double, 8, true>");
  }
  SUBCASE("batch_memcpy") {
    TestKey key(ks::kBatchMemcpy);
    key.integer("num_copies", JW_INT_I64).constant("BLOCK_SIZE", 512);
    const KernelInstantiation inst = instantiate(key);
    CHECK(inst.name_expression() == "jw::kernels::batch_memcpy<jw::i64, 512>");
  }
  SUBCASE("zero_kv_blocks") {
    TestKey key(ks::kZeroKvBlocks);
    key.integer("n_blocks", JW_INT_I32, JW_INT_CLASS_DIV16)
        .integer("n_segments", JW_INT_I64);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::zero_kv_blocks<jw::i32, 2, jw::i64>");
  }
  SUBCASE("scatter_states") {
    TestKey key(ks::kScatterStates);
    key.dtype("state", JW_DTYPE_BFLOAT16)
        .dtype("indices", JW_DTYPE_INT64)
        .integer("state_stride", JW_INT_I32, JW_INT_CLASS_DIV16)
        .integer("num_rows", JW_INT_I64)
        .constant("ROW_SIZE", 4096)
        .constant("BLOCK_SIZE", 1024);
    const KernelInstantiation inst = instantiate(key);
    // 1024 elements per step, 8 bf16 per 16-byte access: 128 threads.
    CHECK(inst.name_expression() ==
          "jw::kernels::scatter_states<jw::u16, jw::i32, 2, jw::i64, jw::i64, "
          "4096, 128, true>");
    CHECK(inst.value("vectorized") == 1);
    CHECK(inst.value("threads") == 128);
  }
  SUBCASE("pack_seq and unpack_seq") {
    TestKey pack(ks::kPackSeq);
    pack.dtype("x", JW_DTYPE_FLOAT16)
        .integer("D", JW_INT_I64)
        .floating("pad_value", JW_FLOAT_F64)
        .constant("BLOCK_T", 4)
        .constant("BLOCK_D", 128);
    // 4 x 128 halves = 64 vectors of 8: 64 threads.
    CHECK(instantiate(pack).name_expression() ==
          "jw::kernels::pack_seq<jw::f16, jw::i32, jw::i64, jw::i32, double, "
          "4, 128, 64, true>");
    TestKey unpack(ks::kUnpackSeq);
    unpack.dtype("packed", JW_DTYPE_UINT8)
        .constant("BLOCK_T", 8)
        .constant("BLOCK_D", 8);
    // 8 bytes per row cannot be 16-byte vectors: 64 scalar accesses.
    CHECK(
        instantiate(unpack).name_expression() ==
        "jw::kernels::unpack_seq<jw::u8, jw::i32, jw::i32, jw::i32, 8, 8, 64, "
        "false>");
  }
  SUBCASE("prepare_pos_seq_lens") {
    TestKey key(ks::kPreparePosSeqLens);
    key.integer("seq_lens_len", JW_INT_U64);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::prepare_pos_seq_lens<jw::i32, jw::u64, true>");
    key.aligned("positions", false);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::prepare_pos_seq_lens<jw::i32, jw::u64, false>");
  }
  SUBCASE("rms_norm") {
    TestKey key(ks::kRmsNorm);
    key.dtype("x", JW_DTYPE_BFLOAT16)
        .integer("x_stride", JW_INT_I64, JW_INT_CLASS_DIV16)
        .integer("T", JW_INT_I64)
        .integer("H", JW_INT_I32, JW_INT_CLASS_DIV16);
    CHECK(
        instantiate(key).name_expression() ==
        "jw::kernels::rms_norm<jw::bf16, jw::i64, 2, float, jw::i64, jw::i32, "
        "2, 2>");
  }
  SUBCASE("silu_and_mul") {
    TestKey key(ks::kSiluAndMul);
    key.integer("H", JW_INT_I32, JW_INT_CLASS_ONE);
    CHECK(instantiate(key).name_expression() ==
          "jw::kernels::silu_and_mul<float, jw::i32, jw::i32, 1, 1>");
  }
}

TEST_CASE(
    "given rms_norm keys, then 16-byte access is proven by aligned tensors "
    "and sizes divisible by 16, checked at run time when only the tensors "
    "are proven, and never used otherwise") {
  // kernel_support.cuh: 0 never, 1 if the run-time sizes allow, 2 always.
  enum : int64_t { kNever = 0, kIfSizesAllow = 1, kAlways = 2 };
  auto proven_key = [] {
    TestKey key(ks::kRmsNorm);
    key.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16)
        .integer("x_stride", JW_INT_I32, JW_INT_CLASS_DIV16);
    return key;
  };
  TestKey all = proven_key();
  CHECK(instantiate(all).value("vector") == kAlways);
  for (const char* tensor : {"out", "x", "weight"}) {
    CAPTURE(tensor);
    TestKey key = proven_key();
    key.aligned(tensor, false);
    CHECK(instantiate(key).value("vector") == kNever);
  }
  TestKey odd_h = proven_key();
  odd_h.integer("H", JW_INT_I32, JW_INT_CLASS_NONE);
  CHECK(instantiate(odd_h).value("vector") == kIfSizesAllow);
  TestKey odd_stride = proven_key();
  odd_stride.integer("x_stride", JW_INT_I64, JW_INT_CLASS_NONE);
  CHECK(instantiate(odd_stride).value("vector") == kIfSizesAllow);
  TestKey single = proven_key();
  single.integer("H", JW_INT_I32, JW_INT_CLASS_ONE);
  CHECK(instantiate(single).value("vector") == kIfSizesAllow);
}

TEST_CASE(
    "given keys that differ only where the binary cannot use it, then "
    "they share one name expression") {
  SUBCASE("which tensor of rms_norm is unaligned") {
    TestKey out_unaligned(ks::kRmsNorm);
    out_unaligned.aligned("out", false);
    TestKey all_unaligned(ks::kRmsNorm);
    all_unaligned.all_aligned(false);
    CHECK(instantiate(out_unaligned).name_expression() ==
          instantiate(all_unaligned).name_expression());
  }
  SUBCASE("scatter_states of int32 and float32 (both 4-byte storage)") {
    TestKey ints(ks::kScatterStates);
    ints.dtype("state", JW_DTYPE_INT32);
    TestKey floats(ks::kScatterStates);
    floats.dtype("state", JW_DTYPE_FLOAT32);
    CHECK(instantiate(ints).name_expression() ==
          instantiate(floats).name_expression());
  }
  SUBCASE("alignment of the index arrays of batch_memcpy") {
    TestKey aligned(ks::kBatchMemcpy);
    TestKey unaligned(ks::kBatchMemcpy);
    unaligned.all_aligned(false);
    CHECK(instantiate(aligned).name_expression() ==
          instantiate(unaligned).name_expression());
  }
}

TEST_CASE(
    "given a 64-wide wavefront target, then block sizes baked into the "
    "binary are whole wavefronts") {
  TestKey key(ks::kPackSeq);
  key.dtype("x", JW_DTYPE_FLOAT32)
      .constant("BLOCK_T", 1)
      .constant("BLOCK_D", 8);
  // 8 floats = 2 vectors: one warp of 32 on CUDA, one wavefront of 64.
  CHECK(instantiate(key, 32).value("threads") == 32);
  CHECK(instantiate(key, 64).value("threads") == 64);
  TestKey scatter(ks::kScatterStates);
  scatter.constant("BLOCK_SIZE", 100).all_aligned(false);
  CHECK(instantiate(scatter, 32).value("threads") == 128);
  CHECK(instantiate(scatter, 64).value("threads") == 128);
  scatter.constant("BLOCK_SIZE", 1 << 20);
  CHECK(instantiate(scatter, 64).value("threads") == 1024);
}

TEST_CASE(
    "given keys the kernels cannot take, then instantiation names the "
    "key and the parameter") {
  SUBCASE("cp_rank outside [0, cp_world_size)") {
    TestKey key(ks::kComputeSlotMapping);
    key.constant("cp_world_size", 2).constant("cp_rank", 2);
    const auto [status, message] = error_of([&] { instantiate(key); });
    CHECK(status == JW_ERROR_INVALID_ARGUMENT);
    CHECK(message.find("cp_rank") != std::string::npos);
    CHECK(message.find(key.text()) != std::string::npos);
  }
  SUBCASE("batch_memcpy with more threads than a block holds") {
    TestKey key(ks::kBatchMemcpy);
    key.constant("BLOCK_SIZE", 2048);
    const auto [status, message] = error_of([&] { instantiate(key); });
    CHECK(status == JW_ERROR_INVALID_ARGUMENT);
    CHECK(message.find("BLOCK_SIZE") != std::string::npos);
  }
  SUBCASE("expand with a float replacement for integer x") {
    TestKey key(ks::kExpand);
    key.dtype("x", JW_DTYPE_INT32).floating("replace_from", JW_FLOAT_F32);
    const auto [status, message] = error_of([&] { instantiate(key); });
    CHECK(status == JW_ERROR_INVALID_ARGUMENT);
    CHECK(message.find("replace_from") != std::string::npos);
  }
  SUBCASE("a key with a parameter missing") {
    TestKey key(ks::kSiluAndMul);
    jw_compile_key_view view = key.view();
    view.num_params -= 1;
    const auto [status, message] =
        error_of([&] { instantiate_kernel(view, target()); });
    CHECK(status == JW_ERROR_INVALID_ARGUMENT);
    CHECK(message.find("parameters") != std::string::npos);
  }
  SUBCASE("a key whose parameter order is not the schema's") {
    TestKey key(ks::kSiluAndMul);
    jw_compile_key_view view = key.view();
    std::vector<jw_param_spec> swapped(view.params,
                                       view.params + view.num_params);
    std::swap(swapped[0], swapped[1]);
    view.params = swapped.data();
    const auto [status, message] =
        error_of([&] { instantiate_kernel(view, target()); });
    CHECK(status == JW_ERROR_INVALID_ARGUMENT);
    CHECK(message.find("'x'") != std::string::npos);
  }
  SUBCASE("a kernel outside the set") {
    TestKey key(ks::kSiluAndMul);
    jw_compile_key_view view = key.view();
    view.kernel_name = "vllm.not.a.kernel";
    const auto [status, message] =
        error_of([&] { instantiate_kernel(view, target()); });
    CHECK(status == JW_ERROR_NOT_FOUND);
    CHECK(message.find("vllm.not.a.kernel") != std::string::npos);
  }
}

TEST_CASE(
    "given a key, then explain() gives every template argument its "
    "reason") {
  TestKey key(ks::kRmsNorm);
  const KernelInstantiation inst = instantiate(key);
  const std::string text = inst.explain();
  for (const auto& argument : inst.template_arguments) {
    CHECK(text.find(argument.reason) != std::string::npos);
  }
  // The reason is the descriptor's expression.
  CHECK(text.find("int_class(x_stride)") != std::string::npos);
  CHECK(text.find("vector") != std::string::npos);
}
