// Tests of tools/conformance/compare: exact comparisons, the float32
// relative tolerance and its absolute floor, one ulp for float16/bfloat16,
// and the worst-error report.
#include <jitwarm/plugin/float16.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "compare.hpp"

namespace da = jitwarm::device_args;
namespace jc = jitwarm::conformance;

namespace {

template <typename T>
da::Buffer buffer_of(jw_dtype dtype, const std::vector<T>& values,
                     da::Comparison comparison,
                     std::vector<int64_t> layout = {}) {
  da::Buffer b;
  b.name = "out";
  b.dtype = dtype;
  b.bytes = da::to_bytes(values);
  b.comparison = comparison;
  b.layout = std::move(layout);
  return b;
}

template <typename T>
jc::BufferComparison compare(
    jw_dtype dtype, const std::vector<T>& expected,
    const std::vector<T>& actual,
    da::Comparison comparison = da::Comparison::floating,
    std::vector<int64_t> layout = {}) {
  const da::Buffer b = buffer_of(dtype, expected, comparison, layout);
  return jc::compare_buffer(b, da::to_bytes(expected), da::to_bytes(actual));
}

uint16_t bf16(float v) {
  return jitwarm::numeric::bfloat16_bits_from_float(v);
}

}  // namespace

TEST_CASE(
    "given equal integers, then the exact comparison passes and reports no "
    "worst error") {
  const auto r = compare<int32_t>(JW_DTYPE_INT32, {1, 2, 3}, {1, 2, 3},
                                  da::Comparison::exact);
  CHECK(r.passed());
  CHECK(r.elements == 3);
  CHECK_FALSE(r.worst.has_value());
  CHECK(r.rule == "exact");
}

TEST_CASE(
    "given integers that differ, then the first mismatch and the largest "
    "difference are reported") {
  const auto r = compare<int64_t>(JW_DTYPE_INT64, {10, 20, 30, 40},
                                  {10, 21, 30, -60}, da::Comparison::exact);
  CHECK_FALSE(r.passed());
  CHECK(r.mismatches == 2);
  REQUIRE(r.first_mismatch.has_value());
  CHECK(r.first_mismatch->index == 1);
  REQUIRE(r.worst.has_value());
  CHECK(r.worst->index == 3);
  CHECK(r.worst->abs_error == 100);
  CHECK(r.worst->expected == "40");
  CHECK(r.worst->actual == "-60");
}

TEST_CASE(
    "given float32 within 1e-5 relative, then it passes and the worst margin "
    "is still reported") {
  const float x = 1000.0f;
  const float close = std::nextafter(std::nextafter(x, 2000.0f), 2000.0f);
  const auto r = compare<float>(JW_DTYPE_FLOAT32, {1.0f, x}, {1.0f, close});
  CHECK(r.passed());
  REQUIRE(r.worst.has_value());
  CHECK(r.worst->index == 1);
  CHECK(r.worst->ulp_error == 2);
  CHECK(r.worst->tolerance_ratio > 0);
  CHECK(r.worst->tolerance_ratio < 1);
}

TEST_CASE("given float32 off by 2e-5 relative, then it fails") {
  const auto r =
      compare<float>(JW_DTYPE_FLOAT32, {1.0f, 2.0f}, {1.0f, 2.00004f});
  CHECK_FALSE(r.passed());
  CHECK(r.mismatches == 1);
  REQUIRE(r.worst.has_value());
  CHECK(r.worst->index == 1);
  CHECK(r.worst->rel_error == doctest::Approx(2e-5).epsilon(0.01));
}

TEST_CASE(
    "given a subnormal float32 flushed to zero, then the absolute floor "
    "accepts it, and nothing larger") {
  const float subnormal = std::numeric_limits<float>::denorm_min() * 1000;
  CHECK(compare<float>(JW_DTYPE_FLOAT32, {subnormal}, {0.0f}).passed());
  CHECK_FALSE(compare<float>(JW_DTYPE_FLOAT32, {0.0f}, {1e-30f}).passed());
}

TEST_CASE(
    "given NaNs and infinities, then NaN matches NaN and infinity only "
    "itself") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(compare<float>(JW_DTYPE_FLOAT32, {nan, inf}, {nan, inf}).passed());
  CHECK_FALSE(compare<float>(JW_DTYPE_FLOAT32, {1.0f}, {nan}).passed());
  CHECK_FALSE(compare<float>(JW_DTYPE_FLOAT32, {inf}, {-inf}).passed());
  CHECK_FALSE(compare<float>(JW_DTYPE_FLOAT32, {3.0e38f}, {inf}).passed());
}

TEST_CASE(
    "given bfloat16 one ulp apart, then it passes; two ulps apart, then it "
    "fails at [row, column]") {
  const uint16_t one = bf16(1.5f);
  const auto pass = compare<uint16_t>(JW_DTYPE_BFLOAT16, {one, one},
                                      {one, static_cast<uint16_t>(one + 1)});
  CHECK(pass.passed());
  REQUIRE(pass.worst.has_value());
  CHECK(pass.worst->ulp_error == 1);

  const auto fail =
      compare<uint16_t>(JW_DTYPE_BFLOAT16, {one, one, one, one},
                        {one, one, one, static_cast<uint16_t>(one + 2)},
                        da::Comparison::floating, {2, 2});
  CHECK_FALSE(fail.passed());
  REQUIRE(fail.worst.has_value());
  CHECK(fail.worst->position == "[1, 1]");
  CHECK(fail.worst->ulp_error == 2);
  CHECK(fail.rule == "within 1 ulp of bfloat16");
}

TEST_CASE("given float16 across zero, then ulps count both sides") {
  using jitwarm::numeric::float16_bits_from_float;
  const uint16_t tiny = 0x0001;  // the smallest positive subnormal
  const uint16_t minus_tiny = 0x8001;
  const auto r = compare<uint16_t>(JW_DTYPE_FLOAT16, {tiny}, {minus_tiny});
  CHECK_FALSE(r.passed());
  CHECK(r.worst->ulp_error == 2);
  CHECK(compare<uint16_t>(JW_DTYPE_FLOAT16, {float16_bits_from_float(0.0f)},
                          {0x8000})
            .passed());
}

TEST_CASE("given floats compared exactly, then any bit difference fails") {
  const auto r =
      compare<float>(JW_DTYPE_FLOAT32, {1.0f}, {std::nextafter(1.0f, 2.0f)},
                     da::Comparison::exact);
  CHECK_FALSE(r.passed());
  CHECK(r.rule == "exact");
}

TEST_CASE("given images of the wrong size, then the comparison refuses them") {
  const da::Buffer b =
      buffer_of<int32_t>(JW_DTYPE_INT32, {1, 2}, da::Comparison::exact);
  const std::vector<unsigned char> short_image(4);
  CHECK_THROWS_AS(jc::compare_buffer(b, b.bytes, short_image),
                  std::invalid_argument);
}
