// Tests for the KV-cache bookkeeping kernels of the CPU reference:
// compute_slot_mapping, zero_kv_blocks and prepare_pos_seq_lens
// (docs/kernels.md, sections 1, 4 and 8).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "reference_test_support.hpp"

namespace {

using namespace jitwarm::reference_test;
namespace ks = jitwarm::kernel_set;

constexpr int64_t kUntouched = 777;  // what outputs hold before a launch
constexpr int64_t kPad = -1;

// ---------------------------------------------------------------------------
// compute_slot_mapping
// ---------------------------------------------------------------------------

// One launch's inputs. The block table is [rows, cols] with row stride
// `stride` (>= cols); the cells between rows hold a poison value so that a
// wrong stride shows up in the result.
struct SlotMappingLaunch {
  std::vector<int32_t> query_start_loc;
  std::vector<int64_t> positions;
  std::vector<std::vector<int32_t>> block_table;  // rows of `cols` entries
  int64_t cols = 0;
  int64_t stride = 0;
  int64_t max_num_tokens = 0;
  int64_t slot_mapping_size = -1;  // -1: max_num_tokens
  int64_t block_size = 16;
  int64_t blocks_per_kv_block = 1;
  int64_t cp_world_size = 1;
  int64_t cp_rank = 0;
  int64_t cp_interleave = 1;
  int64_t num_reqs = -1;  // -1: query_start_loc.size() - 1

  static constexpr int32_t kPoison = -999;

  std::vector<int32_t> table_storage() const {
    const int64_t rows = static_cast<int64_t>(block_table.size());
    std::vector<int32_t> storage(
        rows == 0 ? 0 : static_cast<std::size_t>((rows - 1) * stride + cols),
        kPoison);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        storage[r * stride + c] = block_table[r][c];
      }
    }
    return storage;
  }

  // Runs the kernel; `slots` receives slot_mapping.
  template <typename Body>
  void with_args(Body&& body) const {
    const int64_t rows = static_cast<int64_t>(block_table.size());
    HostBuffer<int32_t> qsl({static_cast<int64_t>(query_start_loc.size())},
                            query_start_loc);
    HostBuffer<int64_t> pos({static_cast<int64_t>(positions.size())},
                            positions);
    HostBuffer<int32_t> table({rows, cols}, {stride, 1}, table_storage());
    const int64_t slots_size =
        slot_mapping_size >= 0 ? slot_mapping_size : max_num_tokens;
    HostBuffer<int64_t> slots({slots_size},
                              std::vector<int64_t>(slots_size, kUntouched));
    const int64_t reqs = num_reqs >= 0
                             ? num_reqs
                             : static_cast<int64_t>(query_start_loc.size()) - 1;
    const std::vector<jw_arg_value> args{
        qsl.arg(),
        pos.arg(),
        table.arg(),
        int_arg(stride),
        slots.arg(),
        int_arg(reqs),
        int_arg(max_num_tokens),
        int_arg(block_size),
        int_arg(blocks_per_kv_block),
        int_arg(cp_world_size),
        int_arg(cp_rank),
        int_arg(cp_interleave),
    };
    body(args, slots.values);
  }

  std::vector<int64_t> run_kernel() const {
    std::vector<int64_t> result;
    with_args([&](const std::vector<jw_arg_value>& args,
                  const std::vector<int64_t>& slots) {
      CHECK(run(ks::kComputeSlotMapping, args) == "compute_slot_mapping");
      result = slots;
    });
    return result;
  }

  void check_refused(std::initializer_list<std::string_view> fragments) const {
    with_args([&](const std::vector<jw_arg_value>& args,
                  const std::vector<int64_t>&) {
      jitwarm::reference_test::check_refused(ks::kComputeSlotMapping, args,
                                             fragments);
    });
  }
};

TEST_CASE(
    "given the docs/kernels.md example (block_size 16, block table row [7, 3], "
    "positions [0, 17]), when slot mapping runs, then slots are [112, 49, "
    "-1, -1]") {
  SlotMappingLaunch launch;
  launch.query_start_loc = {0, 2};
  launch.positions = {0, 17};
  launch.block_table = {{7, 3}};
  launch.cols = 2;
  launch.stride = 2;
  launch.max_num_tokens = 4;
  launch.block_size = 16;
  CHECK(launch.run_kernel() == std::vector<int64_t>{112, 49, kPad, kPad});
}

