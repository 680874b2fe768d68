// Tests for the float kernels of the CPU reference: rms_norm and
// silu_and_mul (docs/kernels.md, sections 9 and 10), against straightforward
// double-precision formulas within the stated tolerances: float32 relative
// 1e-5, float16 and bfloat16 within one unit in the last place.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "reference_test_support.hpp"

namespace {

using namespace jitwarm::reference_test;
using jitwarm::numeric::BFloat16;
using jitwarm::numeric::Float16;
namespace ks = jitwarm::kernel_set;
namespace numeric = jitwarm::numeric;

// Per dtype: how to make a stored value, read it back, and the tolerance.
template <typename T>
struct FloatType;
template <>
struct FloatType<float> {
  static constexpr const char* kSuffix = "fp32";
  static float from(double v) { return static_cast<float>(v); }
  static double value(float v) { return v; }
  // Relative 1e-5 (and an absolute floor far below any value the tests
  // produce, so an exact zero compares equal).
  static bool close(float actual, double exact) {
    return std::abs(actual - exact) <= 1e-5 * std::abs(exact) + 1e-30;
  }
};
template <>
struct FloatType<Float16> {
  static constexpr const char* kSuffix = "fp16";
  static Float16 from(double v) { return Float16::from_double(v); }
  static double value(Float16 v) { return v.to_double(); }
  // Within one ulp of the exact result rounded once to float16.
  static bool close(Float16 actual, double exact) {
    return numeric::ulp_distance(actual, Float16::from_double(exact)) <= 1;
  }
};
template <>
struct FloatType<BFloat16> {
  static constexpr const char* kSuffix = "bf16";
  static BFloat16 from(double v) { return BFloat16::from_double(v); }
  static double value(BFloat16 v) { return v.to_double(); }
  static bool close(BFloat16 actual, double exact) {
    return numeric::ulp_distance(actual, BFloat16::from_double(exact)) <= 1;
  }
};

template <typename T>
std::vector<T> random_values(std::size_t count, double low, double high,
                             uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> distribution(low, high);
  std::vector<T> values;
  for (std::size_t i = 0; i < count; ++i) {
    values.push_back(FloatType<T>::from(distribution(generator)));
  }
  return values;
}

// ---------------------------------------------------------------------------
// rms_norm
// ---------------------------------------------------------------------------

// x is [rows, width] with row stride `stride`; the cells between rows hold
// a large value, so reading them (a wrong stride) would change the result.
template <typename T>
void check_rms_norm(int64_t rows, int64_t width, int64_t stride, double eps,
                    uint32_t seed) {
  using F = FloatType<T>;
  INFO("dtype ", F::kSuffix, ", T ", rows, ", H ", width, ", x_stride ",
       stride);
  const std::vector<T> random = random_values<T>(
      static_cast<std::size_t>(rows * width + width), -4.0, 4.0, seed);
  std::vector<T> x_storage(
      rows == 0 ? 0 : static_cast<std::size_t>((rows - 1) * stride + width),
      F::from(1000.0));
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t h = 0; h < width; ++h) {
      x_storage[t * stride + h] = random[t * width + h];
    }
  }
  const std::vector<T> weight_values(random.end() - width, random.end());

  HostBuffer<T> out({rows, width},
                    std::vector<T>(rows * width, F::from(-77.0)));
  HostBuffer<T> x({rows, width}, {stride, 1}, x_storage);
  HostBuffer<T> weight({width}, weight_values);
  CHECK(run(ks::kRmsNorm, {out.arg(), x.arg(), int_arg(stride), weight.arg(),
                           float_arg(eps), int_arg(rows), int_arg(width)}) ==
        std::string("rms_norm<") + F::kSuffix + ">");

  for (int64_t t = 0; t < rows; ++t) {
    double sum_of_squares = 0;
    for (int64_t h = 0; h < width; ++h) {
      const double v = F::value(x_storage[t * stride + h]);
      sum_of_squares += v * v;
    }
    const double scale =
        1.0 / std::sqrt(sum_of_squares / static_cast<double>(width) + eps);
    for (int64_t h = 0; h < width; ++h) {
      const double exact = F::value(x_storage[t * stride + h]) * scale *
                           F::value(weight_values[h]);
      const T actual = out.values[t * width + h];
      INFO("row ", t, ", column ", h, ": got ", F::value(actual), ", exact ",
           exact);
      CHECK(F::close(actual, exact));
    }
  }
}

TEST_CASE(
    "given every float dtype, H in each specialization class (1, 16, 37) "
    "and x_stride in each class (1, 16, another value), when rms_norm runs, "
    "then every element is within tolerance of the double formula") {
  struct Layout {
    int64_t width, stride;
  };
  const Layout layouts[] = {{1, 1},   {1, 16},  {1, 5},  {16, 16},
                            {16, 19}, {37, 48}, {37, 40}};
  uint32_t seed = 1;
  for (const Layout& layout : layouts) {
    check_rms_norm<float>(5, layout.width, layout.stride, 1e-6, seed++);
    check_rms_norm<Float16>(5, layout.width, layout.stride, 1e-6, seed++);
    check_rms_norm<BFloat16>(5, layout.width, layout.stride, 1e-6, seed++);
  }
}

