// compare.hpp — judging a buffer the platform under test wrote against the
// one the CPU reference wrote.
//
// Owns the tolerances, stated once here:
//  - exact (integers, copies, every byte of a copy kernel): bit-identical.
//  - float32: |actual - expected| <= 1e-5 * |expected| + 2^-126. The
//    relative part is docs/kernels.md's ("Floating point"); the absolute floor
//    is the smallest normal float32: below it float32 has fewer than 24
//    significant bits, so a relative bound means nothing there, and a device
//    that flushes subnormal results to zero (FTZ, the default of fast-math
//    builds) differs from the reference by less than it. Inputs are never
//    subnormal (device_args/case_model.hpp), so the floor hides nothing else.
//  - float16 and bfloat16: within one unit in the last place of the output
//    dtype (both sides round a float32 result once; they may round it from
//    slightly different float32 values).
//  - float64 (no kernel computes in it; for completeness): relative 1e-12
//    plus the smallest normal double.
// NaN matches NaN; infinities match only themselves.
//
// A comparison reports how many elements missed, the first that did, and
// the worst element (largest error relative to its tolerance) with its
// index, both values, and its absolute, relative and ulp errors: for
// floats also when everything passed, so a report shows the margin.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "case_model.hpp"

namespace jitwarm::conformance {

inline constexpr double kFloat32RelativeTolerance = 1e-5;
inline constexpr double kFloat32AbsoluteFloor = 0x1p-126;
inline constexpr uint64_t kHalfPrecisionUlpTolerance = 1;
inline constexpr double kFloat64RelativeTolerance = 1e-12;
inline constexpr double kFloat64AbsoluteFloor = 0x1p-1022;

struct ElementReport {
  int64_t index = 0;     // element index in the buffer's storage
  std::string position;  // "[row, column]" (buffer layout) or "[index]"
  std::string expected;  // the reference's value, as text
  std::string actual;
  double abs_error = 0;
  double rel_error = 0;    // abs_error / |expected| (inf for expected 0)
  uint64_t ulp_error = 0;  // floats: ulps of the buffer's dtype
  // abs_error over what the tolerance allows: <= 1 passes. Exact
  // comparisons: 0 when equal, infinity otherwise.
  double tolerance_ratio = 0;
};

struct BufferComparison {
  std::string buffer;  // the parameter (or memory) name
  jw_dtype dtype = JW_DTYPE_INVALID;
  std::string rule;  // the tolerance in words
  int64_t elements = 0;
  int64_t mismatches = 0;
  std::optional<ElementReport> first_mismatch;
  // The element furthest from passing: always for float tolerances (when
  // there are elements); for exact comparisons only when one differs, then
  // the largest difference.
  std::optional<ElementReport> worst;
  bool passed() const { return mismatches == 0; }
};

// Compares two images of `buffer`'s storage. The images must have the
// buffer's size (std::invalid_argument otherwise).
BufferComparison compare_buffer(const device_args::Buffer& buffer,
                                std::span<const unsigned char> expected,
                                std::span<const unsigned char> actual);

// The rule compare_buffer applies to a buffer, in words.
std::string comparison_rule(const device_args::Buffer& buffer);

}  // namespace jitwarm::conformance
