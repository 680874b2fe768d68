// Builders for the C ABI's schema structs (jw_param_desc), so a schema table
// reads as a list of parameters rather than of positional initializers. Used
// by the kernel-set table and by tests that define their own schemas.
// Header-only and constexpr: a plugin's tables stay static data.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>

namespace jitwarm::schema_builders {

constexpr jw_dtype_set bit(jw_dtype d) {
  return JW_DTYPE_BIT(d);
}

constexpr jw_scalar no_default() {
  return jw_scalar{JW_SCALAR_NONE, {0}};
}
constexpr jw_scalar int_default(int64_t v) {
  jw_scalar s{JW_SCALAR_INT, {0}};
  s.value.i = v;
  return s;
}

// A tensor; `dtypes` 0 = any, `rank` -1 = any.
constexpr jw_param_desc tensor(const char* name, jw_dtype_set dtypes,
                               int32_t rank, uint32_t flags = 0,
                               const char* same_dtype_as = nullptr) {
  return jw_param_desc{sizeof(jw_param_desc),
                       nullptr,
                       name,
                       JW_PARAM_TENSOR,
                       flags,
                       dtypes,
                       rank,
                       no_default(),
                       same_dtype_as};
}
constexpr jw_param_desc integer(const char* name, uint32_t flags = 0) {
  return jw_param_desc{
      sizeof(jw_param_desc), nullptr, name, JW_PARAM_INT, flags, 0, -1,
      no_default(),          nullptr};
}
constexpr jw_param_desc floating(const char* name, uint32_t flags = 0) {
  return jw_param_desc{
      sizeof(jw_param_desc), nullptr, name, JW_PARAM_FLOAT, flags, 0, -1,
      no_default(),          nullptr};
}
// An int or a float as passed; `tensor_name` (may be null) decides its kind.
constexpr jw_param_desc scalar_like(const char* name, const char* tensor_name,
                                    uint32_t flags = 0) {
  return jw_param_desc{
      sizeof(jw_param_desc), nullptr,    name, JW_PARAM_SCALAR, flags, 0, -1,
      no_default(),          tensor_name};
}
constexpr jw_param_desc constexpr_param(const char* name) {
  return jw_param_desc{
      sizeof(jw_param_desc), nullptr, name, JW_PARAM_CONSTEXPR, 0, 0, -1,
      no_default(),          nullptr};
}
constexpr jw_param_desc constexpr_param(const char* name, int64_t fallback) {
  return jw_param_desc{sizeof(jw_param_desc),
                       nullptr,
                       name,
                       JW_PARAM_CONSTEXPR,
                       JW_PARAM_HAS_DEFAULT,
                       0,
                       -1,
                       int_default(fallback),
                       nullptr};
}

}  // namespace jitwarm::schema_builders
