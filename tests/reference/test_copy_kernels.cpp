// Tests for the data-movement kernels of the CPU reference: expand,
// batch_memcpy, scatter_states, pack_seq and unpack_seq (docs/kernels.md,
// sections 2, 3, 5, 6 and 7).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "reference_test_support.hpp"

namespace {

using namespace jitwarm::reference_test;
using jitwarm::numeric::BFloat16;
using jitwarm::numeric::Float16;
namespace ks = jitwarm::kernel_set;

// ---------------------------------------------------------------------------
// expand
// ---------------------------------------------------------------------------
template <typename T>
std::vector<T> expand_values(std::vector<T> x, std::vector<int32_t> cu,
                             jw_arg_value replace_from, jw_arg_value replace_to,
                             int64_t output_size, T untouched,
                             int64_t max_tokens, std::string* instantiation) {
  // Sizes first: a constructor's parameters may be initialized in any
  // order, so a moved-from vector must not be measured in the same call.
  const auto batch = static_cast<int64_t>(x.size());
  const auto cu_size = static_cast<int64_t>(cu.size());
  HostBuffer<T> output({output_size}, std::vector<T>(output_size, untouched));
  HostBuffer<T> xs({batch}, std::move(x));
  HostBuffer<int32_t> cus({cu_size}, std::move(cu));
  *instantiation =
      run(ks::kExpand, {output.arg(), xs.arg(), cus.arg(), replace_from,
                        replace_to, int_arg(max_tokens)});
  return output.values;
}

TEST_CASE(
    "given the docs/kernels.md example (x [5, 9, 5], cu [2, 5, 6], replace 5 "
    "-> 0), when expand runs for each integer dtype, then output is [0, 0, 9, "
    "9, 9, 0] and the tail is untouched") {
  std::string instantiation;
  CHECK(expand_values<int32_t>({5, 9, 5}, {2, 5, 6}, int_arg(5), int_arg(0), 8,
                               -7, 3, &instantiation) ==
        std::vector<int32_t>{0, 0, 9, 9, 9, 0, -7, -7});
  CHECK(instantiation == "expand<i32>");
  CHECK(expand_values<int64_t>({5, 9, 5}, {2, 5, 6}, int_arg(5), int_arg(0), 7,
                               -7, 3, &instantiation) ==
        std::vector<int64_t>{0, 0, 9, 9, 9, 0, -7});
  CHECK(instantiation == "expand<i64>");
}

TEST_CASE(
    "given float32 x with float or integer replace scalars, when expand "
    "runs, then matching values are replaced and the rest copied") {
  std::string instantiation;
  CHECK(expand_values<float>({2.5f, -1.0f}, {1, 4}, float_arg(2.5),
                             float_arg(-0.5), 4, 99.0f, 3, &instantiation) ==
        std::vector<float>{-0.5f, -1.0f, -1.0f, -1.0f});
  CHECK(instantiation == "expand<fp32>");
  CHECK(expand_values<float>({3.0f, 4.0f}, {2, 3}, int_arg(4), int_arg(8), 3,
                             99.0f, 2, &instantiation) ==
        std::vector<float>{3.0f, 3.0f, 8.0f});
}

TEST_CASE(
    "given requests with zero tokens and no requests at all, when expand "
    "runs, then empty requests write nothing") {
  std::string instantiation;
  CHECK(expand_values<int32_t>({1, 2, 3}, {0, 2, 2}, int_arg(-1), int_arg(0), 3,
                               -7, 2, &instantiation) ==
        std::vector<int32_t>{2, 2, -7});
  CHECK(expand_values<int64_t>({}, {}, int_arg(-1), int_arg(0), 2, -7, 1,
                               &instantiation) == std::vector<int64_t>{-7, -7});
}

TEST_CASE(
    "given a replace_from that int64 cannot hold, when expand runs, then "
    "nothing matches; given a replace_to that int32 cannot hold, then it is "
    "refused") {
  std::string instantiation;
  CHECK(expand_values<int64_t>({-1, 4}, {1, 2}, uint_arg(UINT64_MAX),
                               int_arg(0), 2, 0, 1,
                               &instantiation) == std::vector<int64_t>{-1, 4});
  HostBuffer<int32_t> output({2}, {0, 0});
  HostBuffer<int32_t> x({1}, {5});
  HostBuffer<int32_t> cu({1}, {2});
  check_refused(ks::kExpand,
                {output.arg(), x.arg(), cu.arg(), int_arg(5),
                 int_arg(int64_t{1} << 40), int_arg(4)},
                {"replace_to = 1099511627776", "int32"});
}

TEST_CASE(
    "given bad expand inputs, when the kernel runs, then it refuses them "
    "naming the parameter") {
  HostBuffer<int32_t> output({4}, {0, 0, 0, 0});
  HostBuffer<int32_t> x({2}, {5, 6});
  SUBCASE("a request longer than MAX_NUM_TOKENS") {
    HostBuffer<int32_t> cu({2}, {1, 4});
    check_refused(
        ks::kExpand,
        {output.arg(), x.arg(), cu.arg(), int_arg(0), int_arg(0), int_arg(2)},
        {"request 1 has 3 tokens", "MAX_NUM_TOKENS = 2"});
  }
  SUBCASE("output shorter than the tokens") {
    HostBuffer<int32_t> cu({2}, {1, 5});
    check_refused(
        ks::kExpand,
        {output.arg(), x.arg(), cu.arg(), int_arg(0), int_arg(0), int_arg(8)},
        {"output has 4 elements", "5 tokens"});
  }
  SUBCASE("cu_num_tokens decreasing") {
    HostBuffer<int32_t> cu({2}, {3, 1});
    check_refused(
        ks::kExpand,
        {output.arg(), x.arg(), cu.arg(), int_arg(0), int_arg(0), int_arg(8)},
        {"cu_num_tokens[1] = 1"});
  }
  SUBCASE("a float scalar for integer x") {
    HostBuffer<int32_t> cu({2}, {1, 2});
    check_refused(ks::kExpand,
                  {output.arg(), x.arg(), cu.arg(), float_arg(0.5), int_arg(0),
                   int_arg(8)},
                  {"replace_from", "int32"});
  }
  SUBCASE("MAX_NUM_TOKENS 0") {
    HostBuffer<int32_t> cu({2}, {0, 0});
    check_refused(
        ks::kExpand,
        {output.arg(), x.arg(), cu.arg(), int_arg(0), int_arg(0), int_arg(0)},
        {"MAX_NUM_TOKENS = 0"});
  }
}

// ---------------------------------------------------------------------------
// batch_memcpy
// ---------------------------------------------------------------------------
int64_t address_of(const void* pointer) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(pointer));
}

