// dtypes and tensor metadata helpers (core/src/tensor.cpp).
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <array>

using namespace jitwarm;

TEST_CASE("given dtypes, then names, sizes and parsing agree") {
  for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
    const auto dtype = static_cast<jw_dtype>(d);
    CHECK(dtype_size(dtype) > 0);
    CHECK(parse_dtype(dtype_name(dtype)) == dtype);
    CHECK(parse_dtype(dtype_short_name(dtype)) == dtype);
  }
  CHECK(dtype_size(JW_DTYPE_BFLOAT16) == 2);
  CHECK(dtype_size(JW_DTYPE_INVALID) == 0);
  CHECK_FALSE(parse_dtype("float17"));
  CHECK(is_floating_dtype(JW_DTYPE_BFLOAT16));
  CHECK_FALSE(is_integer_dtype(JW_DTYPE_BOOL));
  CHECK(std::string(jw_dtype_name(JW_DTYPE_UINT64)) == "uint64");
}

TEST_CASE("given shapes without strides, then strides are compact row-major") {
  const std::array<int64_t, 3> shape{2, 3, 4};
  const jw_tensor_meta m = make_tensor_meta(JW_DTYPE_FLOAT32, shape);
  CHECK(effective_strides(m) == std::vector<int64_t>{12, 4, 1});
  CHECK(element_count(m) == 24);
  CHECK(is_compact_row_major(m));
  const std::array<int64_t, 3> strides{16, 4, 1};
  CHECK_FALSE(
      is_compact_row_major(make_tensor_meta(JW_DTYPE_FLOAT32, shape, strides)));
  const std::array<int64_t, 2> row{1, 5};
  const std::array<int64_t, 2> any_outer{99, 1};
  CHECK(
      is_compact_row_major(make_tensor_meta(JW_DTYPE_FLOAT32, row, any_outer)));
  const std::array<int64_t, 9> too_many{};
  CHECK_THROWS_AS(make_tensor_meta(JW_DTYPE_FLOAT32, too_many), Error);
}
