// cases_kv_cache.cpp — cases for the KV-cache bookkeeping kernels:
// compute_slot_mapping, zero_kv_blocks and prepare_pos_seq_lens
// (docs/kernels.md, sections 1, 4 and 8). All their outputs are integers or
// bytes, compared exactly; every output has elements past the range the
// kernel may write, filled with random values, so a write out of range is
// a mismatch.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "cases.hpp"

// Shapes and tensor options are written as designated initializers that
// name only what differs from the defaults; GCC would flag every member
// left to its default member initializer.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace jitwarm::conformance::detail {
namespace {

using TensorOptions = CaseBuilder::TensorOptions;

std::vector<int32_t> prefix_sum_of_random_lengths(Rng& rng, int64_t count,
                                                  int64_t max_length) {
  std::vector<int32_t> starts{0};
  for (int64_t i = 0; i < count; ++i) {
    // Every third request gets an extreme length (0 or the maximum).
    int64_t length = rng.uniform_int(0, max_length);
    if (i % 3 == 1) length = (i % 2 == 0) ? 0 : max_length;
    starts.push_back(static_cast<int32_t>(starts.back() + length));
  }
  return starts;
}

// ---------------------------------------------------------------------------
// compute_slot_mapping
// ---------------------------------------------------------------------------
struct SlotMappingShape {
  int64_t num_reqs = 5;
  int64_t max_query_len = 9;
  int64_t padding_tokens = 3;  // max_num_tokens - num_tokens
  int64_t block_size = 16;
  int64_t virtual_blocks = 4;  // block_table columns / blocks_per_kv_block
  int64_t table_stride = 0;    // 0: compact (the number of columns)
  int64_t blocks_per_kv_block = 1;
  int64_t world_size = 1;
  int64_t rank = 0;
  int64_t interleave = 1;
  bool misaligned = false;
};

Case slot_mapping_case(CaseBuilder& b, Rng& rng, const SlotMappingShape& s) {
  const int64_t columns = s.virtual_blocks * s.blocks_per_kv_block;
  const int64_t stride = s.table_stride != 0 ? s.table_stride : columns;
  const int64_t rows = s.num_reqs + 2;  // max_num_reqs: rows nobody reads
  const std::vector<int32_t> starts =
      prefix_sum_of_random_lengths(rng, s.num_reqs, s.max_query_len);
  const int64_t num_tokens = starts.back();
  const int64_t max_num_tokens = num_tokens + s.padding_tokens;
  const int64_t virtual_block_size =
      s.block_size * s.blocks_per_kv_block * s.world_size;

  std::vector<int64_t> positions(static_cast<std::size_t>(num_tokens + 3));
  for (auto& position : positions) {
    position = rng.uniform_int(0, s.virtual_blocks * virtual_block_size - 1);
  }
  std::vector<int64_t> table_strides;
  if (stride != columns) table_strides = {stride, 1};
  const int64_t table_elements =
      storage_elements(std::vector<int64_t>{rows, columns}, table_strides);
  std::vector<int32_t> table(static_cast<std::size_t>(table_elements));
  for (auto& block : table) {
    block = static_cast<int32_t>(rng.uniform_int(0, (1 << 20) - 1));
  }

  b.tensor("query_start_loc", JW_DTYPE_INT32,
           {static_cast<int64_t>(starts.size())}, to_bytes(starts),
           {.misaligned = s.misaligned});
  b.tensor("positions", JW_DTYPE_INT64,
           {static_cast<int64_t>(positions.size())}, to_bytes(positions),
           {.misaligned = s.misaligned});
  b.tensor("block_table", JW_DTYPE_INT32, {rows, columns}, to_bytes(table),
           {.strides = table_strides, .misaligned = s.misaligned});
  b.integer("block_table_stride", stride);
  // Two elements past max_num_tokens that the kernel must not write.
  b.tensor("slot_mapping", JW_DTYPE_INT64, {max_num_tokens + 2},
           random_values(rng, JW_DTYPE_INT64, max_num_tokens + 2),
           {.misaligned = s.misaligned, .comparison = Comparison::exact});
  b.integer("num_reqs", s.num_reqs);
  b.integer("max_num_tokens", max_num_tokens);
  b.integer("block_size", s.block_size);
  b.integer("blocks_per_kv_block", s.blocks_per_kv_block);
  b.integer("cp_world_size", s.world_size);
  b.integer("cp_rank", s.rank);
  b.integer("cp_interleave", s.interleave);
  return b.finish();
}

void add_slot_mapping(RecipeList& list, std::string name,
                      SlotMappingShape shape, bool large = false) {
  list.add(
      std::move(name),
      [shape](CaseBuilder& b, Rng& rng) {
        return slot_mapping_case(b, rng, shape);
      },
      large);
}

// ---------------------------------------------------------------------------
// zero_kv_blocks
// ---------------------------------------------------------------------------
struct Segment {
  int64_t block_stride = 0;  // bytes between blocks
  int64_t block_bytes = 0;   // bytes zeroed per block
};

struct ZeroBlocksShape {
  int64_t n_blocks = 5;
  int64_t blocks_per_segment = 40;
  std::vector<Segment> segments;
  bool misaligned = false;  // tensors, and segment bases at odd offsets
};

Case zero_blocks_case(CaseBuilder& b, Rng& rng, const ZeroBlocksShape& s) {
  const int64_t n_segments = static_cast<int64_t>(s.segments.size());
  // Distinct block ids; two more valid ids past n_blocks that a kernel
  // reading too far would zero (visible as a mismatch, not a corruption).
  const std::vector<int64_t> order = rng.permutation(s.blocks_per_segment);
  const int64_t listed = std::min(s.n_blocks + 2, s.blocks_per_segment);
  std::vector<int32_t> block_ids;
  for (int64_t i = 0; i < listed; ++i) {
    block_ids.push_back(
        static_cast<int32_t>(order[static_cast<std::size_t>(i)]));
  }

  std::vector<int64_t> strides, byte_counts;
  std::vector<AddressSlot> addresses;
  std::vector<Buffer> segment_buffers;
  for (int64_t i = 0; i < n_segments; ++i) {
    const Segment& segment = s.segments[static_cast<std::size_t>(i)];
    const int64_t base = s.misaligned ? 1 + 2 * i : 0;
    Buffer memory;
    memory.name = fmt::format("segment {}", i);
    memory.dtype = JW_DTYPE_UINT8;
    memory.bytes = random_bytes(
        rng, base + s.blocks_per_segment * segment.block_stride + 64);
    // Non-zero everywhere, so every zeroed byte is a visible change.
    for (auto& byte : memory.bytes) byte = static_cast<unsigned char>(byte | 1);
    memory.comparison = Comparison::exact;
    segment_buffers.push_back(std::move(memory));
    strides.push_back(segment.block_stride);
    byte_counts.push_back(segment.block_bytes);
    addresses.push_back(AddressSlot{i, 0, base});  // target set below
  }
  std::vector<std::size_t> segment_index;
  for (Buffer& memory : segment_buffers) {
    segment_index.push_back(b.buffer(std::move(memory)));
  }

  b.tensor("block_ids", JW_DTYPE_INT32,
           {static_cast<int64_t>(block_ids.size())}, to_bytes(block_ids),
           {.misaligned = s.misaligned});
  const std::size_t address_buffer = b.tensor(
      "seg_addrs", JW_DTYPE_INT64, {n_segments},
      std::vector<unsigned char>(static_cast<std::size_t>(n_segments) * 8),
      {.misaligned = s.misaligned});
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    addresses[i].target = segment_index[i];
  }
  b.buffer_at(address_buffer).addresses = std::move(addresses);
  b.tensor("seg_block_stride", JW_DTYPE_INT64, {n_segments}, to_bytes(strides),
           {.misaligned = s.misaligned});
  b.tensor("seg_block_bytes", JW_DTYPE_INT64, {n_segments},
           to_bytes(byte_counts), {.misaligned = s.misaligned});
  b.integer("n_blocks", s.n_blocks);
  b.integer("n_segments", n_segments);
  return b.finish();
}

