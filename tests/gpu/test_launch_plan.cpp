// Launch planning and argument packing (plugins/common/launch_plan): the
// exact bytes each kernel parameter is packed as, the checks that stop a
// launch from reading garbage, and the grid/block of every kernel.
#include <jitwarm/plugin.hpp>

#include "checked_argument_packing.hpp"
#include "gpu_test_support.hpp"
#include "kernel_expression.hpp"
#include "kernel_instantiation.hpp"
#include "kernel_set.hpp"
#include "key_params.hpp"
#include "launch_plan.hpp"
#include "launch_program.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <thread>

using jitwarm::gpu::DeviceLimits;
using jitwarm::gpu::ExprLet;
using jitwarm::gpu::ExprNames;
using jitwarm::gpu::ExprParam;
using jitwarm::gpu::ExprScope;
using jitwarm::gpu::ExprSlot;
using jitwarm::gpu::ExprType;
using jitwarm::gpu::GpuTarget;
using jitwarm::gpu::KernelArguments;
using jitwarm::gpu::KernelExpression;
using jitwarm::gpu::KeyParams;
using jitwarm::gpu::LaunchGeometry;
using jitwarm::gpu::LaunchInputs;
using jitwarm::gpu::LaunchProgram;
using jitwarm::gpu::plan_launch;
using jitwarm::gpu_test::TestArgs;
using jitwarm::gpu_test::TestKey;
using jitwarm::plugin::PluginError;
namespace ks = jitwarm::kernel_set;

namespace {

GpuTarget cuda_target() {
  GpuTarget t;
  t.text = "cuda:sm_90";
  t.platform = "cuda";
  t.arch = "sm_90";
  t.binary_format = "cubin";
  return t;
}

DeviceLimits h100_like() {
  DeviceLimits limits;
  limits.multiprocessor_count = 132;
  return limits;
}

LaunchGeometry plan(TestKey& key, TestArgs& args,
                    const DeviceLimits& limits = h100_like()) {
  const auto inst = jitwarm::gpu::instantiate_kernel(key.view(), cuda_target());
  return plan_launch(inst, key.view(), args.values(), limits).geometry;
}

// expand's arguments: int32 tensors of these extents, replace 5 by 0, up to
// 40 tokens per request.
TestArgs expand_args(int64_t output, int64_t x, int64_t cu_num_tokens) {
  TestArgs args(ks::kExpand);
  args.tensor("output", JW_DTYPE_INT32, {output})
      .tensor("x", JW_DTYPE_INT32, {x})
      .tensor("cu_num_tokens", JW_DTYPE_INT32, {cu_num_tokens})
      .integer("replace_from", 5)
      .integer("replace_to", 0)
      .constant("MAX_NUM_TOKENS", 40);
  return args;
}

// The checked packing (checked_argument_packing.hpp), which the prepared
// launch's packing is held to.
KernelArguments pack(TestKey& key, TestArgs& args) {
  return jitwarm::gpu_test::checked_pack(KeyParams(key.view(), key.kernel()),
                                         args.values());
}

template <typename T>
T slot_as(const KernelArguments& packed, std::size_t i) {
  REQUIRE(packed.size_of(i) == sizeof(T));
  T value;
  std::memcpy(&value, packed.slot(i), sizeof(T));
  return value;
}

template <typename Body>
std::string error_message(Body&& body) {
  try {
    body();
  } catch (const PluginError& e) {
    CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
    return e.what();
  }
  FAIL("no PluginError was thrown");
  return "";
}

TestArgs rms_args(int64_t rows, int64_t hidden) {
  TestArgs args(ks::kRmsNorm);
  args.tensor("out", JW_DTYPE_FLOAT32, {rows, hidden})
      .tensor("x", JW_DTYPE_FLOAT32, {rows, hidden})
      .integer("x_stride", hidden)
      .tensor("weight", JW_DTYPE_FLOAT32, {hidden})
      .floating("eps", 1e-6)
      .integer("T", rows)
      .integer("H", hidden);
  return args;
}

}  // namespace

TEST_CASE(
    "given rms_norm arguments, then each parameter is packed with the "
    "type the key chose, constexprs left out") {
  TestKey key(ks::kRmsNorm);
  key.integer("x_stride", JW_INT_I64).floating("eps", JW_FLOAT_F64);
  TestArgs args = rms_args(4, 100);
  KernelArguments packed = pack(key, args);
  REQUIRE(packed.count() == 7);
  CHECK(slot_as<void*>(packed, 0) == args.tensor_at("out").data);
  CHECK(slot_as<void*>(packed, 1) == args.tensor_at("x").data);
  CHECK(slot_as<int64_t>(packed, 2) == 100);
  CHECK(slot_as<void*>(packed, 3) == args.tensor_at("weight").data);
  CHECK(slot_as<double>(packed, 4) == 1e-6);
  CHECK(slot_as<int32_t>(packed, 5) == 4);
  CHECK(slot_as<int32_t>(packed, 6) == 100);
  CHECK(packed.device() == 0);
  // The parameter array points at the slots, also after a move.
  KernelArguments moved(std::move(packed));
  CHECK(moved.parameters()[2] == moved.slot(2));
  CHECK(*static_cast<const int64_t*>(moved.parameters()[2]) == 100);
}

