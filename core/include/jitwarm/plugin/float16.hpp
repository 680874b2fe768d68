// jitwarm/plugin/float16.hpp — host-side IEEE binary16 ("float16") and
// bfloat16 numbers: conversions to and from float/double, and ulp distances
// for tolerance checks. Part of the plugin SDK (jitwarm/plugin.hpp), and
// used as well by the conformance runner and the tests.
//
// Owns: the bit-exact rounding rules every host-side user of 16-bit floats
// shares (the CPU reference kernels, the conformance runner's comparisons,
// test input generators). Conversions to the 16-bit formats round to nearest,
// ties to even, exactly once; subnormals are produced and read correctly;
// overflow gives infinity; NaN stays NaN (quiet, sign and top payload bits
// kept). Widening to float or double is exact.
//
// Header-only and dependency-free (standard library only) so any target can
// include it without linking anything. It must not depend on jitwarm.h: the
// dtype-to-type mapping is dtype.hpp's.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

namespace jitwarm::numeric {

namespace detail {

// Rounds a double to a binary floating-point format with `kExponentBits`
// exponent bits and `kMantissaBits` stored fraction bits (IEEE layout: sign,
// biased exponent, fraction), returning its bit pattern. One rounding step,
// nearest-even, straight from the double, so converting a float (which a
// double holds exactly) is also correctly rounded.
template <int kExponentBits, int kMantissaBits>
constexpr uint16_t narrow_from_double(double value) {
  static_assert(1 + kExponentBits + kMantissaBits <= 16);
  static_assert(kMantissaBits >= 1 && kMantissaBits < 52);
  constexpr int kBias = (1 << (kExponentBits - 1)) - 1;
  constexpr int kMinNormalExponent = 1 - kBias;
  constexpr uint64_t kInfinityBits = ((uint64_t{1} << kExponentBits) - 1)
                                     << kMantissaBits;
  constexpr uint64_t kQuietBit = uint64_t{1} << (kMantissaBits - 1);

  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const uint64_t sign = (bits >> 63) << (kExponentBits + kMantissaBits);
  const int raw_exponent = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);

  if (raw_exponent == 0x7FF) {
    if (fraction == 0) return static_cast<uint16_t>(sign | kInfinityBits);
    // NaN: keep the top payload bits and force it quiet, so a NaN never
    // turns into an infinity by losing its low payload bits.
    const uint64_t payload = fraction >> (52 - kMantissaBits);
    return static_cast<uint16_t>(sign | kInfinityBits | kQuietBit | payload);
  }
  // Zero, or a double subnormal: both lie far below half the smallest
  // subnormal of any 16-bit format, so they round to a signed zero.
  if (raw_exponent == 0) return static_cast<uint16_t>(sign);

  const int exponent = raw_exponent - 1023;
  if (exponent > kBias) return static_cast<uint16_t>(sign | kInfinityBits);

  // value = significand * 2^(exponent - 52). The target keeps multiples of
  // 2^quantum_exponent: kMantissaBits fraction bits below the leading one
  // for normals, a fixed quantum for subnormals.
  const uint64_t significand = fraction | (uint64_t{1} << 52);
  const int quantum_exponent =
      std::max(exponent, kMinNormalExponent) - kMantissaBits;
  const int shift = quantum_exponent - (exponent - 52);
  // significand < 2^53 <= half the quantum: rounds to zero.
  if (shift >= 54) return static_cast<uint16_t>(sign);

  uint64_t rounded = significand >> shift;
  const uint64_t remainder = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (rounded & 1) != 0)) {
    ++rounded;
  }
  // For normals `rounded` carries the implicit leading one at bit
  // kMantissaBits, so adding it to (biased exponent - 1) sets the exponent
  // field; a carry out of the fraction (rounding up to the next power of
  // two, or from the largest subnormal to the smallest normal) bumps the
  // exponent by itself.
  const uint64_t biased_exponent_minus_one =
      exponent < kMinNormalExponent
          ? 0
          : static_cast<uint64_t>(exponent + kBias - 1);
  const uint64_t magnitude =
      (biased_exponent_minus_one << kMantissaBits) + rounded;
  if (magnitude >= kInfinityBits) {
    return static_cast<uint16_t>(sign | kInfinityBits);
  }
  return static_cast<uint16_t>(sign | magnitude);
}

