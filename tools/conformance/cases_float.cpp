// cases_float.cpp — cases for the float kernels rms_norm and silu_and_mul
// (docs/kernels.md, sections 9 and 10). Their outputs are compared with the
// dtype-aware tolerances of compare.hpp; each output has one row past T
// that the kernel must not write: it keeps its random values, so a write
// there is a mismatch.
#include <jitwarm/jitwarm.hpp>

#include "cases.hpp"

// Shapes and tensor options are written as designated initializers that
// name only what differs from the defaults; GCC would flag every member
// left to its default member initializer.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace jitwarm::conformance::detail {
namespace {

constexpr jw_dtype kFloatDtypes[] = {JW_DTYPE_FLOAT32, JW_DTYPE_FLOAT16,
                                     JW_DTYPE_BFLOAT16};

struct RowShape {
  jw_dtype dtype = JW_DTYPE_FLOAT32;
  int64_t rows = 7;    // T
  int64_t width = 64;  // H
  int64_t stride = 0;  // rms_norm's x_stride; 0: compact (H)
  bool misaligned = false;
};

Case rms_norm_case(CaseBuilder& b, Rng& rng, const RowShape& s) {
  const int64_t stride = s.stride != 0 ? s.stride : s.width;
  std::vector<int64_t> x_strides;
  if (stride != s.width) x_strides = {stride, 1};
  const int64_t x_elements =
      storage_elements(std::vector<int64_t>{s.rows, s.width}, x_strides);
  b.tensor("out", s.dtype, {s.rows + 1, s.width},
           random_floats(rng, s.dtype, (s.rows + 1) * s.width, -100, 100),
           {.misaligned = s.misaligned, .comparison = Comparison::floating});
  b.tensor("x", s.dtype, {s.rows, s.width},
           random_floats(rng, s.dtype, x_elements, -3, 3),
           {.strides = x_strides, .misaligned = s.misaligned});
  b.integer("x_stride", stride);
  // Weights in [1.25, 2.25): at least a quarter away from 1 everywhere,
  // so a kernel that skips the weight fails every case that has rows.
  b.tensor("weight", s.dtype, {s.width},
           random_floats(rng, s.dtype, s.width, 1.25, 2.25),
           {.misaligned = s.misaligned});
  b.floating("eps", 1e-6);
  b.integer("T", s.rows);
  b.integer("H", s.width);
  return b.finish();
}

Case silu_and_mul_case(CaseBuilder& b, Rng& rng, const RowShape& s) {
  b.tensor("out", s.dtype, {s.rows + 1, s.width},
           random_floats(rng, s.dtype, (s.rows + 1) * s.width, -100, 100),
           {.misaligned = s.misaligned, .comparison = Comparison::floating});
  // [-8, 8) spans silu's saturated tails and its curved middle.
  b.tensor("x", s.dtype, {s.rows, 2 * s.width},
           random_floats(rng, s.dtype, s.rows * 2 * s.width, -8, 8),
           {.misaligned = s.misaligned});
  b.integer("T", s.rows);
  b.integer("H", s.width);
  return b.finish();
}

using CaseFunction = Case (*)(CaseBuilder&, Rng&, const RowShape&);

void add_row_case(RecipeList& list, CaseFunction make, std::string name,
                  RowShape shape, bool large = false) {
  list.add(
      std::move(name),
      [shape, make](CaseBuilder& b, Rng& rng) { return make(b, rng, shape); },
      large);
}

}  // namespace

void add_rms_norm_cases(RecipeList& list) {
  // H and x_stride are the specialized integers: every class of each (1,
  // multiple of 16, other), compact and padded rows; T is dns.
  for (const jw_dtype dtype : kFloatDtypes) {
    const std::string d(dtype_short_name(dtype));
    const auto add = [&](const std::string& name, RowShape shape) {
      shape.dtype = dtype;
      add_row_case(list, &rms_norm_case, d + "/" + name, shape);
    };
    add("T=7,H=64", {});
    add("T=5,H=37", {.rows = 5, .width = 37});
    add("T=9,H=1", {.rows = 9, .width = 1});
    add("T=4,H=64,stride=80", {.rows = 4, .stride = 80});
    add("T=3,H=48,stride=53", {.rows = 3, .width = 48, .stride = 53});
    add("T=3,H=1,stride=16", {.rows = 3, .width = 1, .stride = 16});
    add("T=3,H=4096", {.rows = 3, .width = 4096});
    add("unaligned/T=7,H=64", {.misaligned = true});
    add("unaligned/T=5,H=37,stride=40",
        {.rows = 5, .width = 37, .stride = 40, .misaligned = true});
    add("empty/T=0,H=64", {.rows = 0});
  }
  add_row_case(list, &rms_norm_case, "bf16/large/T=4096,H=8192",
               {.dtype = JW_DTYPE_BFLOAT16, .rows = 4096, .width = 8192},
               /*large=*/true);
  add_row_case(list, &rms_norm_case, "fp32/large/T=65536,H=128",
               {.rows = 65536, .width = 128}, /*large=*/true);
}

void add_silu_and_mul_cases(RecipeList& list) {
  // H is the specialized integer (1, multiple of 16, other); T is dns.
  for (const jw_dtype dtype : kFloatDtypes) {
    const std::string d(dtype_short_name(dtype));
    const auto add = [&](const std::string& name, RowShape shape) {
      shape.dtype = dtype;
      add_row_case(list, &silu_and_mul_case, d + "/" + name, shape);
    };
    add("T=7,H=64", {});
    add("T=5,H=37", {.rows = 5, .width = 37});
    add("T=9,H=1", {.rows = 9, .width = 1});
    add("T=2,H=4096", {.rows = 2, .width = 4096});
    add("unaligned/T=7,H=64", {.misaligned = true});
    add("unaligned/T=3,H=37", {.rows = 3, .width = 37, .misaligned = true});
    add("empty/T=0,H=64", {.rows = 0});
  }
  add_row_case(list, &silu_and_mul_case, "bf16/large/T=8192,H=4096",
               {.dtype = JW_DTYPE_BFLOAT16, .rows = 8192, .width = 4096},
               /*large=*/true);
  add_row_case(list, &silu_and_mul_case, "fp32/large/T=16384,H=1024",
               {.rows = 16384, .width = 1024}, /*large=*/true);
}

}  // namespace jitwarm::conformance::detail