TEST_CASE(
    "given integers of each key type, then they are packed as int32, "
    "int64 and uint64") {
  TestKey key(ks::kPreparePosSeqLens);
  key.integer("num_reqs", JW_INT_I64).integer("seq_lens_len", JW_INT_U64);
  TestArgs args(ks::kPreparePosSeqLens);
  for (const char* t :
       {"idx_mapping", "query_start_loc", "num_computed_tokens", "seq_lens"}) {
    args.tensor(t, JW_DTYPE_INT32, {8});
  }
  args.tensor("positions", JW_DTYPE_INT64, {64})
      .integer("num_reqs", 3)
      .unsigned_integer("seq_lens_len", 5);
  KernelArguments packed = pack(key, args);
  CHECK(slot_as<int64_t>(packed, 5) == 3);
  CHECK(slot_as<uint64_t>(packed, 6) == 5);

  TestKey float_scalars(ks::kExpand);
  TestArgs expand(ks::kExpand);
  expand.tensor("output", JW_DTYPE_FLOAT32, {10})
      .tensor("x", JW_DTYPE_FLOAT32, {3})
      .tensor("cu_num_tokens", JW_DTYPE_INT32, {3})
      .floating("replace_from", 0.5)
      .floating("replace_to", -1.25);
  KernelArguments floats = pack(float_scalars, expand);
  // B, expand's extra argument (its descriptor), comes from the plan.
  floats.append_extra(plan_launch(
      jitwarm::gpu::instantiate_kernel(float_scalars.view(), cuda_target()),
      float_scalars.view(), expand.values(), h100_like()));
  REQUIRE(floats.count() == 6);
  CHECK(slot_as<float>(floats, 3) == 0.5f);
  CHECK(slot_as<float>(floats, 4) == -1.25f);
  CHECK(slot_as<int64_t>(floats, 5) == 3);
}

namespace {

// Every parameter of both packings, byte for byte.
void check_same_packing(KernelArguments& checked, KernelArguments& trusted) {
  REQUIRE(trusted.count() == checked.count());
  CHECK(trusted.device() == checked.device());
  for (std::size_t i = 0; i < checked.count(); ++i) {
    CAPTURE(i);
    REQUIRE(trusted.size_of(i) == checked.size_of(i));
    CHECK(std::memcmp(trusted.slot(i), checked.slot(i), checked.size_of(i)) ==
          0);
    CHECK(trusted.parameters()[i] == trusted.slot(i));
  }
}

}  // namespace

TEST_CASE(
    "given a prepared launch's packing, then it packs every parameter as the "
    "checked packing does, for every integer and float type") {
  using jitwarm::gpu::ArgumentPacking;
  SUBCASE("rms_norm with i64 and f64 choices") {
    TestKey key(ks::kRmsNorm);
    key.integer("x_stride", JW_INT_I64).floating("eps", JW_FLOAT_F64);
    TestArgs args = rms_args(4, 100);
    KernelArguments checked = pack(key, args);
    const ArgumentPacking packing(KeyParams(key.view(), key.kernel()));
    KernelArguments trusted = packing.pack(args.values(), {});
    check_same_packing(checked, trusted);
    CHECK(packing.device(args.values()) == 0);
  }
  SUBCASE("prepare_pos_seq_lens with i64 and u64 counts") {
    TestKey key(ks::kPreparePosSeqLens);
    key.integer("num_reqs", JW_INT_I64).integer("seq_lens_len", JW_INT_U64);
    TestArgs args(ks::kPreparePosSeqLens);
    for (const char* t : {"idx_mapping", "query_start_loc",
                          "num_computed_tokens", "seq_lens"}) {
      args.tensor(t, JW_DTYPE_INT32, {8});
    }
    args.tensor("positions", JW_DTYPE_INT64, {64})
        .integer("num_reqs", 3)
        .unsigned_integer("seq_lens_len", 5);
    KernelArguments checked = pack(key, args);
    KernelArguments trusted =
        ArgumentPacking(KeyParams(key.view(), key.kernel()))
            .pack(args.values(), {});
    check_same_packing(checked, trusted);
  }
  SUBCASE("expand with float scalars and its trailing batch size") {
    TestKey key(ks::kExpand);
    TestArgs args(ks::kExpand);
    args.tensor("output", JW_DTYPE_FLOAT32, {10})
        .tensor("x", JW_DTYPE_FLOAT32, {3})
        .tensor("cu_num_tokens", JW_DTYPE_INT32, {3})
        .floating("replace_from", 0.5)
        .floating("replace_to", -1.25);
    const jitwarm::gpu::LaunchPlan launch =
        plan_launch(jitwarm::gpu::instantiate_kernel(key.view(), cuda_target()),
                    key.view(), args.values(), h100_like());
    KernelArguments checked = pack(key, args);
    checked.append_extra(launch);
    KernelArguments trusted =
        ArgumentPacking(KeyParams(key.view(), key.kernel()))
            .pack(args.values(), launch);
    check_same_packing(checked, trusted);
    CHECK(slot_as<int64_t>(trusted, 5) == 3);
  }
  SUBCASE("tensors in host memory are refused") {
    TestKey key(ks::kRmsNorm);
    TestArgs args = rms_args(4, 100);
    for (const char* t : {"out", "x", "weight"}) args.device(t, -1);
    const ArgumentPacking packing(KeyParams(key.view(), key.kernel()));
    CHECK(error_message([&] {
            (void)packing.device(args.values());
          }).find("host memory") != std::string::npos);
  }
}