// The exact double value of a 16-bit pattern in the same layout.
template <int kExponentBits, int kMantissaBits>
constexpr double widen_to_double(uint16_t bits) {
  constexpr int kBias = (1 << (kExponentBits - 1)) - 1;
  constexpr uint32_t kExponentMask = (1u << kExponentBits) - 1;
  constexpr uint32_t kFractionMask = (1u << kMantissaBits) - 1;

  const uint64_t sign = static_cast<uint64_t>(bits >> 15) << 63;
  const uint32_t exponent_field = (bits >> kMantissaBits) & kExponentMask;
  uint64_t fraction = bits & kFractionMask;

  if (exponent_field == kExponentMask) {
    // Infinity, or NaN with its payload moved to the top of the double's.
    return std::bit_cast<double>(sign | (uint64_t{0x7FF} << 52) |
                                 (fraction << (52 - kMantissaBits)));
  }
  int exponent = 0;
  if (exponent_field == 0) {
    if (fraction == 0) return std::bit_cast<double>(sign);
    // Subnormal: normalize so the leading one becomes the implicit bit.
    const int leading = std::countl_zero(fraction) - (64 - kMantissaBits);
    fraction = (fraction << (leading + 1)) & kFractionMask;
    exponent = 1 - kBias - (leading + 1);
  } else {
    exponent = static_cast<int>(exponent_field) - kBias;
  }
  return std::bit_cast<double>(sign |
                               (static_cast<uint64_t>(exponent + 1023) << 52) |
                               (fraction << (52 - kMantissaBits)));
}

// Maps a sign-magnitude bit pattern onto a line where neighbouring
// representable values differ by one (+0 and -0 both map to 0).
constexpr int64_t ordered_position(uint64_t bits, int sign_bit) {
  const uint64_t magnitude = bits & ((uint64_t{1} << sign_bit) - 1);
  const bool negative = ((bits >> sign_bit) & 1) != 0;
  return negative ? -static_cast<int64_t>(magnitude)
                  : static_cast<int64_t>(magnitude);
}

constexpr uint64_t position_distance(int64_t a, int64_t b) {
  return a >= b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
}

}  // namespace detail

// Field widths of the two 16-bit formats.
inline constexpr int kFloat16ExponentBits = 5;
inline constexpr int kFloat16MantissaBits = 10;
inline constexpr int kBFloat16ExponentBits = 8;
inline constexpr int kBFloat16MantissaBits = 7;

// ---------------------------------------------------------------------------
// Bit-pattern conversions
// ---------------------------------------------------------------------------
constexpr uint16_t float16_bits_from_double(double value) {
  return detail::narrow_from_double<kFloat16ExponentBits, kFloat16MantissaBits>(
      value);
}
// A float widens to double exactly, so this too rounds only once.
constexpr uint16_t float16_bits_from_float(float value) {
  return float16_bits_from_double(static_cast<double>(value));
}
constexpr double float16_bits_to_double(uint16_t bits) {
  return detail::widen_to_double<kFloat16ExponentBits, kFloat16MantissaBits>(
      bits);
}
// Every float16 value is a float, so this is exact.
constexpr float float16_bits_to_float(uint16_t bits) {
  return static_cast<float>(float16_bits_to_double(bits));
}

constexpr uint16_t bfloat16_bits_from_double(double value) {
  return detail::narrow_from_double<kBFloat16ExponentBits,
                                    kBFloat16MantissaBits>(value);
}
constexpr uint16_t bfloat16_bits_from_float(float value) {
  return bfloat16_bits_from_double(static_cast<double>(value));
}
// bfloat16 is the top half of a float: widening is a shift.
constexpr float bfloat16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}
constexpr double bfloat16_bits_to_double(uint16_t bits) {
  return static_cast<double>(bfloat16_bits_to_float(bits));
}

// ---------------------------------------------------------------------------
// Value types: two bytes, trivially copyable, the layout a device uses, so a
// host buffer of them can be copied to and from a device tensor as is.
// ---------------------------------------------------------------------------
struct Float16 {
  uint16_t bits = 0;