TEST_CASE(
    "given a large eps, when rms_norm runs, then eps enters the root as the "
    "formula says") {
  check_rms_norm<float>(3, 8, 8, 0.5, 101);
  check_rms_norm<BFloat16>(3, 8, 8, 2.0, 102);
}

TEST_CASE(
    "given an all-zero row and a one-element row, when rms_norm runs, then "
    "zeros stay zero and a single value normalizes to its sign times the "
    "weight") {
  HostBuffer<float> out({2, 1}, {-7.0f, -7.0f});
  HostBuffer<float> x({2, 1}, {0.0f, -3.0f});
  HostBuffer<float> weight({1}, {2.0f});
  run(ks::kRmsNorm, {out.arg(), x.arg(), int_arg(1), weight.arg(),
                     float_arg(0.0), int_arg(2), int_arg(1)});
  // Row 0: 0 * rsqrt(0 + 0) is NaN in IEEE arithmetic, as on a GPU.
  CHECK(std::isnan(out.values[0]));
  CHECK(out.values[1] == -2.0f);
  run(ks::kRmsNorm, {out.arg(), x.arg(), int_arg(1), weight.arg(),
                     float_arg(1e-6), int_arg(2), int_arg(1)});
  CHECK(out.values[0] == 0.0f);
}

TEST_CASE("given T = 0 or H = 0, when rms_norm runs, then nothing is written") {
  HostBuffer<Float16> out({2, 3},
                          std::vector<Float16>(6, Float16::from_bits(7)));
  HostBuffer<Float16> x({2, 3},
                        std::vector<Float16>(6, Float16::from_float(1)));
  HostBuffer<Float16> weight({3},
                             std::vector<Float16>(3, Float16::from_float(1)));
  run(ks::kRmsNorm, {out.arg(), x.arg(), int_arg(3), weight.arg(),
                     float_arg(1e-6), int_arg(0), int_arg(3)});
  for (const Float16 v : out.values) CHECK(v.bits == 7);
  HostBuffer<Float16> empty_out({2, 0}, {});
  HostBuffer<Float16> empty_x({2, 0}, {});
  HostBuffer<Float16> empty_weight({0}, {});
  CHECK(run(ks::kRmsNorm,
            {empty_out.arg(), empty_x.arg(), int_arg(0), empty_weight.arg(),
             float_arg(1e-6), int_arg(2), int_arg(0)}) == "rms_norm<fp16>");
}

TEST_CASE(
    "given out aliasing x, when rms_norm runs in place, then the result "
    "equals the out-of-place one") {
  const std::vector<float> values = random_values<float>(24, -2.0, 2.0, 7);
  HostBuffer<float> weight({8}, random_values<float>(8, 0.5, 1.5, 8));
  HostBuffer<float> separate_out({3, 8}, std::vector<float>(24, 0.0f));
  HostBuffer<float> x({3, 8}, values);
  run(ks::kRmsNorm, {separate_out.arg(), x.arg(), int_arg(8), weight.arg(),
                     float_arg(1e-5), int_arg(3), int_arg(8)});
  run(ks::kRmsNorm, {x.arg(), x.arg(), int_arg(8), weight.arg(),
                     float_arg(1e-5), int_arg(3), int_arg(8)});
  CHECK(x.values == separate_out.values);
  CHECK(x.values != values);
}