TEST_CASE(
    "given arguments that contradict the key, then packing refuses them "
    "naming the parameter") {
  SUBCASE("a value outside the key's integer type") {
    TestKey key(ks::kRmsNorm);
    TestArgs args = rms_args(4, 100);
    args.integer("T", int64_t{1} << 40);
    CHECK(error_message([&] { pack(key, args); }).find("'T'") !=
          std::string::npos);
  }
  SUBCASE("a value that is not the class 'one' the key specialized on") {
    TestKey key(ks::kRmsNorm);
    key.integer("H", JW_INT_I32, JW_INT_CLASS_ONE);
    TestArgs args = rms_args(4, 2);
    CHECK(error_message([&] { pack(key, args); }).find("is not 1") !=
          std::string::npos);
  }
  SUBCASE("a value that is not divisible by 16 as the key promised") {
    TestKey key(ks::kRmsNorm);
    key.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16);
    TestArgs args = rms_args(4, 40);
    CHECK(error_message([&] { pack(key, args); }).find("divisible by 16") !=
          std::string::npos);
  }
  SUBCASE("a misaligned pointer for a key that promised alignment") {
    TestKey key(ks::kRmsNorm);
    TestArgs args = rms_args(4, 100);
    args.misalign("weight");
    CHECK(error_message([&] {
            pack(key, args);
          }).find("'weight' is not 16-byte aligned") != std::string::npos);
    // An unaligned key takes the same pointer.
    key.aligned("weight", false);
    CHECK_NOTHROW(pack(key, args));
  }
  SUBCASE("tensors on two devices") {
    TestKey key(ks::kRmsNorm);
    TestArgs args = rms_args(4, 100);
    args.device("weight", 1);
    CHECK(error_message([&] { pack(key, args); }).find("device 1") !=
          std::string::npos);
  }
  SUBCASE("a tensor in host memory") {
    TestKey key(ks::kRmsNorm);
    TestArgs args = rms_args(4, 100);
    args.device("x", -1);
    CHECK(error_message([&] { pack(key, args); }).find("host memory") !=
          std::string::npos);
  }
  SUBCASE("a dtype other than the key's") {
    TestKey key(ks::kRmsNorm);
    key.dtype("x", JW_DTYPE_BFLOAT16);
    TestArgs args = rms_args(4, 100);
    CHECK(error_message([&] { pack(key, args); }).find("dtype") !=
          std::string::npos);
  }
  SUBCASE("a constexpr other than the key's") {
    TestKey key(ks::kBatchMemcpy);
    TestArgs args(ks::kBatchMemcpy);
    for (const char* t : {"src_ptrs", "dst_ptrs", "sizes"}) {
      args.tensor(t, JW_DTYPE_INT64, {2});
    }
    args.integer("num_copies", 2).constant("BLOCK_SIZE", 128);
    CHECK(error_message([&] { pack(key, args); }).find("BLOCK_SIZE") !=
          std::string::npos);
  }
}

TEST_CASE(
    "given rms_norm rows, then one block per row with about four accesses "
    "per thread") {
  TestKey key(ks::kRmsNorm);  // aligned, H of no class: sizes checked
  TestArgs args = rms_args(1000, 4000);
  LaunchGeometry g = plan(key, args);
  CHECK(g.grid.x == 1000);
  CHECK(g.block.x == 256);  // 4000 floats = 1000 vectors, 4 per thread
  TestArgs odd = rms_args(10, 4001);
  CHECK(plan(key, odd).block.x == 1024);  // 4001 elements, 4 per thread
  TestKey unaligned(ks::kRmsNorm);
  unaligned.aligned("weight", false);
  CHECK(plan(unaligned, args).block.x == 1024);  // 4000 elements
  TestKey proven(ks::kRmsNorm);
  proven.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16)
      .integer("x_stride", JW_INT_I32, JW_INT_CLASS_DIV16);
  TestArgs vector_args = rms_args(7, 2048);
  g = plan(proven, vector_args);
  CHECK(g.grid.x == 7);
  CHECK(g.block.x == 128);  // 2048 floats = 512 vectors
  TestArgs small = rms_args(3, 5);
  CHECK(plan(key, small).block.x == 32);  // at least a warp
  TestArgs empty = rms_args(0, 64);
  CHECK(plan(key, empty).empty());
  // A function that allows fewer threads caps the block.
  DeviceLimits limited = h100_like();
  limited.max_threads_per_block = 384;
  TestArgs wide = rms_args(2, 40000);
  CHECK(plan(key, wide, limited).block.x == 384);
  // Shapes that disagree with H are refused on the host.
  TestArgs wrong = rms_args(4, 100);
  wrong.integer("H", 99).integer("x_stride", 99);
  CHECK(error_message([&] { plan(key, wrong); }).find("H") !=
        std::string::npos);
}

