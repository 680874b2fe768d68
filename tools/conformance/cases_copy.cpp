// cases_copy.cpp — cases for the kernels that move values without
// arithmetic: expand, batch_memcpy and scatter_states (docs/kernels.md,
// sections 2, 3 and 5). Their outputs are compared exactly; each output holds
// random values where the kernel must not write.
#include <jitwarm/jitwarm.hpp>

#include <fmt/format.h>

#include <algorithm>

#include "cases.hpp"

// Shapes and tensor options are written as designated initializers that
// name only what differs from the defaults; GCC would flag every member
// left to its default member initializer.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace jitwarm::conformance::detail {
namespace {

using TensorOptions = CaseBuilder::TensorOptions;

std::string tag(jw_dtype dtype) {
  return std::string(dtype_short_name(dtype));
}

// ---------------------------------------------------------------------------
// expand
// ---------------------------------------------------------------------------
struct ExpandShape {
  jw_dtype dtype = JW_DTYPE_INT32;
  int64_t requests = 37;
  int64_t max_tokens = 16;  // MAX_NUM_TOKENS
  bool misaligned = false;
  bool wide_values = false;  // int64 values and scalars beyond int32
};

Case expand_case(CaseBuilder& b, Rng& rng, const ExpandShape& s) {
  // x takes values from a small set so replace_from occurs often.
  std::vector<unsigned char> x;
  double from_f = 0.25, to_f = -8.0;
  int64_t from_i = 2, to_i = -7;
  if (s.wide_values) {
    from_i = (int64_t{1} << 40) + 1;
    to_i = -(int64_t{1} << 41);
  }
  std::vector<int32_t> ends;
  int32_t total = 0;
  for (int64_t r = 0; r < s.requests; ++r) {
    int64_t count = rng.uniform_int(0, s.max_tokens);
    if (r % 5 == 2) count = s.max_tokens;
    if (r % 7 == 3) count = 0;
    total += static_cast<int32_t>(count);
    ends.push_back(total);
    const int64_t pick = rng.uniform_int(0, 4);
    if (s.dtype == JW_DTYPE_FLOAT32) {
      constexpr double kValues[] = {-1.5, -0.5, 0.25, 1.0, 2.5};
      const auto value = static_cast<float>(kValues[pick]);
      const auto* raw = reinterpret_cast<const unsigned char*>(&value);
      x.insert(x.end(), raw, raw + sizeof value);
    } else {
      const int64_t value = s.wide_values ? from_i - 2 + pick : pick - 2;
      if (s.dtype == JW_DTYPE_INT32) {
        const auto narrow = static_cast<int32_t>(value);
        const auto* raw = reinterpret_cast<const unsigned char*>(&narrow);
        x.insert(x.end(), raw, raw + sizeof narrow);
      } else {
        const auto* raw = reinterpret_cast<const unsigned char*>(&value);
        x.insert(x.end(), raw, raw + sizeof value);
      }
    }
  }
  const int64_t output_size = total + 5;  // five elements nobody writes
  b.tensor("output", s.dtype, {output_size},
           random_values(rng, s.dtype, output_size),
           {.misaligned = s.misaligned, .comparison = Comparison::exact});
  b.tensor("x", s.dtype, {s.requests}, std::move(x),
           {.misaligned = s.misaligned});
  b.tensor("cu_num_tokens", JW_DTYPE_INT32, {s.requests}, to_bytes(ends),
           {.misaligned = s.misaligned});
  if (s.dtype == JW_DTYPE_FLOAT32) {
    b.floating("replace_from", from_f);
    b.floating("replace_to", to_f);
  } else {
    b.integer("replace_from", from_i);
    b.integer("replace_to", to_i);
  }
  b.integer("MAX_NUM_TOKENS", s.max_tokens);
  return b.finish();
}

void add_expand(RecipeList& list, std::string name, ExpandShape shape,
                bool large = false) {
  list.add(
      std::move(name),
      [shape](CaseBuilder& b, Rng& rng) { return expand_case(b, rng, shape); },
      large);
}

// ---------------------------------------------------------------------------
// batch_memcpy
// ---------------------------------------------------------------------------
enum class Overlap { none, forward, backward };

struct CopySpec {
  int64_t bytes = 0;
  Overlap overlap = Overlap::none;
  int64_t shift =
      0;  // distance between source and destination when they overlap
};

struct MemcpyShape {
  std::vector<CopySpec> copies;
  int64_t block_size = 256;
  bool misaligned = false;
};

Case memcpy_case(CaseBuilder& b, Rng& rng, const MemcpyShape& s) {
  // Every copy gets its own region of one arena, at odd offsets; pairs
  // never overlap each other, a pair's source and destination may.
  struct Placed {
    int64_t src, dst;
  };
  std::vector<Placed> placed;
  int64_t cursor = 0;
  for (const CopySpec& copy : s.copies) {
    const int64_t start = cursor + rng.uniform_int(0, 15);
    Placed p{};
    switch (copy.overlap) {
      case Overlap::none:
        p.src = start;
        p.dst = start + copy.bytes + rng.uniform_int(1, 17);
        break;
      case Overlap::forward:
        p.src = start;
        p.dst = start + copy.shift;
        break;
      case Overlap::backward:
        p.dst = start;
        p.src = start + copy.shift;
        break;
    }
    placed.push_back(p);
    cursor = std::max(p.src, p.dst) + copy.bytes + rng.uniform_int(1, 31);
  }
  Buffer arena;
  arena.name = "memory";
  arena.dtype = JW_DTYPE_UINT8;
  arena.bytes = random_bytes(rng, cursor + 16);
  arena.comparison = Comparison::exact;
  const std::size_t arena_index = b.buffer(std::move(arena));

  const auto count = static_cast<int64_t>(s.copies.size());
  std::vector<int64_t> sizes;
  std::vector<AddressSlot> sources, destinations;
  for (int64_t i = 0; i < count; ++i) {
    const auto at = static_cast<std::size_t>(i);
    sizes.push_back(s.copies[at].bytes);
    sources.push_back({i, arena_index, placed[at].src});
    destinations.push_back({i, arena_index, placed[at].dst});
  }
  const std::vector<unsigned char> unfilled(static_cast<std::size_t>(count) *
                                            8);
  const std::size_t src_ptrs = b.tensor("src_ptrs", JW_DTYPE_INT64, {count},
                                        unfilled, {.misaligned = s.misaligned});
  b.buffer_at(src_ptrs).addresses = std::move(sources);
  const std::size_t dst_ptrs = b.tensor("dst_ptrs", JW_DTYPE_INT64, {count},
                                        unfilled, {.misaligned = s.misaligned});
  b.buffer_at(dst_ptrs).addresses = std::move(destinations);
  b.tensor("sizes", JW_DTYPE_INT64, {count}, to_bytes(sizes),
           {.misaligned = s.misaligned});
  b.integer("num_copies", count);
  b.integer("BLOCK_SIZE", s.block_size);
  return b.finish();
}

void add_memcpy(RecipeList& list, std::string name, MemcpyShape shape,
                bool large = false) {
  list.add(
      std::move(name),
      [shape](CaseBuilder& b, Rng& rng) { return memcpy_case(b, rng, shape); },
      large);
}

std::vector<CopySpec> separate_copies(std::initializer_list<int64_t> sizes) {
  std::vector<CopySpec> copies;
  for (const int64_t bytes : sizes) copies.push_back({bytes, Overlap::none, 0});
  return copies;
}

// ---------------------------------------------------------------------------
// scatter_states
// ---------------------------------------------------------------------------
struct ScatterShape {
  jw_dtype dtype = JW_DTYPE_FLOAT32;
  int64_t state_rows = 20;   // N
  int64_t source_rows = 12;  // T = num_rows
  int64_t row_size = 32;     // ROW_SIZE
  int64_t state_stride = 0;  // 0: compact (ROW_SIZE)
  jw_dtype index_dtype = JW_DTYPE_INT32;
  int64_t block_size = 256;
  int64_t padding_indices = 3;  // negative entries among the T indices
  bool misaligned = false;
};

Case scatter_case(CaseBuilder& b, Rng& rng, const ScatterShape& s) {
  const int64_t stride = s.state_stride != 0 ? s.state_stride : s.row_size;
  std::vector<int64_t> state_strides;
  if (stride != s.row_size) state_strides = {stride, 1};
  const int64_t state_elements = storage_elements(
      std::vector<int64_t>{s.state_rows, s.row_size}, state_strides);

  // Distinct targets; the padding entries are spread over the rows.
  const std::vector<int64_t> order = rng.permutation(s.state_rows);
  std::vector<int64_t> indices;
  for (int64_t t = 0; t < s.source_rows; ++t) {
    const bool padding = t < s.padding_indices;
    indices.push_back(padding ? -1 - t : order[static_cast<std::size_t>(t)]);
  }
  for (int64_t t = s.source_rows - 1; t > 0; --t) {
    std::swap(indices[static_cast<std::size_t>(t)],
              indices[static_cast<std::size_t>(rng.uniform_int(0, t))]);
  }
  std::vector<unsigned char> index_bytes;
  if (s.index_dtype == JW_DTYPE_INT32) {
    std::vector<int32_t> narrow(indices.begin(), indices.end());
    index_bytes = to_bytes(narrow);
  } else {
    index_bytes = to_bytes(indices);
  }

  b.tensor("state", s.dtype, {s.state_rows, s.row_size},
           random_values(rng, s.dtype, state_elements),
           {.strides = state_strides,
            .misaligned = s.misaligned,
            .comparison = Comparison::exact});
  b.integer("state_stride", stride);
  b.tensor("src", s.dtype, {s.source_rows, s.row_size},
           random_values(rng, s.dtype, s.source_rows * s.row_size),
           {.misaligned = s.misaligned});
  b.tensor("indices", s.index_dtype, {s.source_rows}, std::move(index_bytes),
           {.misaligned = s.misaligned});
  b.integer("num_rows", s.source_rows);
  b.integer("ROW_SIZE", s.row_size);
  b.integer("BLOCK_SIZE", s.block_size);
  return b.finish();
}

void add_scatter(RecipeList& list, std::string name, ScatterShape shape,
                 bool large = false) {
  list.add(
      std::move(name),
      [shape](CaseBuilder& b, Rng& rng) { return scatter_case(b, rng, shape); },
      large);
}

}  // namespace