// Without context parallelism a slot is table[pos / bs] * bs + pos % bs
// (with blocks_per_kv_block = 1): the formula every case below checks.
std::vector<int64_t> simple_slots(const SlotMappingLaunch& launch) {
  std::vector<int64_t> expected(launch.max_num_tokens, kPad);
  for (std::size_t r = 0; r + 1 < launch.query_start_loc.size(); ++r) {
    for (int32_t t = launch.query_start_loc[r];
         t < launch.query_start_loc[r + 1]; ++t) {
      const int64_t pos = launch.positions[t];
      expected[t] = int64_t{launch.block_table[r][pos / launch.block_size]} *
                        launch.block_size +
                    pos % launch.block_size;
    }
  }
  return expected;
}

TEST_CASE(
    "given block_size and block_table_stride in each specialization class "
    "(1, a multiple of 16, another value), when slot mapping runs for three "
    "requests, then every slot follows table[pos / bs] * bs + pos % bs") {
  struct Shape {
    int64_t block_size, stride, cols;
  };
  // stride 1 needs one column per row; 16 and 7 leave poisoned gaps.
  const Shape shapes[] = {{1, 1, 1},  {16, 1, 1},  {5, 1, 1},
                          {1, 16, 3}, {16, 16, 3}, {5, 16, 3},
                          {1, 7, 5},  {16, 7, 5},  {5, 7, 5}};
  for (const Shape& shape : shapes) {
    INFO("block_size ", shape.block_size, ", stride ", shape.stride);
    SlotMappingLaunch launch;
    launch.block_size = shape.block_size;
    launch.stride = shape.stride;
    launch.cols = shape.cols;
    launch.block_table = {{}, {}, {}};
    for (int r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < shape.cols; ++c) {
        launch.block_table[r].push_back(
            static_cast<int32_t>(100 * r + 11 * c + 3));
      }
    }
    // Request 1 is empty; every position stays inside its row.
    const int64_t capacity = shape.block_size * shape.cols;
    launch.query_start_loc = {0, 3, 3, 5};
    launch.positions = {0, capacity - 1, capacity / 2, 1 % capacity,
                        capacity - 1};
    launch.max_num_tokens = 7;
    CHECK(launch.run_kernel() == simple_slots(launch));
  }
}

TEST_CASE(
    "given two context-parallel ranks without interleaving (block_size 4), "
    "when slot mapping runs on each rank, then a rank keeps the positions "
    "congruent to it mod 2 at local offset (pos % 8) / 2") {
  SlotMappingLaunch launch;
  launch.query_start_loc = {0, 7};
  launch.positions = {0, 1, 2, 3, 8, 9, 15};
  launch.block_table = {{10, 20}};
  launch.cols = 2;
  launch.stride = 2;
  launch.max_num_tokens = 8;
  launch.block_size = 4;
  launch.cp_world_size = 2;
  // Virtual block = pos / 8 picks table entry 10 or 20.
  launch.cp_rank = 1;
  CHECK(launch.run_kernel() ==
        std::vector<int64_t>{kPad, 40, kPad, 41, kPad, 80, 83, kPad});
  launch.cp_rank = 0;
  CHECK(launch.run_kernel() ==
        std::vector<int64_t>{40, kPad, 41, kPad, 80, kPad, kPad, kPad});
}

TEST_CASE(
    "given two context-parallel ranks interleaved by 2 tokens, when slot "
    "mapping runs on each rank, then pairs of positions alternate between "
    "ranks and pack densely into each rank's blocks") {
  SlotMappingLaunch launch;
  launch.query_start_loc = {0, 9};
  launch.positions = {0, 1, 2, 3, 4, 5, 6, 7, 13};
  launch.block_table = {{10, 20}};
  launch.cols = 2;
  launch.stride = 2;
  launch.max_num_tokens = 9;
  launch.block_size = 4;
  launch.cp_world_size = 2;
  launch.cp_interleave = 2;
  // Rank 0 owns offsets {0, 1, 4, 5} of every 8, at local 0..3.
  launch.cp_rank = 0;
  CHECK(launch.run_kernel() ==
        std::vector<int64_t>{40, 41, kPad, kPad, 42, 43, kPad, kPad, 83});
  // Rank 1 owns {2, 3, 6, 7}.
  launch.cp_rank = 1;
  CHECK(launch.run_kernel() ==
        std::vector<int64_t>{kPad, kPad, 40, 41, kPad, kPad, 42, 43, kPad});
}