TEST_CASE(
    "given silu_and_mul, then rows go on grid.x and column blocks on "
    "grid.y") {
  TestKey key(ks::kSiluAndMul);
  key.integer("H", JW_INT_I32, JW_INT_CLASS_DIV16)
      .dtype("x", JW_DTYPE_BFLOAT16);
  TestArgs args(ks::kSiluAndMul);
  args.tensor("out", JW_DTYPE_BFLOAT16, {300, 11008})
      .tensor("x", JW_DTYPE_BFLOAT16, {300, 22016})
      .integer("T", 300)
      .integer("H", 11008);
  const LaunchGeometry g = plan(key, args);
  CHECK(g.grid.x == 300);
  CHECK(g.block.x == 256);
  CHECK(g.grid.y == 6);  // 11008 / 8 = 1376 vectors, one per thread per step
}

TEST_CASE(
    "given batch_memcpy, then BLOCK_SIZE threads and copies split to "
    "fill the GPU") {
  TestKey key(ks::kBatchMemcpy);
  key.constant("BLOCK_SIZE", 512);
  auto args_for = [](int64_t copies) {
    TestArgs args(ks::kBatchMemcpy);
    for (const char* t : {"src_ptrs", "dst_ptrs", "sizes"}) {
      args.tensor(t, JW_DTYPE_INT64, {copies});
    }
    args.integer("num_copies", copies).constant("BLOCK_SIZE", 512);
    return args;
  };
  TestArgs one = args_for(1);
  LaunchGeometry g = plan(key, one);
  CHECK(g.block.x == 512);
  CHECK(g.grid.x == 1);
  CHECK(g.grid.y == 256);  // 4 x 132 SMs, capped at 256 parts
  // 16 warps per block: a batch of 16 copies per block.
  TestArgs many = args_for(1000);
  g = plan(key, many);
  CHECK(g.grid.x == 63);
  CHECK(g.grid.y == 9);  // 4 x 132 / 63 batches, rounded up
  TestArgs lots = args_for(100000);
  g = plan(key, lots);
  CHECK(g.grid.x == 6250);
  CHECK(g.grid.y == 1);
  DeviceLimits wave64 = h100_like();
  wave64.warp_size = 64;
  g = plan(key, many, wave64);
  CHECK(g.grid.x == 125);  // 8 wavefronts per block
  TestArgs none = args_for(0);
  CHECK(plan(key, none).empty());
  DeviceLimits small = h100_like();
  small.max_threads_per_block = 256;
  CHECK_THROWS_AS(plan(key, one, small), PluginError);
}

TEST_CASE(
    "given pack_seq, then programs cover (B, L_max tiles, D tiles) and "
    "inconsistent shapes are refused") {
  TestKey key(ks::kPackSeq);
  // N = 100 rows of D columns into B requests of L_max positions.
  auto pack_args = [](int64_t batch, int64_t positions, int64_t columns) {
    TestArgs args(ks::kPackSeq);
    args.tensor("x", JW_DTYPE_FLOAT32, {100, columns})
        .tensor("lengths", JW_DTYPE_INT32, {batch})
        .tensor("out", JW_DTYPE_FLOAT32, {batch, positions, columns})
        .integer("N", 100)
        .integer("D", columns)
        .integer("L_max", positions)
        .floating("pad_value", 0.0);
    return args;
  };
  TestArgs args = pack_args(5, 40, 200);
  LaunchGeometry g = plan(key, args);
  CHECK(g.grid.x == 5);
  CHECK(g.grid.y == 3);  // 40 / BLOCK_T 16
  CHECK(g.grid.z == 4);  // 200 / BLOCK_D 64
  SUBCASE("with rows enough to fill the GPU, a block walks all the columns") {
    TestArgs wide = pack_args(256, 512, 4096);
    g = plan(key, wide);
    CHECK(g.grid.x == 256);
    CHECK(g.grid.y == 32);
    CHECK(g.grid.z == 1);  // 8192 blocks over 132 SMs already
    TestArgs fewer = pack_args(8, 512, 4096);
    g = plan(key, fewer);
    CHECK(g.grid.z == 9);  // 16 x 132 SMs / (8 x 32) rows of tiles
  }
  args.integer("L_max", 41);
  CHECK(error_message([&] { plan(key, args); }).find("L_max") !=
        std::string::npos);
}