std::vector<uint8_t> counting_bytes(std::size_t count, uint8_t first) {
  std::vector<uint8_t> bytes(count);
  std::iota(bytes.begin(), bytes.end(), first);
  return bytes;
}

TEST_CASE(
    "given copies of odd sizes and alignments, an empty copy and two "
    "overlapping ranges, when batch_memcpy runs, then each pair behaves "
    "like memmove") {
  std::vector<uint8_t> source = counting_bytes(64, 1);
  std::vector<uint8_t> target(64, 0);
  std::vector<uint8_t> overlapping = counting_bytes(32, 100);
  std::vector<uint8_t> overlapping_back = counting_bytes(32, 150);

  // What memmove on copies of the buffers produces, pair by pair.
  std::vector<uint8_t> expected_target = target;
  std::memmove(expected_target.data() + 3, source.data() + 5, 17);
  std::memmove(expected_target.data() + 40, source.data(), 1);
  std::vector<uint8_t> expected_overlapping = overlapping;
  std::memmove(expected_overlapping.data() + 3, expected_overlapping.data(),
               20);
  std::vector<uint8_t> expected_back = overlapping_back;
  std::memmove(expected_back.data(), expected_back.data() + 7, 25);

  HostBuffer<int64_t> src(
      {5}, {address_of(source.data() + 5), address_of(source.data()),
            address_of(source.data() + 9), address_of(overlapping.data()),
            address_of(overlapping_back.data() + 7)});
  HostBuffer<int64_t> dst(
      {5}, {address_of(target.data() + 3), address_of(target.data() + 40),
            address_of(target.data() + 50), address_of(overlapping.data() + 3),
            address_of(overlapping_back.data())});
  HostBuffer<int64_t> sizes({5}, {17, 1, 0, 20, 25});
  CHECK(run(ks::kBatchMemcpy, {src.arg(), dst.arg(), sizes.arg(), int_arg(5),
                               int_arg(128)}) == "batch_memcpy");
  CHECK(target == expected_target);
  CHECK(overlapping == expected_overlapping);
  CHECK(overlapping_back == expected_back);
  // The copy into [3, 20) overwrote what the overlap should have moved.
  CHECK(overlapping[3] == 100);
  CHECK(overlapping_back[0] == 157);
}

