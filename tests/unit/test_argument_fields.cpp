// ArgumentFields (core/src/argument_fields.hpp): the fields of one argument
// and the guards in front of them, read in validation's order. That
// validation reads only these and the image writes them all is shown
// through the launch path (test_launch.cpp, "given a remembered launch ...").
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "argument_fields.hpp"

using namespace jitwarm;
using jitwarm::detail::ArgumentFields;
using jitwarm::detail::ArgumentUse;
using jitwarm::detail::FieldGuard;

namespace {

// Storage for the tensors below: 16-byte aligned at its start, not one
// element in.
alignas(16) std::array<float, 8> storage{};

// A 2x4 tensor on device 3 over `storage`, with `strides` if any.
jw_tensor two_by_four(jw_dtype dtype, std::span<const int64_t> strides = {},
                      std::size_t offset = 0) {
  const std::array<int64_t, 2> shape{2, 4};
  return strides.empty()
             ? make_tensor(storage.data() + offset, dtype, shape, 3)
             : make_tensor(storage.data() + offset, dtype, shape, strides, 3);
}

std::vector<int64_t> as_vector(std::span<const int64_t> values) {
  return {values.begin(), values.end()};
}

}  // namespace

TEST_CASE(
    "given a runtime tensor, then its fields are its metadata, device and "
    "what is read of its pointer") {
  const std::array<int64_t, 2> column_major{1, 2};
  const jw_tensor strided = two_by_four(JW_DTYPE_FLOAT16, column_major);
  const jw_arg_value a = arg(strided);
  const ArgumentFields f(a, ArgumentUse::launch);
  REQUIRE(f.stopped_at() == FieldGuard::none);
  CHECK(f.kind() == JW_VALUE_TENSOR);
  CHECK(f.dtype() == JW_DTYPE_FLOAT16);
  CHECK(f.rank() == 2);
  CHECK(f.flags() == strided.meta.flags);
  CHECK(f.has_strides());
  CHECK(as_vector(f.shape()) == std::vector<int64_t>{2, 4});
  CHECK(as_vector(f.strides()) == std::vector<int64_t>{1, 2});
  CHECK_FALSE(f.compact_row_major());
  CHECK(f.device_index() == 3);
  CHECK_FALSE(f.data_null());
  CHECK(f.data_aligned_16());

  // Without HAS_STRIDES there are no strides to read, whatever the pointer.
  const jw_tensor compact = two_by_four(JW_DTYPE_FLOAT32, {}, 1);
  const jw_arg_value b = arg(compact);
  const ArgumentFields g(b, ArgumentUse::launch);
  REQUIRE(g.stopped_at() == FieldGuard::none);
  CHECK_FALSE(g.has_strides());
  CHECK(g.strides().empty());
  CHECK(g.compact_row_major());
  CHECK_FALSE(g.data_aligned_16());
}

TEST_CASE(
    "given a scalar or a warmup tensor, then its fields are the scalar as "
    "passed or the metadata, and a launch stops at the warmup tensor") {
  const jw_arg_value s = arg_int(-5);
  const ArgumentFields scalar(s, ArgumentUse::launch);
  REQUIRE(scalar.stopped_at() == FieldGuard::none);
  CHECK(scalar.kind() == JW_VALUE_SCALAR);
  CHECK(scalar.scalar().kind == JW_SCALAR_INT);
  CHECK(scalar.scalar().value.i == -5);

  const jw_tensor_meta meta = two_by_four(JW_DTYPE_INT32).meta;
  const jw_arg_value w = warmup_arg(meta);
  const ArgumentFields key(w, ArgumentUse::key);
  REQUIRE(key.stopped_at() == FieldGuard::none);
  CHECK(key.kind() == JW_VALUE_WARMUP_TENSOR);
  CHECK(key.dtype() == JW_DTYPE_INT32);
  CHECK(as_vector(key.shape()) == std::vector<int64_t>{2, 4});
  CHECK(ArgumentFields(w, ArgumentUse::launch).stopped_at() ==
        FieldGuard::warmup_launched);
  jw_arg_value no_meta = w;
  no_meta.value.meta = nullptr;
  CHECK(ArgumentFields(no_meta, ArgumentUse::key).stopped_at() ==
        FieldGuard::meta_null);
}

TEST_CASE(
    "given arguments a guard refuses, then reading stops at the first guard "
    "in validation's order, with the struct size it refused") {
  const jw_tensor good = two_by_four(JW_DTYPE_FLOAT32);
  const auto stop = [](const jw_arg_value& a) {
    return ArgumentFields(a, ArgumentUse::launch).stopped_at();
  };

  // The argument's own size comes before its kind.
  jw_arg_value small = arg(good);
  small.struct_size = 4;
  small.kind = static_cast<jw_value_kind>(9);
  const ArgumentFields small_fields(small, ArgumentUse::launch);
  CHECK(small_fields.stopped_at() == FieldGuard::argument_struct);
  CHECK(small_fields.refused_struct_size() == 4);
  jw_arg_value unknown = arg(good);
  unknown.kind = static_cast<jw_value_kind>(0);
  CHECK(stop(unknown) == FieldGuard::unknown_kind);

  // A tensor: its pointer, its size, its metadata's size, then its rank.
  jw_arg_value null_tensor = arg(good);
  null_tensor.value.tensor = nullptr;
  CHECK(stop(null_tensor) == FieldGuard::tensor_null);
  jw_tensor t = good;
  t.struct_size = 8;
  t.meta.struct_size = 8;
  const jw_arg_value small_tensor = arg(t);
  const ArgumentFields small_tensor_fields(small_tensor, ArgumentUse::launch);
  CHECK(small_tensor_fields.stopped_at() == FieldGuard::tensor_struct);
  CHECK(small_tensor_fields.refused_struct_size() == 8);
  t = good;
  t.meta.struct_size = 12;
  t.meta.rank = JW_MAX_RANK + 1;
  t.meta.dtype = static_cast<jw_dtype>(200);
  const jw_arg_value small_meta = arg(t);
  const ArgumentFields small_meta_fields(small_meta, ArgumentUse::launch);
  CHECK(small_meta_fields.stopped_at() == FieldGuard::meta_struct);
  CHECK(small_meta_fields.refused_struct_size() == 12);
  // The dtype is not behind the metadata's size: validation names it first.
  CHECK(small_meta_fields.dtype() == 200);
  t = good;
  t.meta.rank = JW_MAX_RANK + 1;
  const jw_arg_value deep = arg(t);
  const ArgumentFields deep_fields(deep, ArgumentUse::launch);
  CHECK(deep_fields.stopped_at() == FieldGuard::rank);
  CHECK(deep_fields.rank() == JW_MAX_RANK + 1);
}