TEST_CASE(
    "given the remaining kernels, then their grids follow the schema's "
    "launch rule") {
  SUBCASE(
      "compute_slot_mapping: a lane group per request plus the padding tail") {
    TestKey key(ks::kComputeSlotMapping);
    TestArgs args(ks::kComputeSlotMapping);
    args.tensor("query_start_loc", JW_DTYPE_INT32, {9})
        .tensor("positions", JW_DTYPE_INT64, {4096})
        .tensor("block_table", JW_DTYPE_INT32, {8, 64})
        .integer("block_table_stride", 64)
        .tensor("slot_mapping", JW_DTYPE_INT64, {8192})
        .integer("num_reqs", 8)
        .integer("max_num_tokens", 8192)
        .integer("block_size", 16);
    const LaunchGeometry g = plan(key, args);
    // 1024 tokens (512 pairs) per request at most: a warp per request, 8
    // per block.
    CHECK(g.block.x == 32);
    CHECK(g.block.y == 8);
    // 8 requests fit one block (8 groups x 4 requests each); every block
    // shares the padding tail: 8192 / (256 threads * 4) blocks.
    CHECK(g.grid.x == 8);
    args.integer("max_num_tokens", 16).integer("num_reqs", 8);
    const LaunchGeometry decode = plan(key, args);
    CHECK(decode.block.x == 1);  // two tokens per request: one aligned pair
    CHECK(decode.block.y == 256);
    key.aligned("positions", false);
    args.misalign("positions");
    const LaunchGeometry single = plan(key, args);
    CHECK(single.block.x == 2);  // unaligned: a lane per token
    CHECK(single.block.y == 128);
    args.integer("block_size", 0);
    CHECK(error_message([&] { plan(key, args); }).find("block_size") !=
          std::string::npos);
  }
  SUBCASE("expand: a lane group per request, sized to MAX_NUM_TOKENS") {
    TestKey key(ks::kExpand);
    key.dtype("x", JW_DTYPE_INT32).constant("MAX_NUM_TOKENS", 40);
    TestArgs args = expand_args(100, 10, 10);
    LaunchGeometry g = plan(key, args);
    CHECK(g.block.x == 16);  // 40 int32 tokens: 10 vectors of 4
    CHECK(g.block.y == 16);
    CHECK(g.grid.x == 1);  // 10 requests, 16 groups x 4 requests per block
    args.tensor("x", JW_DTYPE_INT32, {100})
        .tensor("cu_num_tokens", JW_DTYPE_INT32, {100});
    CHECK(plan(key, args).grid.x == 2);  // 100 requests, 64 per block
    args.tensor("x", JW_DTYPE_INT32, {10})
        .tensor("cu_num_tokens", JW_DTYPE_INT32, {10});
    key.constant("MAX_NUM_TOKENS", 4);
    args.constant("MAX_NUM_TOKENS", 4);
    g = plan(key, args);
    CHECK(g.block.x == 1);  // one vector
    CHECK(g.block.y == 256);
    CHECK(g.grid.x == 1);
    key.constant("MAX_NUM_TOKENS", 40);
    args.constant("MAX_NUM_TOKENS", 40);
    key.aligned("output", false);
    args.misalign("output");
    g = plan(key, args);
    CHECK(g.block.x == 32);  // unaligned: a lane per token, a warp
    CHECK(g.block.y == 8);
    key.aligned("output", true);
    args.tensor("output", JW_DTYPE_INT32, {100});  // aligned again
    key.integer("replace_to", JW_INT_I64);
    args.integer("replace_to", int64_t{1} << 40);
    CHECK(error_message([&] { plan(key, args); }).find("replace_to") !=
          std::string::npos);
  }
  SUBCASE("zero_kv_blocks: one block per (block, segment)") {
    TestKey key(ks::kZeroKvBlocks);
    TestArgs args(ks::kZeroKvBlocks);
    args.tensor("block_ids", JW_DTYPE_INT32, {50})
        .tensor("seg_addrs", JW_DTYPE_INT64, {3})
        .tensor("seg_block_stride", JW_DTYPE_INT64, {3})
        .tensor("seg_block_bytes", JW_DTYPE_INT64, {3})
        .integer("n_blocks", 50)
        .integer("n_segments", 3);
    const LaunchGeometry g = plan(key, args);
    CHECK(g.grid.x == 50);
    CHECK(g.grid.y == 3);
  }
  SUBCASE("scatter_states: one block per source row") {
    TestKey key(ks::kScatterStates);
    key.constant("ROW_SIZE", 64).constant("BLOCK_SIZE", 64);
    TestArgs args(ks::kScatterStates);
    args.tensor("state", JW_DTYPE_FLOAT32, {100, 64})
        .integer("state_stride", 64)
        .tensor("src", JW_DTYPE_FLOAT32, {30, 64})
        .tensor("indices", JW_DTYPE_INT32, {30})
        .integer("num_rows", 30)
        .constant("ROW_SIZE", 64)
        .constant("BLOCK_SIZE", 64);
    const LaunchGeometry g = plan(key, args);
    CHECK(g.grid.x == 30);
    CHECK(g.block.x == 64);
  }
  SUBCASE(
      "prepare_pos_seq_lens: lane groups over the slots up to seq_lens_len") {
    TestKey key(ks::kPreparePosSeqLens);
    TestArgs args(ks::kPreparePosSeqLens);
    for (const char* t : {"idx_mapping", "query_start_loc",
                          "num_computed_tokens", "seq_lens"}) {
      args.tensor(t, JW_DTYPE_INT32, {64});
    }
    args.tensor("positions", JW_DTYPE_INT64, {1000})
        .integer("num_reqs", 5)
        .integer("seq_lens_len", 48);
    const LaunchGeometry g = plan(key, args);
    CHECK(g.block.x == 32);  // 200 tokens per request, 4 per lane: a warp
    CHECK(g.grid.x == 1);    // 48 slots, 8 groups x 8 slots per block
    args.tensor("seq_lens", JW_DTYPE_INT32, {65}).integer("seq_lens_len", 65);
    CHECK(plan(key, args).grid.x == 2);  // 65 slots
  }
}