TEST_CASE(
    "given no copies, when batch_memcpy runs, then it succeeds and the "
    "(empty) address tensors are never read") {
  HostBuffer<int64_t> empty({0}, {});
  CHECK(run(ks::kBatchMemcpy, {empty.arg(), empty.arg(), empty.arg(),
                               int_arg(0), int_arg(1)}) == "batch_memcpy");
}

TEST_CASE(
    "given a negative size, a null address or num_copies beyond the "
    "tensors, when batch_memcpy runs, then it refuses before copying") {
  std::vector<uint8_t> source = counting_bytes(8, 1);
  std::vector<uint8_t> target(8, 0);
  HostBuffer<int64_t> src({2}, {address_of(source.data()), 0});
  HostBuffer<int64_t> dst(
      {2}, {address_of(target.data()), address_of(target.data())});
  SUBCASE("negative size") {
    HostBuffer<int64_t> sizes({2}, {4, -1});
    check_refused(ks::kBatchMemcpy,
                  {src.arg(), dst.arg(), sizes.arg(), int_arg(2), int_arg(1)},
                  {"sizes[1] = -1"});
  }
  SUBCASE("null source with bytes to copy") {
    HostBuffer<int64_t> sizes({2}, {4, 4});
    check_refused(ks::kBatchMemcpy,
                  {src.arg(), dst.arg(), sizes.arg(), int_arg(2), int_arg(1)},
                  {"copy 1", "src_ptrs[1] = 0"});
  }
  SUBCASE("num_copies beyond the tensors") {
    HostBuffer<int64_t> sizes({2}, {4, 0});
    check_refused(ks::kBatchMemcpy,
                  {src.arg(), dst.arg(), sizes.arg(), int_arg(3), int_arg(1)},
                  {"src_ptrs has 2 elements", "num_copies = 3"});
  }
  SUBCASE("BLOCK_SIZE 0") {
    HostBuffer<int64_t> sizes({2}, {4, 0});
    check_refused(ks::kBatchMemcpy,
                  {src.arg(), dst.arg(), sizes.arg(), int_arg(2), int_arg(0)},
                  {"BLOCK_SIZE = 0"});
  }
  CHECK(target == std::vector<uint8_t>(8, 0));
}

// ---------------------------------------------------------------------------
// scatter_states
// ---------------------------------------------------------------------------
constexpr jw_dtype kEveryDtype[] = {
    JW_DTYPE_BOOL,    JW_DTYPE_INT8,    JW_DTYPE_INT16,    JW_DTYPE_INT32,
    JW_DTYPE_INT64,   JW_DTYPE_UINT8,   JW_DTYPE_UINT16,   JW_DTYPE_UINT32,
    JW_DTYPE_UINT64,  JW_DTYPE_FLOAT16, JW_DTYPE_BFLOAT16, JW_DTYPE_FLOAT32,
    JW_DTYPE_FLOAT64,
};

// state [rows, row_size] with row stride `stride` and src [T, row_size] as
// raw bytes of `dtype`; returns state's bytes after the launch.
template <typename Index>
std::vector<uint8_t> scatter(jw_dtype dtype, int64_t rows, int64_t row_size,
                             int64_t stride, const std::vector<Index>& targets,
                             std::string* instantiation) {
  const auto element =
      static_cast<int64_t>(jitwarm::reference_cpu::dtype_info(dtype).size);
  const auto num_rows = static_cast<int64_t>(targets.size());
  HostBuffer<uint8_t> state(
      {rows, row_size}, {stride, 1},
      std::vector<uint8_t>(((rows - 1) * stride + row_size) * element, 0xEE),
      dtype);
  HostBuffer<uint8_t> src({num_rows, row_size},
                          counting_bytes(num_rows * row_size * element, 1),
                          dtype);
  HostBuffer<Index> indices({num_rows}, targets);
  *instantiation = run(ks::kScatterStates,
                       {state.arg(), int_arg(stride), src.arg(), indices.arg(),
                        int_arg(num_rows), int_arg(row_size), int_arg(64)});
  return state.values;
}

