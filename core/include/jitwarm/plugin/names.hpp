// jitwarm/plugin/names.hpp — the names of jitwarm.h's small enums, as
// descriptors, schemas, messages and the Python binding spell them: a
// parameter's kind ("tensor"), a scalar's kind ("uint"), an integer's type
// ("i64") and value class ("div16"), and a dtype set as a list of dtype
// names. One table each, read both ways (name -> value for parsing).
//
// The core, the CLI, the Python binding and the plugins all name these from
// here, as Vulkan's vk_enum_string_helper.h names VkResult. A name lookup
// gives nullopt for a value outside the table: each caller says what it
// shows then ("unknown", "?"), so no message changes with the table.
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/dtype.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace jitwarm::plugin {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

// jw_param_kind: the `kind` of a [[param]] table, and of Python's ParamDesc.
inline constexpr EnumName<jw_param_kind> kParamKindNames[] = {
    {JW_PARAM_TENSOR, "tensor"}, {JW_PARAM_INT, "int"},
    {JW_PARAM_FLOAT, "float"},   {JW_PARAM_CONSTEXPR, "constexpr"},
    {JW_PARAM_SCALAR, "scalar"},
};

// jw_scalar_kind, the kinds that hold a value (JW_SCALAR_NONE has no name).
inline constexpr EnumName<jw_scalar_kind> kScalarKindNames[] = {
    {JW_SCALAR_INT, "int"},
    {JW_SCALAR_UINT, "uint"},
    {JW_SCALAR_FLOAT, "float"},
    {JW_SCALAR_BOOL, "bool"},
};

// jw_int_type: as compile-key text and descriptors' extra_args write it.
inline constexpr EnumName<jw_int_type> kIntTypeNames[] = {
    {JW_INT_I32, "i32"},
    {JW_INT_I64, "i64"},
    {JW_INT_U64, "u64"},
};

// jw_int_class: as Python's IntSpec writes it.
inline constexpr EnumName<jw_int_class> kIntClassNames[] = {
    {JW_INT_CLASS_NONE, "none"},
    {JW_INT_CLASS_ONE, "one"},
    {JW_INT_CLASS_DIV16, "div16"},
};

// The name of `value` in `table`; nullopt for a value it does not list.
template <typename Enum, std::size_t N>
constexpr std::optional<std::string_view> name_in(
    const EnumName<Enum> (&table)[N], Enum value) {
  for (const EnumName<Enum>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return std::nullopt;
}

// The value `table` names `name`; nullopt for a name it does not list.
template <typename Enum, std::size_t N>
constexpr std::optional<Enum> value_in(const EnumName<Enum> (&table)[N],
                                       std::string_view name) {
  for (const EnumName<Enum>& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

constexpr std::optional<std::string_view> param_kind_name(jw_param_kind kind) {
  return name_in(kParamKindNames, kind);
}
constexpr std::optional<jw_param_kind> param_kind_from_name(
    std::string_view name) {
  return value_in(kParamKindNames, name);
}

constexpr std::optional<std::string_view> scalar_kind_name(
    jw_scalar_kind kind) {
  return name_in(kScalarKindNames, kind);
}

constexpr std::optional<std::string_view> int_type_name(jw_int_type type) {
  return name_in(kIntTypeNames, type);
}
constexpr std::optional<jw_int_type> int_type_from_name(std::string_view name) {
  return value_in(kIntTypeNames, name);
}

constexpr std::optional<std::string_view> int_class_name(jw_int_class cls) {
  return name_in(kIntClassNames, cls);
}
constexpr std::optional<jw_int_class> int_class_from_name(
    std::string_view name) {
  return value_in(kIntClassNames, name);
}

// The dtypes of `set` by name, in enum order, separated by ", ":
// "float16, bfloat16" (empty for an empty set; bits beyond the enum are
// not named).
inline std::string dtype_set_names(jw_dtype_set set) {
  std::string out;
  for (int d = JW_DTYPE_BOOL; d < JW_DTYPE_COUNT; ++d) {
    if ((set & JW_DTYPE_BIT(d)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += dtype_name(static_cast<jw_dtype>(d));
  }
  return out;
}

}  // namespace jitwarm::plugin