void add_expand_cases(RecipeList& list) {
  // Every integer of expand is do_not_specialize (or a constexpr): the
  // cases vary dtype, alignment and sizes.
  for (const jw_dtype dtype :
       {JW_DTYPE_INT32, JW_DTYPE_INT64, JW_DTYPE_FLOAT32}) {
    const std::string d = tag(dtype);
    add_expand(list, d + "/B=37,max=16", {.dtype = dtype});
    add_expand(list, d + "/unaligned/B=37,max=16",
               {.dtype = dtype, .misaligned = true});
    add_expand(list, d + "/B=1,max=1",
               {.dtype = dtype, .requests = 1, .max_tokens = 1});
    add_expand(list, d + "/empty/B=0",
               {.dtype = dtype, .requests = 0, .max_tokens = 4});
  }
  add_expand(list, "i64/wide-values/B=20,max=16",
             {.dtype = JW_DTYPE_INT64, .requests = 20, .wide_values = true});
  add_expand(list, "i32/medium/B=2000,max=64",
             {.dtype = JW_DTYPE_INT32, .requests = 2000, .max_tokens = 64});
  add_expand(list, "fp32/large/B=200000,max=32",
             {.dtype = JW_DTYPE_FLOAT32, .requests = 200000, .max_tokens = 32},
             /*large=*/true);
}

