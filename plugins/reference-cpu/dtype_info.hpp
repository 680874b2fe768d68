// dtype_info.hpp — what the CPU reference knows about jw_dtype: names for
// messages and instantiation names, element sizes, the C++ type that holds
// each dtype on the host, and float32 load/store for the float kernels.
//
// The reference plugin may not link libjitwarm (plugins use only the C ABI),
// so it keeps this small table itself. Short names follow the core's
// compile-key text ("fp16", "bf16", "i32", ...).
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "float16.hpp"

namespace jitwarm::reference_cpu {

struct DtypeInfo {
  std::string_view name;        // "bfloat16": messages
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

// The jw_dtype a host C++ type stores.
template <typename T>
struct DtypeOf;
template <>
struct DtypeOf<int32_t> {
  static constexpr jw_dtype value = JW_DTYPE_INT32;
};
template <>
struct DtypeOf<int64_t> {
  static constexpr jw_dtype value = JW_DTYPE_INT64;
};
template <>
struct DtypeOf<uint8_t> {
  static constexpr jw_dtype value = JW_DTYPE_UINT8;
};
template <>
struct DtypeOf<float> {
  static constexpr jw_dtype value = JW_DTYPE_FLOAT32;
};
template <>
struct DtypeOf<numeric::Float16> {
  static constexpr jw_dtype value = JW_DTYPE_FLOAT16;
};
template <>
struct DtypeOf<numeric::BFloat16> {
  static constexpr jw_dtype value = JW_DTYPE_BFLOAT16;
};

template <typename T>
inline constexpr jw_dtype kDtypeOf = DtypeOf<T>::value;

// The float kernels compute in float32: widen on load (exact), round once
// on store.
inline float load_as_float(float value) {
  return value;
}
inline float load_as_float(numeric::Float16 value) {
  return value.to_float();
}
inline float load_as_float(numeric::BFloat16 value) {
  return value.to_float();
}

template <typename T>
T store_from_float(float value);
template <>
inline float store_from_float<float>(float value) {
  return value;
}
template <>
inline numeric::Float16 store_from_float<numeric::Float16>(float value) {
  return numeric::Float16::from_float(value);
}
template <>
inline numeric::BFloat16 store_from_float<numeric::BFloat16>(float value) {
  return numeric::BFloat16::from_float(value);
}

}  // namespace jitwarm::reference_cpu
