#include "argument_image.hpp"

#include <cstring>

#include "argument_fields.hpp"

namespace jitwarm::detail {
namespace {

uint64_t pair(uint32_t low, uint64_t high) {
  return static_cast<uint64_t>(low) | high << 32;
}

}  // namespace

template <typename Put>
bool ArgumentImage::walk(std::span<const jw_arg_value> args, int32_t device,
                         Put&& put) {
  if (!put(args.size()) || !put(static_cast<uint32_t>(device))) return false;
  for (const jw_arg_value& a : args) {
    // Every accessor of the fields, in the header's words.
    ArgumentFields f(a, ArgumentUse::launch);
    // Validation refuses an argument where a guard stopped reading it.
    if (f.stopped_at() != FieldGuard::none) return false;
    const auto kind = static_cast<uint32_t>(f.kind());
    if (kind == JW_VALUE_SCALAR) {
      const jw_scalar& s = f.scalar();
      uint64_t bits = 0;
      std::memcpy(&bits, &s.value, sizeof bits);
      if (!put(pair(kind, static_cast<uint32_t>(raw_enum(s.kind)))) ||
          !put(bits)) {
        return false;
      }
      continue;
    }
    // A runtime tensor: a launch stops at a warmup tensor.
    if (!put(pair(JW_VALUE_TENSOR, f.rank())) ||
        !put(pair(static_cast<uint32_t>(f.dtype()), f.flags())) ||
        !put(pair(
            static_cast<uint32_t>(f.device_index()),
            (f.data_null() ? 1u : 0u) | (f.data_aligned_16() ? 2u : 0u)))) {
      return false;
    }
    for (const int64_t extent : f.shape()) {
      if (!put(static_cast<uint64_t>(extent))) return false;
    }
    for (const int64_t stride : f.strides()) {
      if (!put(static_cast<uint64_t>(stride))) return false;
    }
  }
  return true;
}

bool ArgumentImage::capture(std::span<const jw_arg_value> args,
                            int32_t device) {
  uint32_t n = 0;
  const bool whole = walk(args, device, [&](uint64_t word) {
    if (n == kMaxWords) return false;
    words_[n++] = word;
    return true;
  });
  size_ = whole ? n : 0;
  return whole;
}

bool ArgumentImage::matches(std::span<const jw_arg_value> args, int32_t device,
                            const MemoKey& kept) {
  // A copy the compiler keeps in registers: through the reference, each
  // word's atomic load would load the key's pointer again.
  MemoKey key = kept;
  const std::size_t size = key.size();
  std::size_t n = 0;
  return walk(args, device,
              [&](uint64_t word) { return n < size && key[n++] == word; }) &&
         n == size;
}

}  // namespace jitwarm::detail