TEST_CASE(
    "given blocks_per_kv_block 2 and block_size 4, when slot mapping runs, "
    "then a KV block of 8 positions spans two table entries") {
  SlotMappingLaunch launch;
  launch.query_start_loc = {0, 4};
  launch.positions = {0, 5, 9, 15};
  launch.block_table = {{3, 5, 7, 9}};
  launch.cols = 4;
  launch.stride = 4;
  launch.max_num_tokens = 4;
  launch.block_size = 4;
  launch.blocks_per_kv_block = 2;
  CHECK(launch.run_kernel() == std::vector<int64_t>{12, 21, 29, 39});
}

TEST_CASE(
    "given no requests, when slot mapping runs, then every slot up to "
    "max_num_tokens is PAD, and with max_num_tokens 0 nothing is written") {
  SlotMappingLaunch launch;
  launch.query_start_loc = {0};
  launch.block_table = {{1}};
  launch.cols = 1;
  launch.stride = 1;
  launch.max_num_tokens = 3;
  CHECK(launch.run_kernel() == std::vector<int64_t>{kPad, kPad, kPad});
  launch.max_num_tokens = 0;
  launch.slot_mapping_size = 2;
  CHECK(launch.run_kernel() == std::vector<int64_t>{kUntouched, kUntouched});
}

TEST_CASE(
    "given inconsistent slot mapping inputs, when the kernel runs, then it "
    "refuses them with a message naming the parameter and value") {
  SlotMappingLaunch good;
  good.query_start_loc = {0, 2};
  good.positions = {0, 17};
  good.block_table = {{7, 3}};
  good.cols = 2;
  good.stride = 2;
  good.max_num_tokens = 4;
  good.block_size = 16;
  REQUIRE(good.run_kernel() == std::vector<int64_t>{112, 49, kPad, kPad});

  SUBCASE("query_start_loc shorter than num_reqs + 1") {
    SlotMappingLaunch bad = good;
    bad.num_reqs = 2;
    bad.check_refused({"query_start_loc", "num_reqs = 2"});
  }
  SUBCASE("slot_mapping shorter than max_num_tokens") {
    SlotMappingLaunch bad = good;
    bad.slot_mapping_size = 3;
    bad.check_refused({"slot_mapping", "max_num_tokens = 4"});
  }
  SUBCASE("a position beyond the block table row") {
    SlotMappingLaunch bad = good;
    bad.positions = {0, 32};
    bad.check_refused({"block_table[0, 2]", "position 32", "2 columns"});
  }
  SUBCASE("cp_rank outside [0, cp_world_size)") {
    SlotMappingLaunch bad = good;
    bad.cp_world_size = 2;
    bad.cp_rank = 2;
    bad.check_refused({"cp_rank = 2", "cp_world_size = 2"});
  }
  SUBCASE("cp_world_size 0") {
    SlotMappingLaunch bad = good;
    bad.cp_world_size = 0;
    bad.check_refused({"cp_world_size = 0"});
  }
  SUBCASE("block_table_stride differs from the tensor's row stride") {
    SlotMappingLaunch bad = good;
    bad.block_table = {{7, 3}, {1, 1}};
    bad.with_args(
        [&](std::vector<jw_arg_value> args, const std::vector<int64_t>&) {
          args[ks::compute_slot_mapping::block_table_stride] = int_arg(3);
          check_refused(ks::kComputeSlotMapping, args,
                        {"block_table_stride = 3", "row stride"});
        });
  }
  SUBCASE("more tokens than max_num_tokens") {
    SlotMappingLaunch bad = good;
    bad.max_num_tokens = 1;
    bad.check_refused({"max_num_tokens = 1", "num_tokens"});
  }
  SUBCASE("a negative position") {
    SlotMappingLaunch bad = good;
    bad.positions = {0, -5};
    bad.check_refused({"positions[1] = -5"});
  }
  SUBCASE("query_start_loc decreasing") {
    SlotMappingLaunch bad = good;
    bad.query_start_loc = {2, 1};
    bad.check_refused({"query_start_loc[0] = 2"});
  }
  SUBCASE("block_size 0") {
    SlotMappingLaunch bad = good;
    bad.block_size = 0;
    bad.check_refused({"block_size = 0"});
  }
}

// ---------------------------------------------------------------------------
// zero_kv_blocks
// ---------------------------------------------------------------------------
constexpr uint8_t kFill = 0xAB;

struct ZeroLaunch {
  std::vector<int32_t> block_ids;
  // One buffer per segment, filled with kFill.
  std::vector<std::vector<uint8_t>> segments;
  std::vector<int64_t> strides;
  std::vector<int64_t> bytes;
  int64_t n_blocks = -1;  // -1: block_ids.size()

