// Tests for the plugin SDK's names (jitwarm/plugin/names.hpp): every table
// reads back both ways, values outside a table have no name, and dtype sets
// are listed in enum order.
#include <doctest/doctest.h>
#include <jitwarm/plugin/names.hpp>

#include <set>
#include <string>
#include <string_view>

namespace {

namespace sdk = jitwarm::plugin;

template <typename Enum, std::size_t N>
void check_table(const sdk::EnumName<Enum> (&table)[N]) {
  std::set<std::string_view> names;
  for (const auto& entry : table) {
    CAPTURE(entry.name);
    CHECK(names.insert(entry.name).second);
    CHECK(sdk::name_in(table, entry.value) == entry.name);
    CHECK(sdk::value_in(table, entry.name) == entry.value);
  }
  CHECK_FALSE(sdk::value_in(table, "").has_value());
  CHECK_FALSE(sdk::value_in(table, "unknown").has_value());
}

TEST_CASE(
    "given each name table, then every entry reads back both ways and "
    "names are distinct") {
  check_table(sdk::kParamKindNames);
  check_table(sdk::kScalarKindNames);
  check_table(sdk::kIntTypeNames);
  check_table(sdk::kIntClassNames);
}

TEST_CASE(
    "given the enums' values, then the names are the ones descriptors, "
    "key text and Python write, and values without a name have none") {
  static_assert(sdk::param_kind_name(JW_PARAM_CONSTEXPR) == "constexpr");
  static_assert(sdk::param_kind_from_name("scalar") == JW_PARAM_SCALAR);
  static_assert(sdk::int_type_name(JW_INT_U64) == "u64");
  static_assert(sdk::int_type_from_name("i32") == JW_INT_I32);
  static_assert(sdk::int_class_name(JW_INT_CLASS_DIV16) == "div16");
  static_assert(sdk::int_class_from_name("one") == JW_INT_CLASS_ONE);
  CHECK(sdk::scalar_kind_name(JW_SCALAR_UINT) == "uint");
  CHECK_FALSE(sdk::scalar_kind_name(JW_SCALAR_NONE).has_value());
  CHECK_FALSE(sdk::param_kind_name(static_cast<jw_param_kind>(0)).has_value());
  CHECK_FALSE(sdk::int_type_name(static_cast<jw_int_type>(0)).has_value());
  CHECK_FALSE(sdk::param_kind_from_name("Tensor").has_value());
}

TEST_CASE(
    "given dtype sets, then their names are listed in enum order, and an "
    "empty set (or the invalid bit alone) lists nothing") {
  CHECK(sdk::dtype_set_names(0) == "");
  CHECK(sdk::dtype_set_names(JW_DTYPE_BIT(JW_DTYPE_INVALID)) == "");
  CHECK(sdk::dtype_set_names(JW_DTYPE_BIT(JW_DTYPE_FLOAT32)) == "float32");
  CHECK(sdk::dtype_set_names(
            JW_DTYPE_BIT(JW_DTYPE_BFLOAT16) | JW_DTYPE_BIT(JW_DTYPE_FLOAT16) |
            JW_DTYPE_BIT(JW_DTYPE_BOOL)) == "bool, float16, bfloat16");
}

}  // namespace