void add_batch_memcpy_cases(RecipeList& list) {
  add_memcpy(list, "mixed-sizes/block=256",
             {.copies = separate_copies({0, 1, 2, 3, 7, 15, 16, 17, 31, 32, 63,
                                         100, 255, 256, 1000, 4096, 4099})});
  add_memcpy(list, "overlapping/block=256",
             {.copies = {{1000, Overlap::forward, 3},
                         {1000, Overlap::backward, 5},
                         {64, Overlap::forward, 16},
                         {4099, Overlap::backward, 1},
                         {17, Overlap::forward, 16}}});
  add_memcpy(
      list, "big-copies/block=1024",
      {.copies = separate_copies({65537, 100000, 3}), .block_size = 1024});
  add_memcpy(list, "B=1/block=32",
             {.copies = separate_copies({777}), .block_size = 32});
  // Forty copies of sizes spread over [0, 600], odd ones included.
  std::vector<CopySpec> forty;
  for (int64_t i = 0; i < 40; ++i) forty.push_back({(i * 37 + 5) % 601});
  add_memcpy(list, "B=40/block=64", {.copies = forty, .block_size = 64});
  add_memcpy(list, "empty/B=0", {.copies = {}});
  // Backends may give small copies to a warp and large ones to a block
  // (the CUDA and HIP plugins do, at 16 KiB): three hundred copies of
  // sizes on both sides of that and around it, with overlapping pairs
  // among them, so one batch holds every kind.
  std::vector<CopySpec> mixed{{16383}, {16384}, {16385}};
  for (int64_t i = 0; i < 297; ++i) {
    const int64_t bytes =
        i % 7 == 3 ? 16386 + (i * 97) % 30000 : (i * 131) % 16400;
    if (i % 11 == 5) {
      mixed.push_back({bytes + 40,
                       i % 2 == 0 ? Overlap::forward : Overlap::backward,
                       1 + i % 33});
    } else {
      mixed.push_back({bytes});
    }
  }
  for (const int64_t block : {1024, 96, 16}) {
    add_memcpy(list, "mixed-batches/B=300,block=" + std::to_string(block),
               {.copies = mixed, .block_size = block});
  }
  add_memcpy(
      list, "unaligned/block=256",
      {.copies = separate_copies({0, 1, 31, 4099, 100}), .misaligned = true});
  // 64 copies of about 1 MiB each (sizes around a power of two).
  std::vector<CopySpec> large;
  for (int64_t i = 0; i < 64; ++i)
    large.push_back({(int64_t{1} << 20) + i % 3 - 1});
  add_memcpy(list, "large/B=64,64MiB", {.copies = large, .block_size = 1024},
             /*large=*/true);
}

