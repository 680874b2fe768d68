// compare.cpp — exact and dtype-aware comparisons (see compare.hpp).
#include "compare.hpp"

#include <jitwarm/jitwarm.hpp>
#include <jitwarm/plugin/float16.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace jitwarm::conformance {
namespace {

using device_args::Buffer;
using device_args::Comparison;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

template <typename T>
T load(std::span<const unsigned char> bytes, int64_t index) {
  T value;
  std::memcpy(&value,
              bytes.data() + static_cast<std::size_t>(index) * sizeof(T),
              sizeof(T));
  return value;
}

// An element of any dtype, widened: integers exactly (in 128 bits),
// floats as double, and the raw bits of 16-bit floats for ulp distances.
struct Widened {
  bool is_float = false;
  __int128 integer = 0;
  double real = 0;
  uint64_t bits = 0;
};

Widened widen(jw_dtype dtype, std::span<const unsigned char> bytes,
              int64_t index) {
  Widened w;
  switch (dtype) {
    case JW_DTYPE_BOOL:
    case JW_DTYPE_UINT8: w.integer = load<uint8_t>(bytes, index); break;
    case JW_DTYPE_INT8: w.integer = load<int8_t>(bytes, index); break;
    case JW_DTYPE_INT16: w.integer = load<int16_t>(bytes, index); break;
    case JW_DTYPE_UINT16: w.integer = load<uint16_t>(bytes, index); break;
    case JW_DTYPE_INT32: w.integer = load<int32_t>(bytes, index); break;
    case JW_DTYPE_UINT32: w.integer = load<uint32_t>(bytes, index); break;
    case JW_DTYPE_INT64: w.integer = load<int64_t>(bytes, index); break;
    case JW_DTYPE_UINT64: w.integer = load<uint64_t>(bytes, index); break;
    case JW_DTYPE_FLOAT16:
      w.is_float = true;
      w.bits = load<uint16_t>(bytes, index);
      w.real = numeric::float16_bits_to_double(static_cast<uint16_t>(w.bits));
      break;
    case JW_DTYPE_BFLOAT16:
      w.is_float = true;
      w.bits = load<uint16_t>(bytes, index);
      w.real = numeric::bfloat16_bits_to_double(static_cast<uint16_t>(w.bits));
      break;
    case JW_DTYPE_FLOAT32: {
      w.is_float = true;
      const auto value = load<float>(bytes, index);
      w.bits = std::bit_cast<uint32_t>(value);
      w.real = value;
      break;
    }
    case JW_DTYPE_FLOAT64: {
      w.is_float = true;
      const auto value = load<double>(bytes, index);
      w.bits = std::bit_cast<uint64_t>(value);
      w.real = value;
      break;
    }
    default:
      throw std::invalid_argument(fmt::format("compare: unsupported dtype {}",
                                              static_cast<int>(dtype)));
  }
  return w;
}

std::string value_text(jw_dtype dtype, const Widened& w) {
  if (!w.is_float) return int128_to_string(w.integer);
  if (dtype == JW_DTYPE_FLOAT16 || dtype == JW_DTYPE_BFLOAT16) {
    return fmt::format("{:.6g} (0x{:04x})", w.real, w.bits);
  }
  if (dtype == JW_DTYPE_FLOAT32) {
    return fmt::format("{:.9g}", w.real);
  }
  return fmt::format("{:.17g}", w.real);
}

std::string position_text(const Buffer& buffer, int64_t index) {
  if (buffer.layout.size() == 2 && buffer.layout[1] > 0) {
    return fmt::format("[{}, {}]", index / buffer.layout[1],
                       index % buffer.layout[1]);
  }
  return fmt::format("[{}]", index);
}

uint64_t ulps_between(jw_dtype dtype, const Widened& a, const Widened& b) {
  switch (dtype) {
    case JW_DTYPE_FLOAT16:
      return numeric::ulp_distance_float16(static_cast<uint16_t>(a.bits),
                                           static_cast<uint16_t>(b.bits));
    case JW_DTYPE_BFLOAT16:
      return numeric::ulp_distance_bfloat16(static_cast<uint16_t>(a.bits),
                                            static_cast<uint16_t>(b.bits));
    case JW_DTYPE_FLOAT32:
      return numeric::ulp_distance_float32(static_cast<float>(a.real),
                                           static_cast<float>(b.real));
    case JW_DTYPE_FLOAT64: return numeric::ulp_distance_float64(a.real, b.real);
    default: return 0;
  }
}

bool uses_float_tolerance(const Buffer& buffer) {
  return buffer.comparison == Comparison::floating &&
         (buffer.dtype == JW_DTYPE_FLOAT32 ||
          buffer.dtype == JW_DTYPE_FLOAT16 ||
          buffer.dtype == JW_DTYPE_BFLOAT16 ||
          buffer.dtype == JW_DTYPE_FLOAT64);
}

// error / allowed for one float element under the buffer's rule.
double float_tolerance_ratio(jw_dtype dtype, const Widened& expected,
                             const Widened& actual, double abs_error,
                             uint64_t ulps) {
  const bool expected_nan = std::isnan(expected.real);
  const bool actual_nan = std::isnan(actual.real);
  if (expected_nan || actual_nan)
    return expected_nan && actual_nan ? 0 : kInfinity;
  if (std::isinf(expected.real) || std::isinf(actual.real)) {
    return expected.real == actual.real ? 0 : kInfinity;
  }
  switch (dtype) {
    case JW_DTYPE_FLOAT16:
    case JW_DTYPE_BFLOAT16:
      return static_cast<double>(ulps) /
             static_cast<double>(kHalfPrecisionUlpTolerance);
    case JW_DTYPE_FLOAT32:
      return abs_error / (kFloat32RelativeTolerance * std::fabs(expected.real) +
                          kFloat32AbsoluteFloor);
    default:
      return abs_error / (kFloat64RelativeTolerance * std::fabs(expected.real) +
                          kFloat64AbsoluteFloor);
  }
}

}  // namespace