TEST_CASE(
    "given launch expressions, then those that read a shape, a stride or a "
    "scalar argument vary per launch and the others do not") {
  const std::vector<ExprParam> params{
      {"x", JW_PARAM_TENSOR}, {"n", JW_PARAM_INT}, {"N", JW_PARAM_CONSTEXPR}};
  const std::vector<ExprLet> lets{
      {"fixed", ExprType::integer, ExprScope::launch, false},
      {"moving", ExprType::integer, ExprScope::launch, true},
      {"compiled", ExprType::integer, ExprScope::compile, false}};
  const ExprNames names{params, lets};
  const auto varies = [&](std::string_view text) {
    return KernelExpression::parse(text, names, ExprScope::launch)
        .varies_per_launch();
  };
  CHECK_FALSE(varies("256"));
  CHECK_FALSE(varies("lanes_for(N) * 2"));
  CHECK_FALSE(varies("max(1, threads_cap(256) / N)"));
  CHECK_FALSE(varies("dtype_bytes(x) * max_grid_x"));
  CHECK_FALSE(varies("if(is_dtype(x, \"float32\"), fixed, compiled)"));
  CHECK(varies("shape(x, 0)"));
  CHECK(varies("stride(x, 0) + 1"));
  CHECK(varies("n"));
  CHECK(varies("min(ceil_div(n, 256), max_grid_x)"));
  CHECK(varies("moving"));
  CHECK(varies("if(N > 1, fixed, moving)"));
  // Compile scope: never asked (a key has no per-launch values).
  CHECK_FALSE(KernelExpression::parse("N", names, ExprScope::compile)
                  .varies_per_launch());
}

TEST_CASE(
    "given a plan cache, then every launch plans as without it, what varies "
    "follows each launch's arguments, and bad arguments still fail") {
  TestKey key(ks::kExpand);
  key.dtype("x", JW_DTYPE_INT32).constant("MAX_NUM_TOKENS", 40);
  const auto inst = jitwarm::gpu::instantiate_kernel(key.view(), cuda_target());
  const KeyParams params(key.view(), key.kernel());
  jitwarm::gpu::LaunchPlanCache cache;
  const auto planned = [&](int64_t requests, jitwarm::gpu::LaunchPlanCache* c) {
    TestArgs args = expand_args(requests * 40, requests, requests);
    return plan_launch(inst, params, args.values(), h100_like(), c);
  };
  for (const int64_t requests : {10, 100, 100000, 3, 0}) {
    CAPTURE(requests);
    const auto with = planned(requests, &cache);
    const auto without = planned(requests, nullptr);
    CHECK(with.geometry.block.x == without.geometry.block.x);
    CHECK(with.geometry.block.y == without.geometry.block.y);
    CHECK(with.geometry.grid.x == without.geometry.grid.x);
    REQUIRE(with.extra_count == without.extra_count);
    CHECK(with.extra[0].value == without.extra[0].value);  // B, per launch
    CHECK(with.extra[0].value == requests);
  }
  // A launch check that reads arguments still runs with the cache filled.
  TestArgs bad = expand_args(400, 10, 5);
  CHECK(error_message([&] {
          plan_launch(inst, params, bad.values(), h100_like(), &cache);
        }).find("cu_num_tokens") != std::string::npos);
}