  template <typename Body>
  void with_args(Body&& body) {
    std::vector<int64_t> addresses;
    for (auto& segment : segments) {
      addresses.push_back(
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(segment.data())));
    }
    const auto count = static_cast<int64_t>(segments.size());
    HostBuffer<int32_t> ids({static_cast<int64_t>(block_ids.size())},
                            block_ids);
    HostBuffer<int64_t> seg_addrs({count}, addresses);
    HostBuffer<int64_t> seg_strides({count}, strides);
    HostBuffer<int64_t> seg_bytes({count}, bytes);
    body(std::vector<jw_arg_value>{
        ids.arg(), seg_addrs.arg(), seg_strides.arg(), seg_bytes.arg(),
        int_arg(n_blocks >= 0 ? n_blocks
                              : static_cast<int64_t>(block_ids.size())),
        int_arg(count)});
  }
};

TEST_CASE(
    "given n_blocks in each specialization class (1, 16, 3) and two "
    "segments of different strides, when zero_kv_blocks runs, then exactly "
    "the listed blocks' leading bytes are zero and nothing else changes") {
  for (int n : {1, 16, 3}) {
    INFO("n_blocks ", n);
    ZeroLaunch launch;
    // Block ids 0, 2, 4, ... reversed: any order is allowed.
    for (int b = n - 1; b >= 0; --b) launch.block_ids.push_back(2 * b);
    const int64_t max_id = 2 * (n - 1);
    launch.strides = {24, 7};
    launch.bytes = {16, 5};
    for (std::size_t s = 0; s < 2; ++s) {
      launch.segments.emplace_back(
          static_cast<std::size_t>((max_id + 2) * launch.strides[s]), kFill);
    }
    launch.with_args([](const std::vector<jw_arg_value>& args) {
      CHECK(run(ks::kZeroKvBlocks, args) == "zero_kv_blocks");
    });
    for (std::size_t s = 0; s < 2; ++s) {
      for (std::size_t offset = 0; offset < launch.segments[s].size();
           ++offset) {
        const int64_t block = static_cast<int64_t>(offset) / launch.strides[s];
        const int64_t within = static_cast<int64_t>(offset) % launch.strides[s];
        const bool listed = block % 2 == 0 && block <= max_id;
        const bool zeroed = listed && within < launch.bytes[s];
        INFO("segment ", s, ", byte ", offset);
        CHECK(launch.segments[s][offset] == (zeroed ? 0 : kFill));
      }
    }
  }
}

TEST_CASE(
    "given no blocks or no segments, when zero_kv_blocks runs, then no "
    "byte changes") {
  ZeroLaunch launch;
  launch.segments = {std::vector<uint8_t>(32, kFill)};
  launch.strides = {8};
  launch.bytes = {8};
  launch.with_args([](const std::vector<jw_arg_value>& args) {
    run(ks::kZeroKvBlocks, args);
  });
  CHECK(launch.segments[0] == std::vector<uint8_t>(32, kFill));

  HostBuffer<int32_t> ids({1}, {0});
  HostBuffer<int64_t> empty({0}, {});
  run(ks::kZeroKvBlocks, {ids.arg(), empty.arg(), empty.arg(), empty.arg(),
                          int_arg(1), int_arg(0)});
}

TEST_CASE(
    "given a negative block id, a negative stride or too few segment "
    "entries, when zero_kv_blocks runs, then it refuses without zeroing") {
  ZeroLaunch launch;
  launch.segments = {std::vector<uint8_t>(32, kFill)};
  launch.strides = {8};
  launch.bytes = {8};
  SUBCASE("negative block id") {
    launch.block_ids = {1, -2};
    launch.with_args([](const std::vector<jw_arg_value>& args) {
      check_refused(ks::kZeroKvBlocks, args, {"block_ids[1] = -2"});
    });
  }
  SUBCASE("negative stride") {
    launch.block_ids = {1};
    launch.strides = {-8};
    launch.with_args([](const std::vector<jw_arg_value>& args) {
      check_refused(ks::kZeroKvBlocks, args, {"seg_block_stride[0] = -8"});
    });
  }
  SUBCASE("n_blocks beyond block_ids") {
    launch.block_ids = {1};
    launch.n_blocks = 2;
    launch.with_args([](const std::vector<jw_arg_value>& args) {
      check_refused(ks::kZeroKvBlocks, args, {"block_ids", "n_blocks = 2"});
    });
  }
  CHECK(launch.segments[0] == std::vector<uint8_t>(32, kFill));
}

