// Tests for the plugin SDK's data headers: jitwarm/plugin/dtype.hpp (the
// plugins' dtype table and host types) and jitwarm/plugin/raw_enum.hpp
// (enums read from C).
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>
#include <jitwarm/plugin/dtype.hpp>
#include <jitwarm/plugin/raw_enum.hpp>

#include <cstdint>
#include <cstring>
#include <string>

namespace {

namespace sdk = jitwarm::plugin;

TEST_CASE(
    "given every dtype, when the SDK table and the core are asked, then "
    "names, short names and sizes agree, and the name reads back") {
  for (int d = JW_DTYPE_BOOL; d < JW_DTYPE_COUNT; ++d) {
    const auto dtype = static_cast<jw_dtype>(d);
    CAPTURE(d);
    const sdk::DtypeInfo info = sdk::dtype_info(dtype);
    CHECK(info.name == jitwarm::dtype_name(dtype));
    CHECK(std::string(info.name) == jw_dtype_name(dtype));
    CHECK(info.short_name == jitwarm::dtype_short_name(dtype));
    CHECK(info.size == jitwarm::dtype_size(dtype));
    CHECK(sdk::dtype_size(dtype) == info.size);
    CHECK(sdk::dtype_from_name(info.name) == dtype);
  }
}

TEST_CASE(
    "given names that are no dtype, when looked up, then there is none; "
    "given the invalid dtype, then its name is 'invalid' and its size 0") {
  CHECK_FALSE(sdk::dtype_from_name("").has_value());
  CHECK_FALSE(sdk::dtype_from_name("float").has_value());
  CHECK_FALSE(sdk::dtype_from_name("fp32").has_value());  // short names: no
  CHECK_FALSE(sdk::dtype_from_name("invalid").has_value());
  CHECK(sdk::dtype_name(JW_DTYPE_INVALID) == "invalid");
  CHECK(sdk::dtype_size(JW_DTYPE_INVALID) == 0);
  static_assert(sdk::dtype_from_name("bfloat16") == JW_DTYPE_BFLOAT16);
}

template <typename T>
void check_host_type(jw_dtype expected) {
  static_assert(sizeof(T) > 0);
  CHECK(sdk::kDtypeOf<T> == expected);
  CHECK(sdk::dtype_size(sdk::kDtypeOf<T>) == sizeof(T));
}

TEST_CASE(
    "given the host type of each dtype, then kDtypeOf names it and its "
    "size is the dtype's") {
  check_host_type<bool>(JW_DTYPE_BOOL);
  check_host_type<int8_t>(JW_DTYPE_INT8);
  check_host_type<int16_t>(JW_DTYPE_INT16);
  check_host_type<int32_t>(JW_DTYPE_INT32);
  check_host_type<int64_t>(JW_DTYPE_INT64);
  check_host_type<uint8_t>(JW_DTYPE_UINT8);
  check_host_type<uint16_t>(JW_DTYPE_UINT16);
  check_host_type<uint32_t>(JW_DTYPE_UINT32);
  check_host_type<uint64_t>(JW_DTYPE_UINT64);
  check_host_type<jitwarm::numeric::Float16>(JW_DTYPE_FLOAT16);
  check_host_type<jitwarm::numeric::BFloat16>(JW_DTYPE_BFLOAT16);
  check_host_type<float>(JW_DTYPE_FLOAT32);
  check_host_type<double>(JW_DTYPE_FLOAT64);
}

// A jw_dtype field as a C caller may fill it: any int.
jw_tensor_meta meta_with_raw_dtype(int raw) {
  jw_tensor_meta meta{};
  static_assert(sizeof(meta.dtype) == sizeof(int));
  std::memcpy(&meta.dtype, &raw, sizeof raw);
  return meta;
}

TEST_CASE(
    "given enum fields holding values inside and outside the enum, when "
    "read through raw_enum and known_enum, then the integer comes back and "
    "only known values become the enum (no out-of-range load: UBSan)") {
  for (int raw : {0, 1, 13, 14, 77, -1, 0x7fffffff}) {
    CAPTURE(raw);
    const jw_tensor_meta meta = meta_with_raw_dtype(raw);
    CHECK(sdk::raw_enum(meta.dtype) == raw);
    const auto known =
        sdk::known_enum(meta.dtype, JW_DTYPE_BOOL, JW_DTYPE_FLOAT64);
    if (raw >= JW_DTYPE_BOOL && raw <= JW_DTYPE_FLOAT64) {
      REQUIRE(known.has_value());
      CHECK(static_cast<int>(*known) == raw);
    } else {
      CHECK_FALSE(known.has_value());
    }
  }
}

}  // namespace