// The same scatter written as a byte loop over the definition in
// docs/kernels.md.
template <typename Index>
std::vector<uint8_t> expected_scatter(jw_dtype dtype, int64_t rows,
                                      int64_t row_size, int64_t stride,
                                      const std::vector<Index>& targets) {
  const auto element =
      static_cast<int64_t>(jitwarm::reference_cpu::dtype_info(dtype).size);
  std::vector<uint8_t> state(((rows - 1) * stride + row_size) * element, 0xEE);
  const std::vector<uint8_t> src = counting_bytes(
      targets.size() * static_cast<std::size_t>(row_size * element), 1);
  for (std::size_t t = 0; t < targets.size(); ++t) {
    if (targets[t] < 0) continue;
    for (int64_t byte = 0; byte < row_size * element; ++byte) {
      state[targets[t] * stride * element + byte] =
          src[t * row_size * element + byte];
    }
  }
  return state;
}

TEST_CASE(
    "given every dtype in jitwarm.h and int32 or int64 indices with padding "
    "(-1), when scatter_states runs, then the indexed rows are copied byte "
    "for byte and every other byte is untouched") {
  for (jw_dtype dtype : kEveryDtype) {
    const auto size = jitwarm::reference_cpu::dtype_info(dtype).size;
    INFO("dtype ", jitwarm::reference_cpu::dtype_name(dtype));
    std::string instantiation;
    const std::vector<int32_t> targets32{3, -1, 0, 4};
    CHECK(scatter<int32_t>(dtype, 5, 3, 5, targets32, &instantiation) ==
          expected_scatter<int32_t>(dtype, 5, 3, 5, targets32));
    CHECK(instantiation ==
          "scatter_states<bytes" + std::to_string(size) + ",i32>");
    const std::vector<int64_t> targets64{-3, 1, 2};
    CHECK(scatter<int64_t>(dtype, 4, 2, 2, targets64, &instantiation) ==
          expected_scatter<int64_t>(dtype, 4, 2, 2, targets64));
    CHECK(instantiation ==
          "scatter_states<bytes" + std::to_string(size) + ",i64>");
  }
}

TEST_CASE(
    "given state_stride in each specialization class (1, 16, another "
    "value), when scatter_states runs, then rows land at index * stride") {
  struct Layout {
    int64_t row_size, stride;
  };
  for (const Layout layout : {Layout{1, 1}, Layout{3, 16}, Layout{3, 7}}) {
    INFO("row_size ", layout.row_size, ", stride ", layout.stride);
    std::string instantiation;
    const std::vector<int64_t> targets{2, -1, 0};
    CHECK(scatter<int64_t>(JW_DTYPE_FLOAT32, 4, layout.row_size, layout.stride,
                           targets, &instantiation) ==
          expected_scatter<int64_t>(JW_DTYPE_FLOAT32, 4, layout.row_size,
                                    layout.stride, targets));
  }
}

TEST_CASE(
    "given no source rows or only padding indices, when scatter_states "
    "runs, then state is untouched") {
  std::string instantiation;
  const std::vector<uint8_t> untouched(4 * 2 * 2, 0xEE);
  CHECK(scatter<int32_t>(JW_DTYPE_FLOAT16, 4, 2, 2, {}, &instantiation) ==
        untouched);
  CHECK(scatter<int32_t>(JW_DTYPE_FLOAT16, 4, 2, 2, {-1, -2}, &instantiation) ==
        untouched);
}

TEST_CASE(
    "given an index past the state, a repeated index, a wrong ROW_SIZE or a "
    "wrong state_stride, when scatter_states runs, then it refuses naming "
    "the parameter") {
  HostBuffer<float> state({3, 2}, std::vector<float>(6, 0.0f));
  HostBuffer<float> src({2, 2}, {1, 2, 3, 4});
  SUBCASE("index past the state") {
    HostBuffer<int32_t> indices({2}, {0, 3});
    check_refused(ks::kScatterStates,
                  {state.arg(), int_arg(2), src.arg(), indices.arg(),
                   int_arg(2), int_arg(2), int_arg(16)},
                  {"indices[1] = 3", "3 rows"});
  }
  SUBCASE("repeated index") {
    HostBuffer<int32_t> indices({2}, {1, 1});
    check_refused(ks::kScatterStates,
                  {state.arg(), int_arg(2), src.arg(), indices.arg(),
                   int_arg(2), int_arg(2), int_arg(16)},
                  {"indices[0] and indices[1] are both 1", "distinct"});
  }
  SUBCASE("ROW_SIZE differs from the rows") {
    HostBuffer<int32_t> indices({2}, {0, 1});
    check_refused(ks::kScatterStates,
                  {state.arg(), int_arg(2), src.arg(), indices.arg(),
                   int_arg(2), int_arg(3), int_arg(16)},
                  {"ROW_SIZE = 3"});
  }
  SUBCASE("state_stride differs from the tensor's row stride") {
    HostBuffer<int32_t> indices({2}, {0, 1});
    check_refused(ks::kScatterStates,
                  {state.arg(), int_arg(4), src.arg(), indices.arg(),
                   int_arg(2), int_arg(2), int_arg(16)},
                  {"state_stride = 4", "row stride"});
  }
  SUBCASE("num_rows beyond src") {
    HostBuffer<int32_t> indices({3}, {0, 1, 2});
    check_refused(ks::kScatterStates,
                  {state.arg(), int_arg(2), src.arg(), indices.arg(),
                   int_arg(3), int_arg(2), int_arg(16)},
                  {"src has 2 rows", "num_rows = 3"});
  }
  CHECK(state.values == std::vector<float>(6, 0.0f));
}