void add_zero_blocks(RecipeList& list, std::string name, ZeroBlocksShape shape,
                     bool large = false) {
  list.add(
      std::move(name),
      [shape](CaseBuilder& b, Rng& rng) {
        return zero_blocks_case(b, rng, shape);
      },
      large);
}

// ---------------------------------------------------------------------------
// prepare_pos_seq_lens
// ---------------------------------------------------------------------------
struct PrepareShape {
  int64_t num_reqs = 7;
  int64_t request_slots = 16;  // rows of num_computed_tokens
  int64_t seq_lens_len = 10;
  int64_t max_query_len = 20;
  bool misaligned = false;
};

Case prepare_case(CaseBuilder& b, Rng& rng, const PrepareShape& s) {
  const std::vector<int64_t> order = rng.permutation(s.request_slots);
  std::vector<int32_t> idx_mapping;
  for (int64_t i = 0; i < s.num_reqs; ++i) {
    idx_mapping.push_back(
        static_cast<int32_t>(order[static_cast<std::size_t>(i)]));
  }
  const std::vector<int32_t> starts =
      prefix_sum_of_random_lengths(rng, s.num_reqs, s.max_query_len);
  std::vector<int32_t> computed(static_cast<std::size_t>(s.request_slots));
  for (auto& tokens : computed) {
    tokens = static_cast<int32_t>(rng.uniform_int(0, 5000));
  }
  const int64_t num_tokens = starts.back();

  b.tensor("idx_mapping", JW_DTYPE_INT32, {s.num_reqs}, to_bytes(idx_mapping),
           {.misaligned = s.misaligned});
  b.tensor("query_start_loc", JW_DTYPE_INT32,
           {static_cast<int64_t>(starts.size())}, to_bytes(starts),
           {.misaligned = s.misaligned});
  b.tensor("num_computed_tokens", JW_DTYPE_INT32, {s.request_slots},
           to_bytes(computed), {.misaligned = s.misaligned});
  // Outputs: two elements past what the kernel may write.
  b.tensor("seq_lens", JW_DTYPE_INT32, {s.seq_lens_len + 2},
           random_values(rng, JW_DTYPE_INT32, s.seq_lens_len + 2),
           {.misaligned = s.misaligned, .comparison = Comparison::exact});
  b.tensor("positions", JW_DTYPE_INT64, {num_tokens + 2},
           random_values(rng, JW_DTYPE_INT64, num_tokens + 2),
           {.misaligned = s.misaligned, .comparison = Comparison::exact});
  b.integer("num_reqs", s.num_reqs);
  b.integer("seq_lens_len", s.seq_lens_len);
  return b.finish();
}

