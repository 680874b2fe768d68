// ArgumentImage: a launch's arguments as words, with the launch's device:
// the argument count and every argument's ArgumentFields (argument_fields.hpp,
// the one list of what validation and the argument signature read,
// specialize_arguments with ArgumentUse::launch), copied without a check.
// Validation and the signature are functions of those fields alone (and of
// the schema), so arguments whose image equals that of arguments that passed
// validation pass it too and have their signature and prepared launch: the
// launch path keeps the last launch's image with the launch it found
// (prepared_launch.hpp) and skips both for the next launch with the same
// image.
//
// Words: the argument count and the device, then per argument
//   scalar           kind | scalar kind << 32, the value's bits
//   runtime tensor   kind | rank << 32, dtype | flags << 32,
//                    device_index | data null << 32 | data 16-aligned << 33,
//                    shape[0, rank), and strides[0, rank) with HAS_STRIDES
// (every field whole: an invalid value never matches a valid one). Guards
// are not words: arguments where reading the fields stopped at one (a struct
// too small, a null tensor, a rank above JW_MAX_RANK, a warmup tensor, an
// unknown kind), which validation refuses, make no image: capture() is false
// and the launch validates.
#pragma once

#include <jitwarm/jitwarm.h>

#include <array>
#include <cstdint>
#include <span>

#include "last_result_memo.hpp"

namespace jitwarm::detail {

class ArgumentImage {
 public:
  static constexpr uint32_t kMaxWords = 128;

  ArgumentImage() = default;
  ArgumentImage(const ArgumentImage&) = delete;
  ArgumentImage& operator=(const ArgumentImage&) = delete;

  // False (and no image) for what the header says, or when the image would
  // take more than kMaxWords words.
  bool capture(std::span<const jw_arg_value> args, int32_t device);
  std::span<const uint64_t> words() const { return {words_.data(), size_}; }
  // Whether the image of these arguments is `key`, read as capture() would
  // write it but compared word by word, without writing it (a launch that
  // repeats the last one pays for no copy).
  static bool matches(std::span<const jw_arg_value> args, int32_t device,
                      const MemoKey& key);

 private:
  // The image's words, each passed to put(word) in order, which returns
  // false to stop (then walk() is false): the one definition of the image.
  template <typename Put>
  static bool walk(std::span<const jw_arg_value> args, int32_t device,
                   Put&& put);

  // Not value-initialized: capture() writes the words it uses.
  std::array<uint64_t, kMaxWords> words_;
  uint32_t size_ = 0;
};

}  // namespace jitwarm::detail
