// The jw_dtype table the plugins share: names as descriptors and messages
// write them, the short names of compile-key text, and element sizes. A
// plugin uses only the C ABI (it may not link libjitwarm), so this is its
// copy of what the core knows about dtypes; one table for every plugin.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <optional>
#include <string_view>

namespace jitwarm::plugin {

struct DtypeInfo {
  std::string_view name;        // "bfloat16": descriptors and messages
  std::string_view short_name;  // "bf16": instantiation names
  std::size_t size;             // bytes per element
};

// {"invalid", "invalid", 0} for values outside the enum.
constexpr DtypeInfo dtype_info(jw_dtype dtype) {
  switch (dtype) {
    case JW_DTYPE_BOOL: return {"bool", "i1", 1};
    case JW_DTYPE_INT8: return {"int8", "i8", 1};
    case JW_DTYPE_INT16: return {"int16", "i16", 2};
    case JW_DTYPE_INT32: return {"int32", "i32", 4};
    case JW_DTYPE_INT64: return {"int64", "i64", 8};
    case JW_DTYPE_UINT8: return {"uint8", "u8", 1};
    case JW_DTYPE_UINT16: return {"uint16", "u16", 2};
    case JW_DTYPE_UINT32: return {"uint32", "u32", 4};
    case JW_DTYPE_UINT64: return {"uint64", "u64", 8};
    case JW_DTYPE_FLOAT16: return {"float16", "fp16", 2};
    case JW_DTYPE_BFLOAT16: return {"bfloat16", "bf16", 2};
    case JW_DTYPE_FLOAT32: return {"float32", "fp32", 4};
    case JW_DTYPE_FLOAT64: return {"float64", "fp64", 8};
    case JW_DTYPE_INVALID: break;
  }
  return {"invalid", "invalid", 0};
}

constexpr std::string_view dtype_name(jw_dtype dtype) {
  return dtype_info(dtype).name;
}

constexpr std::size_t dtype_size(jw_dtype dtype) {
  return dtype_info(dtype).size;
}

// The dtype of a (long) name, e.g. "float32"; nullopt for anything else.
constexpr std::optional<jw_dtype> dtype_from_name(std::string_view name) {
  for (int d = JW_DTYPE_BOOL; d < JW_DTYPE_COUNT; ++d) {
    if (dtype_info(static_cast<jw_dtype>(d)).name == name) {
      return static_cast<jw_dtype>(d);
    }
  }
  return std::nullopt;
}

}  // namespace jitwarm::plugin