void add_scatter_states_cases(RecipeList& list) {
  // "Any dtype": one case per dtype of jitwarm.h, with 16-byte rows so the
  // vectorized path of a backend is taken for every element size.
  for (int dtype = JW_DTYPE_BOOL; dtype < JW_DTYPE_COUNT; ++dtype) {
    const auto d = static_cast<jw_dtype>(dtype);
    add_scatter(list, tag(d) + "/row=32,stride=32", {.dtype = d});
  }
  // state_stride is the specialized integer: 1, multiples of 16, other;
  // rows that are and are not a multiple of 16 bytes.
  add_scatter(list, "fp32/row=10,stride=13",
              {.row_size = 10, .state_stride = 13});
  add_scatter(list, "fp32/row=1,stride=1", {.row_size = 1});
  add_scatter(list, "u8/row=5,stride=16",
              {.dtype = JW_DTYPE_UINT8, .row_size = 5, .state_stride = 16});
  add_scatter(list, "bf16/row=24,stride=37",
              {.dtype = JW_DTYPE_BFLOAT16, .row_size = 24, .state_stride = 37});
  add_scatter(list, "fp32/indices=i64/row=32,stride=48",
              {.state_stride = 48, .index_dtype = JW_DTYPE_INT64});
  add_scatter(
      list, "i64/indices=i64/row=8,stride=8",
      {.dtype = JW_DTYPE_INT64, .row_size = 8, .index_dtype = JW_DTYPE_INT64});
  add_scatter(list, "fp32/unaligned/row=32,stride=32", {.misaligned = true});
  add_scatter(list, "u8/unaligned/row=7,stride=7",
              {.dtype = JW_DTYPE_UINT8, .row_size = 7, .misaligned = true});
  add_scatter(
      list, "fp16/empty/T=0",
      {.dtype = JW_DTYPE_FLOAT16, .source_rows = 0, .padding_indices = 0});
  add_scatter(list, "fp32/all-padding/T=6",
              {.source_rows = 6, .padding_indices = 6});
  add_scatter(list, "fp32/block=64,row=300",
              {.state_rows = 9,
               .source_rows = 5,
               .row_size = 300,
               .block_size = 64,
               .padding_indices = 1});
  add_scatter(list, "fp16/medium/N=512,T=256,row=1024",
              {.dtype = JW_DTYPE_FLOAT16,
               .state_rows = 512,
               .source_rows = 256,
               .row_size = 1024,
               .block_size = 1024,
               .padding_indices = 17});
  add_scatter(list, "fp32/large/N=8192,T=4096,row=1024",
              {.state_rows = 8192,
               .source_rows = 4096,
               .row_size = 1024,
               .block_size = 1024,
               .padding_indices = 100},
              /*large=*/true);
}

}  // namespace jitwarm::conformance::detail