// ---------------------------------------------------------------------------
// prepare_pos_seq_lens
// ---------------------------------------------------------------------------
TEST_CASE(
    "given two requests mapped to state rows 2 and 0, when "
    "prepare_pos_seq_lens runs, then seq_lens and positions continue from "
    "each row's computed tokens and the tail of seq_lens is zero") {
  HostBuffer<int32_t> idx_mapping({2}, {2, 0});
  HostBuffer<int32_t> query_start_loc({3}, {0, 3, 5});
  HostBuffer<int32_t> num_computed({3}, {10, 7, 4});
  HostBuffer<int32_t> seq_lens({4}, {-5, -5, -5, -5});
  HostBuffer<int64_t> positions({6}, {-5, -5, -5, -5, -5, -5});
  run(ks::kPreparePosSeqLens,
      {idx_mapping.arg(), query_start_loc.arg(), num_computed.arg(),
       seq_lens.arg(), positions.arg(), int_arg(2), int_arg(4)});
  CHECK(seq_lens.values == std::vector<int32_t>{7, 12, 0, 0});
  CHECK(positions.values == std::vector<int64_t>{4, 5, 6, 10, 11, -5});
}

TEST_CASE(
    "given no requests, when prepare_pos_seq_lens runs, then seq_lens is "
    "zeroed up to seq_lens_len and positions are untouched") {
  HostBuffer<int32_t> idx_mapping({0}, {});
  HostBuffer<int32_t> query_start_loc({1}, {0});
  HostBuffer<int32_t> num_computed({2}, {3, 3});
  HostBuffer<int32_t> seq_lens({3}, {9, 9, 9});
  HostBuffer<int64_t> positions({1}, {9});
  run(ks::kPreparePosSeqLens,
      {idx_mapping.arg(), query_start_loc.arg(), num_computed.arg(),
       seq_lens.arg(), positions.arg(), int_arg(0), int_arg(2)});
  CHECK(seq_lens.values == std::vector<int32_t>{0, 0, 9});
  CHECK(positions.values == std::vector<int64_t>{9});
}

TEST_CASE(
    "given bad prepare_pos_seq_lens inputs, when the kernel runs, then it "
    "refuses them naming the parameter") {
  HostBuffer<int32_t> query_start_loc({3}, {0, 3, 5});
  HostBuffer<int32_t> num_computed({3}, {10, 7, 4});
  HostBuffer<int32_t> seq_lens({4}, {0, 0, 0, 0});
  HostBuffer<int64_t> positions({5}, {0, 0, 0, 0, 0});
  SUBCASE("idx_mapping out of range") {
    HostBuffer<int32_t> idx_mapping({2}, {2, 3});
    check_refused(ks::kPreparePosSeqLens,
                  {idx_mapping.arg(), query_start_loc.arg(), num_computed.arg(),
                   seq_lens.arg(), positions.arg(), int_arg(2), int_arg(4)},
                  {"idx_mapping[1] = 3"});
  }
  SUBCASE("seq_lens_len below num_reqs") {
    HostBuffer<int32_t> idx_mapping({2}, {2, 0});
    check_refused(ks::kPreparePosSeqLens,
                  {idx_mapping.arg(), query_start_loc.arg(), num_computed.arg(),
                   seq_lens.arg(), positions.arg(), int_arg(2), int_arg(1)},
                  {"seq_lens_len = 1", "num_reqs = 2"});
  }
  SUBCASE("positions shorter than the tokens") {
    HostBuffer<int32_t> idx_mapping({2}, {2, 0});
    HostBuffer<int64_t> short_positions({4}, {0, 0, 0, 0});
    check_refused(
        ks::kPreparePosSeqLens,
        {idx_mapping.arg(), query_start_loc.arg(), num_computed.arg(),
         seq_lens.arg(), short_positions.arg(), int_arg(2), int_arg(4)},
        {"positions has 4 elements", "5 tokens"});
  }
  SUBCASE("seq_lens shorter than seq_lens_len") {
    HostBuffer<int32_t> idx_mapping({2}, {2, 0});
    check_refused(ks::kPreparePosSeqLens,
                  {idx_mapping.arg(), query_start_loc.arg(), num_computed.arg(),
                   seq_lens.arg(), positions.arg(), int_arg(2), int_arg(5)},
                  {"seq_lens has 4 elements", "seq_lens_len = 5"});
  }
}

}  // namespace