std::string comparison_rule(const Buffer& buffer) {
  if (!uses_float_tolerance(buffer)) return "exact";
  switch (buffer.dtype) {
    case JW_DTYPE_FLOAT32:
      return fmt::format("|error| <= {:g} * |expected| + 2^-126",
                         kFloat32RelativeTolerance);
    case JW_DTYPE_FLOAT16:
    case JW_DTYPE_BFLOAT16:
      return fmt::format("within {} ulp of {}", kHalfPrecisionUlpTolerance,
                         dtype_name(buffer.dtype));
    default:
      return fmt::format("|error| <= {:g} * |expected| + 2^-1022",
                         kFloat64RelativeTolerance);
  }
}

BufferComparison compare_buffer(const Buffer& buffer,
                                std::span<const unsigned char> expected,
                                std::span<const unsigned char> actual) {
  if (expected.size() != buffer.bytes.size() ||
      actual.size() != buffer.bytes.size()) {
    throw std::invalid_argument(fmt::format(
        "compare {}: images of {} and {} bytes for a {}-byte buffer",
        buffer.name, expected.size(), actual.size(), buffer.bytes.size()));
  }
  BufferComparison result;
  result.buffer = buffer.name;
  result.dtype = buffer.dtype;
  result.rule = comparison_rule(buffer);
  result.elements = buffer.element_count();
  const bool tolerant = uses_float_tolerance(buffer);
  const std::size_t element_size = buffer.element_size();
  for (int64_t i = 0; i < result.elements; ++i) {
    const std::size_t offset = static_cast<std::size_t>(i) * element_size;
    const bool identical =
        std::memcmp(expected.data() + offset, actual.data() + offset,
                    element_size) == 0;
    // Exact comparisons look no further at equal elements; tolerant ones
    // still do, to keep the worst margin, but an identical element can be
    // the worst only while nothing else has been seen.
    if (identical && (!tolerant || result.worst.has_value())) continue;
    const Widened e = widen(buffer.dtype, expected, i);
    const Widened a = widen(buffer.dtype, actual, i);
    ElementReport report;
    report.index = i;
    if (e.is_float) {
      report.abs_error = std::fabs(a.real - e.real);
      report.ulp_error = ulps_between(buffer.dtype, e, a);
    } else {
      const __int128 difference = a.integer - e.integer;
      report.abs_error =
          static_cast<double>(difference < 0 ? -difference : difference);
    }
    if (std::isnan(report.abs_error)) report.abs_error = kInfinity;
    report.rel_error =
        e.is_float
            ? (e.real != 0 ? report.abs_error / std::fabs(e.real)
                           : (report.abs_error == 0 ? 0 : kInfinity))
            : (e.integer != 0 ? report.abs_error /
                                    std::fabs(static_cast<double>(e.integer))
                              : (report.abs_error == 0 ? 0 : kInfinity));
    report.tolerance_ratio =
        tolerant ? float_tolerance_ratio(buffer.dtype, e, a, report.abs_error,
                                         report.ulp_error)
                 : (identical ? 0 : kInfinity);
    const bool passed = identical || report.tolerance_ratio <= 1.0;
    const bool needs_text =
        !passed || !result.worst.has_value() ||
        report.tolerance_ratio > result.worst->tolerance_ratio ||
        (!tolerant && report.abs_error > result.worst->abs_error);
    if (!needs_text) continue;
    report.position = position_text(buffer, i);
    report.expected = value_text(buffer.dtype, e);
    report.actual = value_text(buffer.dtype, a);
    if (!passed) {
      ++result.mismatches;
      if (!result.first_mismatch) result.first_mismatch = report;
    }
    const bool worse =
        !result.worst.has_value() ||
        (tolerant ? report.tolerance_ratio > result.worst->tolerance_ratio
                  : report.abs_error > result.worst->abs_error);
    if (worse && (tolerant || !passed)) result.worst = report;
  }
  return result;
}

}  // namespace jitwarm::conformance