// ---------------------------------------------------------------------------
// pack_seq / unpack_seq
// ---------------------------------------------------------------------------

// Element i of a test input, in each dtype (exact in all of them).
template <typename T>
T element(int i) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<uint8_t>(i);
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(i) * 0.5f;
  } else {
    return T::from_float(static_cast<float>(i) * 0.5f);
  }
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// pack_seq of x [N, D] with `lengths`, checked against the definition
// out[b, t, :] = x[start_b + t, :] if t < lengths[b] else pad; then
// unpack_seq of the result, checked to give back x's first sum(lengths)
// rows while leaving out's other rows untouched.
template <typename T>
void check_pack_round_trip(const std::vector<int32_t>& lengths,
                           int64_t max_length, int64_t width, double pad_value,
                           T pad, const std::string& suffix) {
  const int64_t total = std::accumulate(lengths.begin(), lengths.end(), 0);
  const int64_t rows = total + 1;  // one row that no sequence uses
  const auto batch = static_cast<int64_t>(lengths.size());
  std::vector<T> x_values;
  for (int i = 0; i < rows * width; ++i) x_values.push_back(element<T>(i + 1));

  std::vector<T> expected;
  int64_t start = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < max_length; ++t) {
      for (int64_t d = 0; d < width; ++d) {
        expected.push_back(t < lengths[b] ? x_values[(start + t) * width + d]
                                          : pad);
      }
    }
    start += lengths[b];
  }

  HostBuffer<T> x({rows, width}, x_values);
  HostBuffer<int32_t> lens({batch}, lengths);
  HostBuffer<T> packed(
      {batch, max_length, width},
      std::vector<T>(batch * max_length * width, element<T>(99)));
  CHECK(run(ks::kPackSeq, {x.arg(), lens.arg(), packed.arg(), int_arg(rows),
                           int_arg(width), int_arg(max_length),
                           float_arg(pad_value), int_arg(16), int_arg(32)}) ==
        "pack_seq<" + suffix + ">");
  CHECK(same_bits(packed.values, expected));

  HostBuffer<T> out({rows, width},
                    std::vector<T>(rows * width, element<T>(77)));
  CHECK(run(ks::kUnpackSeq, {packed.arg(), lens.arg(), out.arg(), int_arg(rows),
                             int_arg(width), int_arg(max_length), int_arg(16),
                             int_arg(32)}) == "unpack_seq<" + suffix + ">");
  std::vector<T> expected_out(x_values.begin(),
                              x_values.begin() + total * width);
  expected_out.resize(rows * width, element<T>(77));
  CHECK(same_bits(out.values, expected_out));
}

TEST_CASE(
    "given sequences of lengths [2, 0, 3] in every pack dtype, when packed "
    "to L_max 3 and unpacked again, then padding holds pad_value and the "
    "rows come back unchanged") {
  check_pack_round_trip<float>({2, 0, 3}, 3, 2, -1.5, -1.5f, "fp32");
  check_pack_round_trip<Float16>({2, 0, 3}, 3, 2, -1.5,
                                 Float16::from_float(-1.5f), "fp16");
  check_pack_round_trip<BFloat16>({2, 0, 3}, 3, 2, -1.5,
                                  BFloat16::from_float(-1.5f), "bf16");
  check_pack_round_trip<uint8_t>({2, 0, 3}, 3, 2, 7.0, uint8_t{7}, "u8");
}

