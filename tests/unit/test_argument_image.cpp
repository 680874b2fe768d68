// ArgumentImage (core/src/argument_image.hpp): the words of a launch's
// arguments, what makes no image, the size limit, and matches() agreeing
// with capture(). That every field validation reads is in the image is
// shown through the launch path (test_launch.cpp, "given a remembered
// launch ...").
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "argument_image.hpp"
#include "last_result_memo.hpp"

using namespace jitwarm;
using jitwarm::detail::ArgumentImage;
using jitwarm::detail::LastResultMemo;
using jitwarm::detail::MemoKey;

namespace {

uint64_t pair(uint64_t low, uint64_t high) {
  return low | high << 32;
}

// Whether `args` match the words `image` captured, through a memo (the
// way the launch path compares).
bool matches_kept(const ArgumentImage& image,
                  std::span<const jw_arg_value> args, int32_t device) {
  const LastResultMemo<ArgumentImage::kMaxWords> memo;
  memo.remember(image.words(), {});
  return memo.recall_matching(
      [&](const MemoKey& kept) {
        return ArgumentImage::matches(args, device, kept);
      },
      {});
}

}  // namespace

TEST_CASE(
    "given a tensor and a scalar, then the image holds the count, the "
    "device and each field validation reads, in the documented words") {
  alignas(16) std::array<float, 8> data{};
  const std::array<int64_t, 2> shape{2, 4};
  const std::array<int64_t, 2> strides{4, 1};
  const jw_tensor strided =
      make_tensor(data.data(), JW_DTYPE_FLOAT32, shape, strides, 3);
  const std::array args{arg(strided), arg_int(-5)};
  ArgumentImage image;
  REQUIRE(image.capture(args, 7));
  const std::vector<uint64_t> words(image.words().begin(), image.words().end());
  const uint64_t minus_five = static_cast<uint64_t>(int64_t{-5});
  CHECK(words == std::vector<uint64_t>{
                     2, 7,                      // count, device
                     pair(JW_VALUE_TENSOR, 2),  // kind, rank
                     pair(JW_DTYPE_FLOAT32, strided.meta.flags),
                     pair(3, 2),  // device 3, data not null, 16-aligned
                     2, 4,        // shape
                     4, 1,        // strides (HAS_STRIDES)
                     pair(JW_VALUE_SCALAR, JW_SCALAR_INT), minus_five});
  CHECK(matches_kept(image, args, 7));
  CHECK_FALSE(matches_kept(image, args, 6));  // another device
  // Null data and data off alignment are words of their own.
  jw_tensor moved = strided;
  moved.data = data.data() + 1;
  const std::array off{arg(moved), arg_int(-5)};
  CHECK_FALSE(matches_kept(image, off, 7));
  moved.data = nullptr;
  const std::array null_data{arg(moved), arg_int(-5)};
  ArgumentImage null_image;
  REQUIRE(null_image.capture(null_data, 7));
  CHECK(null_image.words()[4] == pair(3, 1 | 2));  // null (and 0 % 16 == 0)
}

TEST_CASE(
    "given arguments validation refuses before it reads what the image "
    "needs, then they make no image") {
  std::array<float, 4> data{};
  const std::array<int64_t, 1> shape{4};
  const jw_tensor good = make_tensor(data.data(), JW_DTYPE_FLOAT32, shape);
  const jw_tensor_meta meta = make_tensor_meta(JW_DTYPE_FLOAT32, shape);
  ArgumentImage image;
  const auto capture = [&](const jw_arg_value& a) {
    const std::array args{a};
    return image.capture(args, 0);
  };
  CHECK(capture(arg(good)));
  CHECK_FALSE(capture(warmup_arg(meta)));
  jw_arg_value null_tensor = arg(good);
  null_tensor.value.tensor = nullptr;
  CHECK_FALSE(capture(null_tensor));
  jw_arg_value small = arg(good);
  small.struct_size = 4;
  CHECK_FALSE(capture(small));
  jw_arg_value unknown = arg(good);
  unknown.kind = static_cast<jw_value_kind>(9);
  CHECK_FALSE(capture(unknown));
  jw_tensor t = good;
  t.struct_size = 8;
  CHECK_FALSE(capture(arg(t)));
  t = good;
  t.meta.struct_size = 8;
  CHECK_FALSE(capture(arg(t)));
  t = good;
  t.meta.rank = JW_MAX_RANK + 1;
  CHECK_FALSE(capture(arg(t)));
  CHECK(image.words().empty());  // a failed capture leaves no image
}

TEST_CASE(
    "given arguments whose image would pass kMaxWords words, then they make "
    "none, and one word less still does") {
  // A rank-8 strided tensor takes 3 + 16 words; the count and the device 2.
  std::array<float, 1> data{};
  const std::array<int64_t, JW_MAX_RANK> shape{1, 1, 1, 1, 1, 1, 1, 1};
  const std::array<int64_t, JW_MAX_RANK> strides{1, 1, 1, 1, 1, 1, 1, 1};
  const jw_tensor big =
      make_tensor(data.data(), JW_DTYPE_FLOAT32, shape, strides);
  std::vector<jw_arg_value> args(6, arg(big));  // 2 + 6 * 19 = 116 words
  // Scalars of two words each up to the limit.
  while (2 + 6 * 19 + 2 * (args.size() - 6) + 2 <= ArgumentImage::kMaxWords) {
    args.push_back(arg_int(1));
  }
  ArgumentImage image;
  REQUIRE(image.capture(args, 0));
  CHECK(image.words().size() == ArgumentImage::kMaxWords);
  args.push_back(arg_int(1));
  CHECK_FALSE(image.capture(args, 0));
}

TEST_CASE(
    "given the image of some arguments, then matches() says the same of "
    "them as of every other image it compares with: equal exactly when "
    "capture() gives equal words") {
  alignas(16) std::array<double, 16> data{};
  const std::array<int64_t, 2> shape{4, 4};
  const jw_tensor t = make_tensor(data.data(), JW_DTYPE_FLOAT64, shape);
  const std::vector<std::vector<jw_arg_value>> calls{
      {arg(t), arg_int(16)},
      {arg(t), arg_int(17)},
      {arg(t), arg_float(16.0)},
      {arg(t)},
      {arg(t), arg_int(16), arg_bool(true)},
      {arg_int(16), arg(t)},
  };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    ArgumentImage kept;
    REQUIRE(kept.capture(calls[i], 0));
    for (std::size_t j = 0; j < calls.size(); ++j) {
      CAPTURE(i);
      CAPTURE(j);
      ArgumentImage other;
      REQUIRE(other.capture(calls[j], 0));
      const bool equal = std::equal(kept.words().begin(), kept.words().end(),
                                    other.words().begin(), other.words().end());
      CHECK(equal == (i == j));
      CHECK(matches_kept(kept, calls[j], 0) == equal);
    }
  }
}
