#include "argument_image.hpp"

#include "errors.hpp"

#include <cstddef>
#include <cstring>

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
    // Validation refuses a struct too small for what it reads: a guard,
    // not a word (each size that passes reads the same).
    if (a.struct_size < offsetof(jw_arg_value, value) + sizeof(a.value)) {
      return false;
    }
    // Enums as stored, whole (a C caller may pass any value), so an unknown
    // one never matches a known one.
    const auto kind = static_cast<uint32_t>(raw_enum(a.kind));
    if (kind == JW_VALUE_SCALAR) {
      uint64_t bits = 0;
      std::memcpy(&bits, &a.value.scalar.value, sizeof bits);
      if (!put(pair(kind,
                    static_cast<uint32_t>(raw_enum(a.value.scalar.kind)))) ||
          !put(bits)) {
        return false;
      }
      continue;
    }
    if (kind != JW_VALUE_TENSOR || a.value.tensor == nullptr) return false;
    const jw_tensor& t = *a.value.tensor;
    if (t.struct_size < offsetof(jw_tensor, device_index) + sizeof(int32_t) ||
        t.meta.struct_size < sizeof(jw_tensor_meta) ||
        t.meta.rank > JW_MAX_RANK) {
      return false;
    }
    const jw_tensor_meta& m = t.meta;
    const auto data = reinterpret_cast<uintptr_t>(t.data);
    if (!put(pair(kind, m.rank)) ||
        !put(pair(static_cast<uint32_t>(raw_enum(m.dtype)), m.flags)) ||
        !put(pair(static_cast<uint32_t>(t.device_index),
                  (data == 0 ? 1u : 0u) | (data % 16 == 0 ? 2u : 0u)))) {
      return false;
    }
    for (uint32_t i = 0; i < m.rank; ++i) {
      if (!put(static_cast<uint64_t>(m.shape[i]))) return false;
    }
    if ((m.flags & JW_TENSOR_HAS_STRIDES) != 0) {
      for (uint32_t i = 0; i < m.rank; ++i) {
        if (!put(static_cast<uint64_t>(m.strides[i]))) return false;
      }
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
                            const MemoKey& key) {
  const std::size_t size = key.size();
  std::size_t n = 0;
  return walk(args, device,
              [&](uint64_t word) { return n < size && key[n++] == word; }) &&
         n == size;
}

}  // namespace jitwarm::detail