void add_prepare(RecipeList& list, std::string name, PrepareShape shape,
                 bool large = false) {
  list.add(
      std::move(name),
      [shape](CaseBuilder& b, Rng& rng) { return prepare_case(b, rng, shape); },
      large);
}

}  // namespace

void add_compute_slot_mapping_cases(RecipeList& list) {
  // block_size and block_table_stride are the specialized integers: each
  // takes the classes 1, multiple of 16 and other across these cases.
  add_slot_mapping(list, "bs=16,stride=32",
                   {.virtual_blocks = 20, .table_stride = 32});
  add_slot_mapping(list, "bs=1,stride=37",
                   {.block_size = 1, .virtual_blocks = 30, .table_stride = 37});
  add_slot_mapping(list, "bs=13,stride=16",
                   {.block_size = 13, .virtual_blocks = 16});
  add_slot_mapping(list, "bs=16,stride=1", {.virtual_blocks = 1});
  add_slot_mapping(
      list, "bs=16,stride=37,cp=2/rank1",
      {.virtual_blocks = 10, .table_stride = 37, .world_size = 2, .rank = 1});
  add_slot_mapping(list, "bs=8,stride=48,cp=4/rank3,interleave=2,kv_blocks=2",
                   {.block_size = 8,
                    .virtual_blocks = 12,
                    .table_stride = 48,
                    .blocks_per_kv_block = 2,
                    .world_size = 4,
                    .rank = 3,
                    .interleave = 2});
  add_slot_mapping(list, "empty/R=0,max_tokens=0",
                   {.num_reqs = 0, .padding_tokens = 0});
  add_slot_mapping(list, "empty/R=0,padding-only",
                   {.num_reqs = 0, .padding_tokens = 7});
  add_slot_mapping(
      list, "unaligned/bs=16,stride=32",
      {.virtual_blocks = 20, .table_stride = 32, .misaligned = true});
  // The GPU kernels compute in 32 bits while positions and the virtual
  // block are below 2^31, in 64 bits otherwise: positions up to ~10^10,
  // then a block size past 2^32 (an int64 block_size).
  add_slot_mapping(list, "bs=2^28,positions>2^31",
                   {.block_size = int64_t{1} << 28, .virtual_blocks = 40});
  add_slot_mapping(list, "bs=2^32+3",
                   {.block_size = (int64_t{1} << 32) + 3, .virtual_blocks = 2});
  add_slot_mapping(list, "medium/R=64,bs=16,stride=256",
                   {.num_reqs = 64,
                    .max_query_len = 100,
                    .padding_tokens = 29,
                    .virtual_blocks = 200,
                    .table_stride = 256});
  add_slot_mapping(list, "large/R=1024,tokens~1M",
                   {.num_reqs = 1024,
                    .max_query_len = 2048,
                    .padding_tokens = 1000,
                    .virtual_blocks = 512},
                   /*large=*/true);
}