  static constexpr Float16 from_bits(uint16_t raw) { return Float16{raw}; }
  static constexpr Float16 from_float(float value) {
    return Float16{float16_bits_from_float(value)};
  }
  static constexpr Float16 from_double(double value) {
    return Float16{float16_bits_from_double(value)};
  }
  constexpr float to_float() const { return float16_bits_to_float(bits); }
  constexpr double to_double() const { return float16_bits_to_double(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;

  static constexpr BFloat16 from_bits(uint16_t raw) { return BFloat16{raw}; }
  static constexpr BFloat16 from_float(float value) {
    return BFloat16{bfloat16_bits_from_float(value)};
  }
  static constexpr BFloat16 from_double(double value) {
    return BFloat16{bfloat16_bits_from_double(value)};
  }
  constexpr float to_float() const { return bfloat16_bits_to_float(bits); }
  constexpr double to_double() const { return bfloat16_bits_to_double(bits); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

// The value a double becomes when stored in the format (handy for building
// expected results: "the exact answer, rounded once").
constexpr double round_to_float16(double value) {
  return float16_bits_to_double(float16_bits_from_double(value));
}
constexpr double round_to_bfloat16(double value) {
  return bfloat16_bits_to_double(bfloat16_bits_from_double(value));
}

// Classification on bit patterns.
constexpr bool float16_bits_is_nan(uint16_t bits) {
  return (bits & 0x7C00u) == 0x7C00u && (bits & 0x03FFu) != 0;
}
constexpr bool bfloat16_bits_is_nan(uint16_t bits) {
  return (bits & 0x7F80u) == 0x7F80u && (bits & 0x007Fu) != 0;
}

// ---------------------------------------------------------------------------
// Units in the last place
//
// ulp_distance_* counts the representable values of the format between two
// numbers: 0 for equal values (+0 and -0 are equal), 1 for neighbours, and
// crossing zero counts the steps on both sides. For tolerance checks a NaN
// compares as follows: two NaNs are at distance 0 (an oracle NaN is matched
// by any NaN), a NaN and a number are at the largest distance.
// ---------------------------------------------------------------------------
inline constexpr uint64_t kNanUlpDistance =
    std::numeric_limits<uint64_t>::max();

constexpr uint64_t ulp_distance_float16(uint16_t a_bits, uint16_t b_bits) {
  const bool a_nan = float16_bits_is_nan(a_bits);
  const bool b_nan = float16_bits_is_nan(b_bits);
  if (a_nan || b_nan) return a_nan && b_nan ? 0 : kNanUlpDistance;
  return detail::position_distance(detail::ordered_position(a_bits, 15),
                                   detail::ordered_position(b_bits, 15));
}
constexpr uint64_t ulp_distance(Float16 a, Float16 b) {
  return ulp_distance_float16(a.bits, b.bits);
}

constexpr uint64_t ulp_distance_bfloat16(uint16_t a_bits, uint16_t b_bits) {
  const bool a_nan = bfloat16_bits_is_nan(a_bits);
  const bool b_nan = bfloat16_bits_is_nan(b_bits);
  if (a_nan || b_nan) return a_nan && b_nan ? 0 : kNanUlpDistance;
  return detail::position_distance(detail::ordered_position(a_bits, 15),
                                   detail::ordered_position(b_bits, 15));
}
constexpr uint64_t ulp_distance(BFloat16 a, BFloat16 b) {
  return ulp_distance_bfloat16(a.bits, b.bits);
}

constexpr uint64_t ulp_distance_float32(float a, float b) {
  const bool a_nan = a != a;
  const bool b_nan = b != b;
  if (a_nan || b_nan) return a_nan && b_nan ? 0 : kNanUlpDistance;
  return detail::position_distance(
      detail::ordered_position(std::bit_cast<uint32_t>(a), 31),
      detail::ordered_position(std::bit_cast<uint32_t>(b), 31));
}
constexpr uint64_t ulp_distance(float a, float b) {
  return ulp_distance_float32(a, b);
}

constexpr uint64_t ulp_distance_float64(double a, double b) {
  const bool a_nan = a != a;
  const bool b_nan = b != b;
  if (a_nan || b_nan) return a_nan && b_nan ? 0 : kNanUlpDistance;
  // Positions lie in (-2^63, 2^63), so their distance fits in 64 unsigned
  // bits and position_distance's wrap-around arithmetic is exact.
  return detail::position_distance(
      detail::ordered_position(std::bit_cast<uint64_t>(a), 63),
      detail::ordered_position(std::bit_cast<uint64_t>(b), 63));
}
constexpr uint64_t ulp_distance(double a, double b) {
  return ulp_distance_float64(a, b);
}

}  // namespace jitwarm::numeric