TEST_CASE(
    "given shapes that disagree with T, H or x_stride, when rms_norm runs, "
    "then it refuses naming the parameter") {
  HostBuffer<float> out({2, 4}, std::vector<float>(8, 0.0f));
  HostBuffer<float> x({2, 4}, std::vector<float>(8, 1.0f));
  HostBuffer<float> weight({4}, std::vector<float>(4, 1.0f));
  HostBuffer<float> short_weight({3}, std::vector<float>(3, 1.0f));
  SUBCASE("weight shorter than H") {
    check_refused(ks::kRmsNorm,
                  {out.arg(), x.arg(), int_arg(4), short_weight.arg(),
                   float_arg(1e-6), int_arg(2), int_arg(4)},
                  {"weight has 3 elements", "H = 4"});
  }
  SUBCASE("x_stride differs from x's row stride") {
    check_refused(ks::kRmsNorm,
                  {out.arg(), x.arg(), int_arg(5), weight.arg(),
                   float_arg(1e-6), int_arg(2), int_arg(4)},
                  {"x_stride = 5", "row stride"});
  }
  SUBCASE("H differs from x's rows") {
    check_refused(ks::kRmsNorm,
                  {out.arg(), x.arg(), int_arg(4), weight.arg(),
                   float_arg(1e-6), int_arg(2), int_arg(3)},
                  {"x has shape [2, 4]", "H = 3"});
  }
  SUBCASE("T beyond the rows") {
    check_refused(ks::kRmsNorm,
                  {out.arg(), x.arg(), int_arg(4), weight.arg(),
                   float_arg(1e-6), int_arg(3), int_arg(4)},
                  {"x has shape [2, 4]", "T = 3"});
  }
  SUBCASE("a float64 tensor") {
    HostBuffer<double> x64({2, 4}, std::vector<double>(8, 1.0),
                           JW_DTYPE_FLOAT64);
    check_refused(ks::kRmsNorm,
                  {out.arg(), x64.arg(), int_arg(4), weight.arg(),
                   float_arg(1e-6), int_arg(2), int_arg(4)},
                  {"'x' does not take float64"});
  }
  SUBCASE("a dtype number outside jw_dtype") {
    HostBuffer<float> bogus_x({2, 4}, std::vector<float>(8, 1.0f));
    const uint32_t bogus = 99;  // stored as a C caller could
    std::memcpy(&bogus_x.tensor.meta.dtype, &bogus, sizeof bogus);
    check_refused(ks::kRmsNorm,
                  {out.arg(), bogus_x.arg(), int_arg(4), weight.arg(),
                   float_arg(1e-6), int_arg(2), int_arg(4)},
                  {"'x' has an invalid dtype (99)"});
  }
  SUBCASE("an argument of an unknown value kind") {
    std::vector<jw_arg_value> args{out.arg(),    x.arg(),         int_arg(4),
                                   weight.arg(), float_arg(1e-6), int_arg(2),
                                   int_arg(4)};
    const uint32_t bogus = 7;
    std::memcpy(&args[2].kind, &bogus, sizeof bogus);
    check_refused(ks::kRmsNorm, args,
                  {"argument 'x_stride' has an unknown value kind (7)"});
  }
  SUBCASE("a non-contiguous out") {
    HostBuffer<float> strided_out({2, 4}, {8, 1}, std::vector<float>(12, 0.0f));
    check_refused(ks::kRmsNorm,
                  {strided_out.arg(), x.arg(), int_arg(4), weight.arg(),
                   float_arg(1e-6), int_arg(2), int_arg(4)},
                  {"'out' must be contiguous"});
  }
}

// ---------------------------------------------------------------------------
// silu_and_mul
// ---------------------------------------------------------------------------
template <typename T>
void check_silu_and_mul(int64_t rows, int64_t width, uint32_t seed) {
  using F = FloatType<T>;
  INFO("dtype ", F::kSuffix, ", T ", rows, ", H ", width);
  const std::vector<T> x_values = random_values<T>(
      static_cast<std::size_t>(rows * 2 * width), -6.0, 6.0, seed);
  HostBuffer<T> out({rows, width},
                    std::vector<T>(rows * width, F::from(-77.0)));
  HostBuffer<T> x({rows, 2 * width}, x_values);
  CHECK(run(ks::kSiluAndMul,
            {out.arg(), x.arg(), int_arg(rows), int_arg(width)}) ==
        std::string("silu_and_mul<") + F::kSuffix + ">");
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t h = 0; h < width; ++h) {
      const double v = F::value(x_values[t * 2 * width + h]);
      const double up = F::value(x_values[t * 2 * width + width + h]);
      const double exact = v / (1.0 + std::exp(-v)) * up;
      const T actual = out.values[t * width + h];
      INFO("row ", t, ", column ", h, ": got ", F::value(actual), ", exact ",
           exact);
      CHECK(F::close(actual, exact));
    }
  }
}

TEST_CASE(
    "given every float dtype and H in each specialization class (1, 16, "
    "37), when silu_and_mul runs, then every element is within tolerance "
    "of the double formula") {
  uint32_t seed = 200;
  for (int64_t width : {1, 16, 37}) {
    check_silu_and_mul<float>(4, width, seed++);
    check_silu_and_mul<Float16>(4, width, seed++);
    check_silu_and_mul<BFloat16>(4, width, seed++);
  }
}

TEST_CASE(
    "given very negative and very positive gate values, when silu_and_mul "
    "runs in float32, then silu tends to 0 and to the value itself") {
  HostBuffer<float> out({1, 3}, {9.0f, 9.0f, 9.0f});
  HostBuffer<float> x({1, 6}, {-200.0f, 200.0f, 0.0f, 2.0f, 3.0f, 4.0f});
  run(ks::kSiluAndMul, {out.arg(), x.arg(), int_arg(1), int_arg(3)});
  CHECK(out.values[0] == 0.0f);
  CHECK(std::signbit(out.values[0]));
  CHECK(out.values[1] == 600.0f);
  CHECK(out.values[2] == 0.0f);
}

TEST_CASE(
    "given T = 0, when silu_and_mul runs, then nothing is written; given x "
    "narrower than 2H, then it is refused") {
  HostBuffer<BFloat16> out({1, 2},
                           std::vector<BFloat16>(2, BFloat16::from_bits(5)));
  HostBuffer<BFloat16> x({1, 4},
                         std::vector<BFloat16>(4, BFloat16::from_float(1)));
  run(ks::kSiluAndMul, {out.arg(), x.arg(), int_arg(0), int_arg(2)});
  CHECK(out.values[0].bits == 5);
  CHECK(out.values[1].bits == 5);
  check_refused(ks::kSiluAndMul, {out.arg(), x.arg(), int_arg(1), int_arg(3)},
                {"x has shape [1, 4]", "H = 3"});
}

}  // namespace
