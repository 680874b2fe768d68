// Tests for jitwarm/plugin/float16.hpp (the plugin SDK): float16 and
// bfloat16 conversions (round to nearest even, subnormals, overflow, NaN) and
// ulp distances.
// The exhaustive cases walk all 65536 bit patterns of each format.
#include <jitwarm/plugin/float16.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace {

using namespace jitwarm::numeric;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An independent decoder (ldexp instead of bit assembly) for the exhaustive
// comparisons.
double decode_with_ldexp(uint16_t bits, int exponent_bits, int mantissa_bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int exponent_field =
      (bits >> mantissa_bits) & ((1 << exponent_bits) - 1);
  const int fraction = bits & ((1 << mantissa_bits) - 1);
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent_field == (1 << exponent_bits) - 1) {
    return fraction == 0 ? sign * kInf : kNaN;
  }
  if (exponent_field == 0) {
    return sign * std::ldexp(fraction, 1 - bias - mantissa_bits);
  }
  return sign * std::ldexp(fraction + (1 << mantissa_bits),
                           exponent_field - bias - mantissa_bits);
}

// The common bit trick for float -> bfloat16 (round to nearest even on the
// raw bits; valid for every non-NaN float), as a second opinion.
uint16_t bfloat16_by_bit_trick(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

TEST_CASE(
    "given well-known float16 values, when converted from float, then the "
    "bit patterns are the IEEE ones") {
  CHECK(float16_bits_from_float(1.0f) == 0x3C00);
  CHECK(float16_bits_from_float(-2.0f) == 0xC000);
  CHECK(float16_bits_from_float(0.5f) == 0x3800);
  CHECK(float16_bits_from_float(65504.0f) == 0x7BFF);  // largest finite
  CHECK(float16_bits_from_float(0.0f) == 0x0000);
  CHECK(float16_bits_from_float(-0.0f) == 0x8000);
  CHECK(float16_bits_from_double(kInf) == 0x7C00);
  CHECK(float16_bits_from_double(-kInf) == 0xFC00);
  CHECK(float16_bits_from_double(std::ldexp(1.0, -14)) ==
        0x0400);  // min normal
  CHECK(float16_bits_from_double(std::ldexp(1.0, -24)) ==
        0x0001);  // min subnormal
  CHECK(float16_bits_from_double(std::ldexp(1023.0, -24)) == 0x03FF);
}

TEST_CASE(
    "given values between two float16 numbers, when rounded, then ties go "
    "to the even pattern and everything else to the nearest") {
  // 1 + 2^-11 lies halfway between 1 (even) and 1 + 2^-10.
  CHECK(float16_bits_from_double(1.0 + std::ldexp(1.0, -11)) == 0x3C00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  CHECK(float16_bits_from_double(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3C02);
  CHECK(float16_bits_from_double(1.0 + std::ldexp(1.0, -11) + 1e-12) == 0x3C01);
  // 65520 is halfway between 65504 and 2^16: ties to even -> overflow.
  CHECK(float16_bits_from_double(65520.0) == 0x7C00);
  CHECK(float16_bits_from_double(65519.99) == 0x7BFF);
  // Half the smallest subnormal ties to zero; a hair above rounds up.
  CHECK(float16_bits_from_double(std::ldexp(1.0, -25)) == 0x0000);
  CHECK(float16_bits_from_double(std::ldexp(1.0, -25) * (1 + 1e-9)) == 0x0001);
  CHECK(float16_bits_from_double(-std::ldexp(1.0, -26)) == 0x8000);
  // The largest subnormal rounds up into the smallest normal.
  CHECK(float16_bits_from_double(std::ldexp(1023.75, -24)) == 0x0400);
  // Double subnormals become signed zeros.
  CHECK(float16_bits_from_double(std::numeric_limits<double>::denorm_min()) ==
        0x0000);
}

TEST_CASE(
    "given NaN, when converted to float16 or bfloat16, then the result is a "
    "NaN with the sign kept and never an infinity") {
  const uint16_t half_nan = float16_bits_from_double(kNaN);
  CHECK(float16_bits_is_nan(half_nan));
  CHECK(float16_bits_is_nan(float16_bits_from_double(-kNaN)));
  CHECK((float16_bits_from_double(-kNaN) & 0x8000) != 0);
  // A NaN whose payload lives only in the low bits must stay a NaN.
  const float low_payload_nan = std::bit_cast<float>(0x7F800001u);
  REQUIRE(std::isnan(low_payload_nan));
  CHECK(float16_bits_is_nan(float16_bits_from_float(low_payload_nan)));
  CHECK(bfloat16_bits_is_nan(bfloat16_bits_from_float(low_payload_nan)));
  CHECK(std::isnan(float16_bits_to_float(0x7E00)));
  CHECK(std::isnan(bfloat16_bits_to_float(0x7FC0)));
}

TEST_CASE(
    "given every float16 bit pattern, when widened, then the value equals an "
    "independent ldexp decoding and narrowing gives the pattern back") {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto pattern = static_cast<uint16_t>(bits);
    const double widened = float16_bits_to_double(pattern);
    const double expected = decode_with_ldexp(pattern, 5, 10);
    INFO("pattern ", bits);
    if (std::isnan(expected)) {
      CHECK(std::isnan(widened));
      CHECK(float16_bits_is_nan(float16_bits_from_double(widened)));
      continue;
    }
    CHECK(widened == expected);
    CHECK(std::signbit(widened) == std::signbit(expected));
    CHECK(float16_bits_to_float(pattern) == static_cast<float>(expected));
    CHECK(float16_bits_from_double(widened) == pattern);
    CHECK(float16_bits_from_float(static_cast<float>(widened)) == pattern);
  }
}

TEST_CASE(
    "given every pair of neighbouring float16 values, when their midpoint "
    "and its neighbours are rounded, then ties go to even and the rest to "
    "the nearer value") {
  // Positive finite patterns; 0x7BFF's upper neighbour is 2^16 (infinity).
  for (uint16_t low = 0; low < 0x7C00; ++low) {
    const uint16_t high = static_cast<uint16_t>(low + 1);
    const double low_value = float16_bits_to_double(low);
    const double high_value =
        high == 0x7C00 ? 65536.0 : float16_bits_to_double(high);
    const double midpoint = (low_value + high_value) / 2;  // exact in double
    const uint16_t even = (low & 1) == 0 ? low : high;
    INFO("between patterns ", low, " and ", high);
    CHECK(float16_bits_from_double(midpoint) == even);
    CHECK(float16_bits_from_double(std::nextafter(midpoint, 0.0)) == low);
    CHECK(float16_bits_from_double(std::nextafter(midpoint, kInf)) == high);
    CHECK(float16_bits_from_double(-midpoint) == (even | 0x8000));
  }
}

TEST_CASE(
    "given every bfloat16 bit pattern, when widened, then the value equals "
    "an independent decoding and narrowing gives the pattern back") {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto pattern = static_cast<uint16_t>(bits);
    const double expected = decode_with_ldexp(pattern, 8, 7);
    const float widened = bfloat16_bits_to_float(pattern);
    INFO("pattern ", bits);
    if (std::isnan(expected)) {
      CHECK(std::isnan(widened));
      continue;
    }
    CHECK(static_cast<double>(widened) == expected);
    CHECK(bfloat16_bits_to_double(pattern) == expected);
    CHECK(bfloat16_bits_from_float(widened) == pattern);
    CHECK(bfloat16_bits_from_double(expected) == pattern);
  }
}

TEST_CASE(
    "given every pair of neighbouring bfloat16 values, when their midpoint "
    "and its neighbours are rounded, then ties go to even and the rest to "
    "the nearer value") {
  for (uint16_t low = 0; low < 0x7F80; ++low) {
    const uint16_t high = static_cast<uint16_t>(low + 1);
    const double low_value = bfloat16_bits_to_double(low);
    const double high_value =
        high == 0x7F80 ? std::ldexp(1.0, 128) : bfloat16_bits_to_double(high);
    const double midpoint = (low_value + high_value) / 2;
    const uint16_t even = (low & 1) == 0 ? low : high;
    INFO("between patterns ", low, " and ", high);
    CHECK(bfloat16_bits_from_double(midpoint) == even);
    CHECK(bfloat16_bits_from_double(std::nextafter(midpoint, 0.0)) == low);
    CHECK(bfloat16_bits_from_double(std::nextafter(midpoint, kInf)) == high);
  }
}

TEST_CASE(
    "given a sweep of float bit patterns, when converted to bfloat16, then "
    "the result matches the round-to-nearest-even bit trick") {
  uint64_t checked = 0;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093) {
    const float value = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(value)) continue;
    INFO("float bits ", bits);
    CHECK(bfloat16_bits_from_float(value) == bfloat16_by_bit_trick(value));
    ++checked;
  }
  CHECK(checked > 1000000);
}

