// dtype_info.hpp — what the CPU reference knows about jw_dtype: names for
// messages and instantiation names, element sizes, the C++ type that holds
// each dtype on the host, and float32 load/store for the float kernels.
//
// Names, sizes and host types come from the plugin SDK's one dtype table
// (jitwarm/plugin/dtype.hpp); the float32 load/store policy is the
// reference's own.
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/dtype.hpp>
#include <jitwarm/plugin/float16.hpp>

namespace jitwarm::reference_cpu {

using plugin::dtype_info;
using plugin::dtype_name;
using plugin::DtypeInfo;
using plugin::DtypeOf;
using plugin::kDtypeOf;

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
