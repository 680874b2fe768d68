// jitwarm/plugin/dtype.hpp — what a plugin knows about jw_dtype: names as
// descriptors and messages write them, the short names of compile-key text,
// element sizes, and the host C++ type that holds each dtype.
//
// A plugin uses only the C ABI (it never links libjitwarm), so the table
// lives here, in the SDK: one table for every plugin, bundled or not, and
// the core's too (jitwarm::dtype_name, dtype_short_name and dtype_size read
// it, core/src/tensor.cpp).
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/float16.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace jitwarm::plugin {

struct DtypeInfo {
  std::string_view name;        // "bfloat16": descriptors and messages
  std::string_view short_name;  // "bf16": instantiation names, key text
  std::size_t size;             // bytes per element
};

// {"invalid", "invalid", 0} for values outside the enum. A dtype read from
// a C struct is checked with raw_enum (raw_enum.hpp) before it is passed
// here as a jw_dtype.
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

// The jw_dtype a host C++ type stores: kDtypeOf<float> is JW_DTYPE_FLOAT32.
// 16-bit floats are numeric::Float16 and numeric::BFloat16 (float16.hpp),
// which have the device's layout. A type without a dtype does not compile.
template <typename T>
struct DtypeOf;

#define JITWARM_PLUGIN_DTYPE_OF(type, dtype)   \
  template <>                                  \
  struct DtypeOf<type> {                       \
    static constexpr jw_dtype value = (dtype); \
  }
JITWARM_PLUGIN_DTYPE_OF(bool, JW_DTYPE_BOOL);
JITWARM_PLUGIN_DTYPE_OF(int8_t, JW_DTYPE_INT8);
JITWARM_PLUGIN_DTYPE_OF(int16_t, JW_DTYPE_INT16);
JITWARM_PLUGIN_DTYPE_OF(int32_t, JW_DTYPE_INT32);
JITWARM_PLUGIN_DTYPE_OF(int64_t, JW_DTYPE_INT64);
JITWARM_PLUGIN_DTYPE_OF(uint8_t, JW_DTYPE_UINT8);
JITWARM_PLUGIN_DTYPE_OF(uint16_t, JW_DTYPE_UINT16);
JITWARM_PLUGIN_DTYPE_OF(uint32_t, JW_DTYPE_UINT32);
JITWARM_PLUGIN_DTYPE_OF(uint64_t, JW_DTYPE_UINT64);
JITWARM_PLUGIN_DTYPE_OF(numeric::Float16, JW_DTYPE_FLOAT16);
JITWARM_PLUGIN_DTYPE_OF(numeric::BFloat16, JW_DTYPE_BFLOAT16);
JITWARM_PLUGIN_DTYPE_OF(float, JW_DTYPE_FLOAT32);
JITWARM_PLUGIN_DTYPE_OF(double, JW_DTYPE_FLOAT64);
#undef JITWARM_PLUGIN_DTYPE_OF

template <typename T>
inline constexpr jw_dtype kDtypeOf = DtypeOf<T>::value;

}  // namespace jitwarm::plugin