TEST_CASE(
    "given launch expressions and arguments, then a compiled LaunchProgram "
    "computes what the expression does, and declines exactly where the "
    "expression fails") {
  const std::vector<ExprParam> params{{"x", JW_PARAM_TENSOR},
                                      {"y", JW_PARAM_TENSOR},
                                      {"n", JW_PARAM_INT},
                                      {"s", JW_PARAM_SCALAR},
                                      {"N", JW_PARAM_CONSTEXPR}};
  // Compile lets come first among the names, then the launch lets.
  const std::vector<ExprLet> lets{
      {"compiled", ExprType::integer, ExprScope::compile, false},
      {"fixed", ExprType::integer, ExprScope::launch, false},
      {"moving", ExprType::integer, ExprScope::launch, true}};
  const ExprNames names{params, lets};
  const std::vector<std::string> texts{
      "n + 1",
      "n - shape(x, 0)",
      "n * n",
      "n * 4611686018427387904",
      "n / (shape(x, 0) - 4)",
      "n % 7",
      "-n",
      "n == 3",
      "n != N",
      "n < 0 || shape(x, 0) > 2",
      "n > 0 && n / 0 > 1",
      "n > 100 && N / 0 > 1",
      "if(n > 5, ceil_div(n, 4), round_up(shape(x, 1), 16))",
      "if(n > 5, n, 10 / 0)",
      "min(n, shape(x, 0), 9)",
      "max(n, 2)",
      "clamp(n, shape(x, 0), 10)",
      "next_pow2(n)",
      "threads_cap(n)",
      "block_threads(n, 256)",
      "lanes_for(n)",
      "fits_dtype(s, x)",
      "fits_dtype(s, y)",
      "stride(x, 0)",
      "stride(y, 1)",
      "stride(x, 0) * shape(x, 0)",
      "shape(x, n)",
      "moving * 2 + fixed",
      "N * n + compiled",
      "!(n > 3)",
      "if(is_dtype(x, \"float32\"), n, 0)",
      "dtype_bytes(y) * n + sm_count",
      "ceil_div(n, max_grid_x) + round_up(n, N)",
      "min(ceil_div(shape(x, 0), fixed * 4), max_grid_x)",
  };
  jw_tensor x{}, y{};
  x.struct_size = y.struct_size = sizeof(jw_tensor);
  x.meta.dtype = JW_DTYPE_FLOAT32;
  y.meta.dtype = JW_DTYPE_INT32;
  x.meta.rank = 2;
  y.meta.rank = 2;
  y.meta.flags = JW_TENSOR_HAS_STRIDES;
  struct Inputs {
    int64_t rows, columns;
    jw_scalar n, s;
    int64_t moving;
  };
  const auto int_scalar = [](int64_t v) {
    jw_scalar s{};
    s.kind = JW_SCALAR_INT;
    s.value.i = v;
    return s;
  };
  jw_scalar huge{};
  huge.kind = JW_SCALAR_UINT;
  huge.value.u = (1ull << 63) + 5;
  jw_scalar fraction{};
  fraction.kind = JW_SCALAR_FLOAT;
  fraction.value.f = 1.5;
  const std::vector<Inputs> inputs{
      {4, 8, int_scalar(3), int_scalar(5), 7},
      {4, 8, int_scalar(-5), int_scalar(int64_t{1} << 40), -2},
      {0, 3, int_scalar(0), fraction, 0},
      {12, 1, int_scalar(1), huge, 1},
      {6, 2, int_scalar(7), int_scalar(-1), 100},
      {5, 5, int_scalar(100), int_scalar(3), 9},
      {1, 1, int_scalar(INT64_MAX), int_scalar(0), INT64_MAX},
      {9, 4, huge, int_scalar(2), 3},
      {3, 3, int_scalar(2), int_scalar(2147483648), 4},
  };
  const DeviceLimits limits = h100_like();
  const std::vector<ExprSlot> compile_lets{{11, false}};
  std::vector<jw_arg_value> args(5);
  for (auto& a : args) a.struct_size = sizeof(jw_arg_value);
  args[0].kind = args[1].kind = JW_VALUE_TENSOR;
  args[0].value.tensor = &x;
  args[1].value.tensor = &y;
  args[2].kind = args[3].kind = args[4].kind = JW_VALUE_SCALAR;
  args[4].value.scalar = int_scalar(4);  // N, the key's
  std::vector<ExprSlot> launch_lets(2);
  const auto set = [&](const Inputs& i) {
    x.meta.shape[0] = y.meta.shape[0] = i.rows;
    x.meta.shape[1] = y.meta.shape[1] = i.columns;
    y.meta.strides[0] = i.columns * 3;
    y.meta.strides[1] = 3;
    args[2].value.scalar = i.n;
    args[3].value.scalar = i.s;
    launch_lets[0] = {8, false};  // fixed
    launch_lets[1] = {i.moving, false};
    LaunchInputs in;
    in.args = args;
    in.limits = &limits;
    in.compile_lets = compile_lets;
    in.lets = launch_lets;
    return in;
  };
  int compiled = 0;
  for (const std::string& text : texts) {
    CAPTURE(text);
    const KernelExpression e =
        KernelExpression::parse(text, names, ExprScope::launch);
    // Filled from the first inputs, as the first launch fills the cache.
    LaunchProgram program;
    if (!program.store(e, set(inputs[0]), 5)) continue;
    ++compiled;
    for (const Inputs& i : inputs) {
      CAPTURE(i.rows);
      CAPTURE(i.n.value.i);
      CAPTURE(i.moving);
      const LaunchInputs in = set(i);
      bool evaluated = true;
      int64_t expected = 0;
      try {
        expected = e.type() == ExprType::boolean ? (e.boolean(in) ? 1 : 0)
                                                 : e.integer(in);
      } catch (const PluginError&) {
        evaluated = false;
      }
      std::array<int64_t, LaunchProgram::kMaxSlots> out{};
      out[1] = i.moving;  // launch let 1, as the planner stores it
      const bool ran = program.run(args, out);
      CHECK(ran == evaluated);
      if (ran && evaluated) CHECK(out[5] == expected);
    }
  }
  // Every expression above is one the program can express.
  CHECK(compiled == static_cast<int>(texts.size()));
}

TEST_CASE(
    "given a plan cache, when launches repeat a shape, change it and come "
    "back, then each plans as without the cache, and arguments that fail a "
    "check still fail after a launch that passed") {
  // The cache keeps the last run's results for a launch whose reads (the
  // shapes of x and cu_num_tokens, replace_to) are the same.
  TestKey key(ks::kExpand);
  key.dtype("x", JW_DTYPE_INT32).constant("MAX_NUM_TOKENS", 40);
  const auto inst = jitwarm::gpu::instantiate_kernel(key.view(), cuda_target());
  const KeyParams params(key.view(), key.kernel());
  jitwarm::gpu::LaunchPlanCache cache;
  struct Launch {
    int64_t requests;
    int64_t cu_num_tokens;
    int64_t replace_to;
  };
  const auto args_of = [](const Launch& l) {
    TestArgs args(ks::kExpand);
    args.tensor("output", JW_DTYPE_INT32, {l.requests * 40})
        .tensor("x", JW_DTYPE_INT32, {l.requests})
        .tensor("cu_num_tokens", JW_DTYPE_INT32, {l.cu_num_tokens})
        .integer("replace_from", 5)
        .integer("replace_to", l.replace_to)
        .constant("MAX_NUM_TOKENS", 40);
    return args;
  };
  const std::vector<Launch> launches{
      {10, 10, 0},         {10, 10, 0}, {10, 10, 0}, {100000, 100000, 0},
      {100000, 100000, 0}, {10, 10, 0}, {10, 12, 0}, {10, 10, 7},
      {10, 10, 7},         {3, 3, 0},   {0, 0, 0},   {0, 0, 0},
      {10, 10, 0}};
  for (const Launch& l : launches) {
    CAPTURE(l.requests);
    CAPTURE(l.cu_num_tokens);
    CAPTURE(l.replace_to);
    TestArgs args = args_of(l);
    const auto with =
        plan_launch(inst, params, args.values(), h100_like(), &cache);
    const auto without = plan_launch(inst, params, args.values(), h100_like());
    CHECK(with.geometry.block.x == without.geometry.block.x);
    CHECK(with.geometry.block.y == without.geometry.block.y);
    CHECK(with.geometry.grid.x == without.geometry.grid.x);
    REQUIRE(with.extra_count == without.extra_count);
    CHECK(with.extra[0].value == l.requests);  // B, per launch
  }
  // After a remembered pass: a cu_num_tokens shorter than x, then a
  // replace_to that int32 cannot hold, each with the same shapes as a
  // launch that passed before it.
  for (const Launch& bad :
       {Launch{10, 5, 0}, Launch{10, 10, int64_t{1} << 40}}) {
    TestArgs good = args_of(Launch{10, 10, 0});
    plan_launch(inst, params, good.values(), h100_like(), &cache);
    TestArgs args = args_of(bad);
    const std::string message = error_message(
        [&] { plan_launch(inst, params, args.values(), h100_like(), &cache); });
    CHECK(
        message.find(bad.cu_num_tokens < 10 ? "cu_num_tokens" : "replace_to") !=
        std::string::npos);
  }
}

