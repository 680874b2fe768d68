// jitwarm/plugin/raw_enum.hpp — reading an enum that came through the C ABI.
//
// A C caller may put any integer in an enum field (R4: an unknown value is
// an error). jitwarm.h gives its enums int32_t as their fixed underlying
// type in C++ (JW_ENUM_BASE), so such a field always holds a value of its
// type; a field of a struct from the other side (a jw_dtype in a tensor, a
// jw_value_kind in an argument) is still read as its integer first,
// checked against the enumerators, and only then used as the enum.
#pragma once

#include <cstring>
#include <optional>
#include <type_traits>

namespace jitwarm::plugin {

// The integer inside `value`, read through memcpy (never loaded as Enum).
template <typename Enum>
int raw_enum(const Enum& value) {
  static_assert(std::is_enum_v<Enum>);
  std::underlying_type_t<Enum> raw;
  std::memcpy(&raw, &value, sizeof raw);
  return static_cast<int>(raw);
}

// `value` as its enum type when its integer lies in [first, last]; nullopt
// otherwise. For enums numbered without gaps, as jitwarm.h's are:
// known_enum(tensor.meta.dtype, JW_DTYPE_BOOL, JW_DTYPE_FLOAT64).
template <typename Enum>
std::optional<Enum> known_enum(const Enum& value, Enum first, Enum last) {
  const int raw = raw_enum(value);
  if (raw < static_cast<int>(first) || raw > static_cast<int>(last)) {
    return std::nullopt;
  }
  return static_cast<Enum>(raw);
}

}  // namespace jitwarm::plugin
