// dtype_info.hpp — what the CPU reference knows about jw_dtype: names for
// messages and instantiation names, element sizes, the C++ type that holds
// each dtype on the host, and float32 load/store for the float kernels.
//
// Names and sizes come from the plugins' one dtype table
// (plugins/common/dtype_table.hpp).
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dtype_table.hpp"
#include "float16.hpp"

namespace jitwarm::reference_cpu {

using plugin::dtype_info;
using plugin::dtype_name;
using plugin::DtypeInfo;

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