TEST_CASE(
    "given threads launching one prepared kernel with shapes of their own, "
    "then each launch plans for its own arguments") {
  // The cache's last results are shared: a launch must never take another
  // thread's (a torn or stale memo is discarded, not used).
  TestKey key(ks::kExpand);
  key.dtype("x", JW_DTYPE_INT32).constant("MAX_NUM_TOKENS", 40);
  const auto inst = jitwarm::gpu::instantiate_kernel(key.view(), cuda_target());
  const KeyParams params(key.view(), key.kernel());
  jitwarm::gpu::LaunchPlanCache cache;
  constexpr int kThreads = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int64_t requests = 1000 * (t + 1) + t;
      TestArgs args = expand_args(requests * 40, requests, requests);
      const auto expected =
          plan_launch(inst, params, args.values(), h100_like());
      for (int i = 0; i < 2000; ++i) {
        const auto got =
            plan_launch(inst, params, args.values(), h100_like(), &cache);
        if (got.extra[0].value != requests ||
            got.geometry.grid.x != expected.geometry.grid.x) {
          failures[t] = "launch " + std::to_string(i) +
                        " planned B = " + std::to_string(got.extra[0].value) +
                        ", grid.x " + std::to_string(got.geometry.grid.x);
          return;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK_MESSAGE(failures[t].empty(), failures[t]);
  }
}

TEST_CASE(
    "given a LaunchProgram, then it lists what it reads of the arguments, "
    "each once, and declines when a dimension it reads is computed") {
  const std::vector<ExprParam> params{
      {"x", JW_PARAM_TENSOR}, {"n", JW_PARAM_INT}, {"s", JW_PARAM_SCALAR}};
  const ExprNames names{params, {}};
  jw_tensor x{};
  x.struct_size = sizeof(jw_tensor);
  x.meta.dtype = JW_DTYPE_FLOAT32;
  x.meta.rank = 2;
  x.meta.shape[0] = 6;
  x.meta.shape[1] = 4;
  std::vector<jw_arg_value> args(3);
  for (auto& a : args) a.struct_size = sizeof(jw_arg_value);
  args[0].kind = JW_VALUE_TENSOR;
  args[0].value.tensor = &x;
  args[1].kind = args[2].kind = JW_VALUE_SCALAR;
  args[1].value.scalar.kind = args[2].value.scalar.kind = JW_SCALAR_INT;
  args[1].value.scalar.value.i = 1;
  args[2].value.scalar.value.i = 9;
  const DeviceLimits limits = h100_like();
  LaunchInputs in;
  in.args = args;
  in.limits = &limits;
  const auto program_of = [&](std::string_view text) {
    LaunchProgram program;
    REQUIRE(program.store(
        KernelExpression::parse(text, names, ExprScope::launch), in, 0));
    return program;
  };
  // n twice, shape(x, 0) twice, stride(x, 0) once: 2 + 1 + 1 words.
  LaunchProgram reads =
      program_of("n * shape(x, 0) + n + shape(x, 0) + stride(x, 0)");
  REQUIRE(reads.index_inputs(16));
  CHECK(reads.input_words() == 4);
  std::array<uint64_t, 4> words{};
  REQUIRE(reads.read_inputs(args, words));
  CHECK(words == std::array<uint64_t, 4>{JW_SCALAR_INT, 1, 6, 4});
  CHECK_FALSE(reads.index_inputs(3));  // more words than allowed
  // A dimension it computes: what it reads depends on n.
  LaunchProgram computed = program_of("shape(x, n) + 1");
  CHECK_FALSE(computed.index_inputs(16));
  // fits_dtype reads the scalar's kind and bits.
  LaunchProgram fits = program_of("fits_dtype(s, x)");
  REQUIRE(fits.index_inputs(16));
  CHECK(fits.input_words() == 2);
}