TEST_CASE(
    "given a pad_value the element type cannot hold exactly, when packed "
    "as float16 or bfloat16, then the pad is the float32 value rounded to "
    "nearest even") {
  check_pack_round_trip<Float16>({1}, 2, 3, 0.1, Float16::from_float(0.1f),
                                 "fp16");
  check_pack_round_trip<BFloat16>({1}, 2, 3, 1.0 / 3.0,
                                  BFloat16::from_float(1.0f / 3.0f), "bf16");
  // -inf is a common padding for scores.
  check_pack_round_trip<Float16>({1}, 2, 1,
                                 -std::numeric_limits<double>::infinity(),
                                 Float16::from_bits(0xFC00), "fp16");
}

TEST_CASE(
    "given no sequences or only empty sequences, when packed and unpacked, "
    "then the packed batch is all padding and out is untouched") {
  check_pack_round_trip<float>({}, 2, 2, 0.0, 0.0f, "fp32");
  check_pack_round_trip<uint8_t>({0, 0}, 2, 3, 255.0, uint8_t{255}, "u8");
}

TEST_CASE(
    "given a uint8 pad_value that is not an exact byte, when pack_seq "
    "runs, then it is refused naming pad_value") {
  HostBuffer<uint8_t> x({2, 2}, {1, 2, 3, 4});
  HostBuffer<int32_t> lengths({1}, {1});
  HostBuffer<uint8_t> out({1, 2, 2}, {0, 0, 0, 0});
  for (double pad :
       {2.5, 256.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    INFO("pad_value ", pad);
    check_refused(ks::kPackSeq,
                  {x.arg(), lengths.arg(), out.arg(), int_arg(2), int_arg(2),
                   int_arg(2), float_arg(pad), int_arg(1), int_arg(1)},
                  {"pad_value", "exact byte"});
  }
  CHECK(out.values == std::vector<uint8_t>{0, 0, 0, 0});
}

TEST_CASE(
    "given lengths that exceed L_max or add up past N, or shapes that "
    "disagree with D and L_max, when pack or unpack runs, then it refuses "
    "naming the parameter") {
  HostBuffer<float> x({3, 2}, std::vector<float>(6, 1.0f));
  HostBuffer<float> packed({2, 2, 2}, std::vector<float>(8, 0.0f));
  SUBCASE("a length above L_max") {
    HostBuffer<int32_t> lengths({2}, {1, 3});
    check_refused(ks::kPackSeq,
                  {x.arg(), lengths.arg(), packed.arg(), int_arg(3), int_arg(2),
                   int_arg(2), float_arg(0), int_arg(1), int_arg(1)},
                  {"lengths[1] = 3", "L_max = 2"});
  }
  SUBCASE("lengths adding up past N") {
    HostBuffer<int32_t> lengths({2}, {2, 2});
    check_refused(ks::kPackSeq,
                  {x.arg(), lengths.arg(), packed.arg(), int_arg(3), int_arg(2),
                   int_arg(2), float_arg(0), int_arg(1), int_arg(1)},
                  {"add up to 4", "N = 3"});
    check_refused(ks::kUnpackSeq,
                  {packed.arg(), lengths.arg(), x.arg(), int_arg(3), int_arg(2),
                   int_arg(2), int_arg(1), int_arg(1)},
                  {"add up to 4", "N = 3"});
  }
  SUBCASE("out's shape disagreeing with L_max") {
    HostBuffer<int32_t> lengths({2}, {1, 1});
    check_refused(ks::kPackSeq,
                  {x.arg(), lengths.arg(), packed.arg(), int_arg(3), int_arg(2),
                   int_arg(3), float_arg(0), int_arg(1), int_arg(1)},
                  {"out has shape [2, 2, 2]", "L_max = 3"});
  }
  SUBCASE("x's rows disagreeing with D") {
    HostBuffer<int32_t> lengths({2}, {1, 1});
    check_refused(ks::kUnpackSeq,
                  {packed.arg(), lengths.arg(), x.arg(), int_arg(3), int_arg(4),
                   int_arg(2), int_arg(1), int_arg(1)},
                  {"packed has shape [2, 2, 2]", "D = 4"});
  }
  SUBCASE("BLOCK_D 0") {
    HostBuffer<int32_t> lengths({2}, {1, 1});
    check_refused(ks::kUnpackSeq,
                  {packed.arg(), lengths.arg(), x.arg(), int_arg(3), int_arg(2),
                   int_arg(2), int_arg(1), int_arg(0)},
                  {"BLOCK_D = 0"});
  }
}

}  // namespace