TEST_CASE(
    "given float16 and bfloat16 value types, when round-tripped through "
    "float, then values that fit are exact and round_to_* agrees") {
  CHECK(Float16::from_float(0.375f).to_float() == 0.375f);
  CHECK(BFloat16::from_float(-3.5f).to_float() == -3.5f);
  CHECK(Float16::from_double(0.1).to_double() == round_to_float16(0.1));
  CHECK(round_to_float16(0.1) == 0.0999755859375);
  CHECK(round_to_bfloat16(0.1) == 0.10009765625);
  CHECK(round_to_float16(1e6) == kInf);
  CHECK(round_to_bfloat16(1e6) == 999424.0);
}

TEST_CASE(
    "given neighbouring, equal, signed-zero and NaN values, when their ulp "
    "distance is taken, then it counts representable steps") {
  CHECK(ulp_distance_float16(0x3C00, 0x3C01) == 1);
  CHECK(ulp_distance_float16(0x3C01, 0x3C00) == 1);
  CHECK(ulp_distance_float16(0x3C00, 0x3C00) == 0);
  CHECK(ulp_distance_float16(0x0000, 0x8000) == 0);  // +0 and -0
  CHECK(ulp_distance_float16(0x0001, 0x8001) == 2);  // across zero
  CHECK(ulp_distance_float16(0x7BFF, 0x7C00) == 1);  // max finite to inf
  CHECK(ulp_distance_float16(0x7E00, 0x7E01) == 0);  // two NaNs
  CHECK(ulp_distance_float16(0x7E00, 0x3C00) == kNanUlpDistance);
  CHECK(ulp_distance(Float16::from_float(1.0f), Float16::from_float(2.0f)) ==
        1024);
  CHECK(ulp_distance_bfloat16(0x3F80, 0x3F81) == 1);
  CHECK(ulp_distance(BFloat16::from_float(1.0f), BFloat16::from_float(2.0f)) ==
        128);
  CHECK(ulp_distance_bfloat16(0x0001, 0x8001) == 2);
  CHECK(ulp_distance_float32(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
  CHECK(ulp_distance_float32(-0.0f, 0.0f) == 0);
  CHECK(ulp_distance_float32(1.0f, 2.0f) == (1u << 23));
  CHECK(ulp_distance_float32(std::nanf(""), 1.0f) == kNanUlpDistance);
  CHECK(ulp_distance_float64(1.0, std::nextafter(1.0, 0.0)) == 1);
  CHECK(ulp_distance_float64(-std::numeric_limits<double>::max(),
                             std::numeric_limits<double>::max()) ==
        2 * 0x7FEFFFFFFFFFFFFFull);
}

}  // namespace
