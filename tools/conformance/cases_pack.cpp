// cases_pack.cpp — cases for pack_seq and unpack_seq (docs/kernels.md,
// 6. pack_seq and 7. unpack_seq): variable-length rows to a padded batch and
// back. Both are copies (the pad value is exactly representable in every
// dtype), compared exactly; outputs have elements past what the kernel writes.
#include <jitwarm/jitwarm.hpp>

#include <algorithm>

#include "cases.hpp"

// Shapes and tensor options are written as designated initializers that
// name only what differs from the defaults; GCC would flag every member
// left to its default member initializer.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace jitwarm::conformance::detail {
namespace {

struct PackShape {
  jw_dtype dtype = JW_DTYPE_FLOAT32;
  int64_t batch = 6;         // B
  int64_t max_length = 12;   // lengths drawn from [0, max_length]
  int64_t extra_length = 3;  // L_max = longest length + extra_length
  int64_t width = 64;        // D
  int64_t block_t = 4;       // BLOCK_T
  int64_t block_d = 64;      // BLOCK_D
  bool misaligned = false;
};

// -1.5 is exact in fp32, fp16 and bf16; 7 is an exact byte.
double pad_value_for(jw_dtype dtype) {
  return dtype == JW_DTYPE_UINT8 ? 7.0 : -1.5;
}

struct Lengths {
  std::vector<int32_t> values;
  int64_t total = 0;
  int64_t padded = 0;  // L_max
};

Lengths draw_lengths(Rng& rng, const PackShape& s) {
  Lengths lengths;
  int64_t longest = 0;
  for (int64_t b = 0; b < s.batch; ++b) {
    int64_t length = rng.uniform_int(0, s.max_length);
    if (b == 1) length = 0;
    if (b == 2) length = s.max_length;
    lengths.values.push_back(static_cast<int32_t>(length));
    lengths.total += length;
    longest = std::max(longest, length);
  }
  lengths.padded = longest + s.extra_length;
  return lengths;
}

Case pack_case(CaseBuilder& b, Rng& rng, const PackShape& s) {
  const Lengths lengths = draw_lengths(rng, s);
  const int64_t rows = lengths.total + 2;  // N: two rows no sequence uses
  const int64_t out_batch = s.batch + 1;   // one sequence nobody writes
  b.tensor("x", s.dtype, {rows, s.width},
           random_values(rng, s.dtype, rows * s.width),
           {.misaligned = s.misaligned});
  b.tensor("lengths", JW_DTYPE_INT32, {s.batch}, to_bytes(lengths.values),
           {.misaligned = s.misaligned});
  b.tensor("out", s.dtype, {out_batch, lengths.padded, s.width},
           random_values(rng, s.dtype, out_batch * lengths.padded * s.width),
           {.misaligned = s.misaligned, .comparison = Comparison::exact});
  b.integer("N", rows);
  b.integer("D", s.width);
  b.integer("L_max", lengths.padded);
  b.floating("pad_value", pad_value_for(s.dtype));
  b.integer("BLOCK_T", s.block_t);
  b.integer("BLOCK_D", s.block_d);
  return b.finish();
}

Case unpack_case(CaseBuilder& b, Rng& rng, const PackShape& s) {
  const Lengths lengths = draw_lengths(rng, s);
  const int64_t rows = lengths.total + 2;  // N: two rows no sequence fills
  b.tensor("packed", s.dtype, {s.batch, lengths.padded, s.width},
           random_values(rng, s.dtype, s.batch * lengths.padded * s.width),
           {.misaligned = s.misaligned});
  b.tensor("lengths", JW_DTYPE_INT32, {s.batch}, to_bytes(lengths.values),
           {.misaligned = s.misaligned});
  b.tensor("out", s.dtype, {rows, s.width},
           random_values(rng, s.dtype, rows * s.width),
           {.misaligned = s.misaligned, .comparison = Comparison::exact});
  b.integer("N", rows);
  b.integer("D", s.width);
  b.integer("L_max", lengths.padded);
  b.integer("BLOCK_T", s.block_t);
  b.integer("BLOCK_D", s.block_d);
  return b.finish();
}

using CaseFunction = Case (*)(CaseBuilder&, Rng&, const PackShape&);

void add_pack_like(RecipeList& list, CaseFunction make) {
  const auto add = [&](std::string name, PackShape shape, bool large = false) {
    list.add(
        std::move(name),
        [shape, make](CaseBuilder& b, Rng& rng) { return make(b, rng, shape); },
        large);
  };
  // N, D and L_max are do_not_specialize: the cases vary the dtype, the
  // tiles (BLOCK_D dividing D or not, 16-byte tiles or not), alignment and
  // the empty batch.
  for (const jw_dtype dtype : {JW_DTYPE_FLOAT32, JW_DTYPE_FLOAT16,
                               JW_DTYPE_BFLOAT16, JW_DTYPE_UINT8}) {
    const std::string d(dtype_short_name(dtype));
    add(d + "/B=6,D=64", {.dtype = dtype});
    add(d + "/B=5,D=37,block_d=16",
        {.dtype = dtype, .batch = 5, .width = 37, .block_d = 16});
    add(d + "/unaligned/B=6,D=64", {.dtype = dtype, .misaligned = true});
    add(d + "/empty/B=0", {.dtype = dtype, .batch = 0});
  }
  add("fp32/L_max=0", {.batch = 3, .max_length = 0, .extra_length = 0});
  add("u8/D=1,block_t=16,block_d=1",
      {.dtype = JW_DTYPE_UINT8, .width = 1, .block_t = 16, .block_d = 1});
  add("fp16/medium/B=32,D=512,L~128", {.dtype = JW_DTYPE_FLOAT16,
                                       .batch = 32,
                                       .max_length = 128,
                                       .width = 512,
                                       .block_t = 8,
                                       .block_d = 128});
  add("bf16/large/B=64,L~2048,D=128",
      {.dtype = JW_DTYPE_BFLOAT16,
       .batch = 64,
       .max_length = 2048,
       .width = 128,
       .block_t = 16,
       .block_d = 128},
      /*large=*/true);
}

}  // namespace

void add_pack_seq_cases(RecipeList& list) {
  add_pack_like(list, &pack_case);
}

void add_unpack_seq_cases(RecipeList& list) {
  add_pack_like(list, &unpack_case);
}

}  // namespace jitwarm::conformance::detail