void add_zero_kv_blocks_cases(RecipeList& list) {
  const std::vector<Segment> three = {{4096, 4096}, {1024, 1000}, {96, 17}};
  // n_blocks is the specialized integer: 1, 16/32 and other.
  add_zero_blocks(list, "n_blocks=5,S=3", {.n_blocks = 5, .segments = three});
  add_zero_blocks(list, "n_blocks=1,S=2",
                  {.n_blocks = 1, .segments = {{512, 512}, {200, 3}}});
  add_zero_blocks(list, "n_blocks=32,S=3", {.n_blocks = 32, .segments = three});
  add_zero_blocks(list, "n_blocks=16,S=2,zero-bytes",
                  {.n_blocks = 16, .segments = {{256, 0}, {256, 160}}});
  add_zero_blocks(list, "empty/n_blocks=0,S=3",
                  {.n_blocks = 0, .segments = three});
  add_zero_blocks(list, "empty/n_segments=0", {.n_blocks = 7, .segments = {}});
  add_zero_blocks(list, "unaligned/n_blocks=5,S=3",
                  {.n_blocks = 5, .segments = three, .misaligned = true});
  add_zero_blocks(
      list, "medium/n_blocks=100,S=4",
      {.n_blocks = 100,
       .blocks_per_segment = 256,
       .segments = {{2048, 2048}, {2048, 1500}, {640, 640}, {4096, 31}}});
  add_zero_blocks(list, "large/n_blocks=512,S=4,64MiB",
                  {.n_blocks = 512,
                   .blocks_per_segment = 1024,
                   .segments = {{16384, 16384},
                                {16384, 16384},
                                {16384, 12000},
                                {16384, 16384}}},
                  /*large=*/true);
}

void add_prepare_pos_seq_lens_cases(RecipeList& list) {
  // Every integer of this kernel is do_not_specialize: sizes vary freely.
  add_prepare(list, "R=7,slots=16,len=10", {});
  add_prepare(list, "R=1,slots=4,len=1",
              {.num_reqs = 1, .request_slots = 4, .seq_lens_len = 1});
  add_prepare(list, "empty/R=0,len=5", {.num_reqs = 0, .seq_lens_len = 5});
  add_prepare(list, "empty/R=0,len=0", {.num_reqs = 0, .seq_lens_len = 0});
  add_prepare(list, "unaligned/R=7,len=10", {.misaligned = true});
  add_prepare(list, "medium/R=256,slots=1024,len=300",
              {.num_reqs = 256,
               .request_slots = 1024,
               .seq_lens_len = 300,
               .max_query_len = 64});
  add_prepare(list, "large/R=8192,tokens~1M",
              {.num_reqs = 8192,
               .request_slots = 16384,
               .seq_lens_len = 8200,
               .max_query_len = 256},
              /*large=*/true);
}

}  // namespace jitwarm::conformance::detail
