// Specialization rules and derive_key (core/src/specialization.cpp).
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include "schema_builders.hpp"

#include <array>
#include <cstring>

using namespace jitwarm;

namespace {
constexpr __int128 kOne = 1;

IntSpec spec(jw_int_type t, jw_int_class c) {
  return IntSpec{t, c};
}

// A schema exercising every parameter kind.
KernelSchema test_schema() {
  using namespace schema_builders;
  using namespace schema_builders;
  static const jw_param_desc params[] = {
      tensor("x", bit(JW_DTYPE_FLOAT16) | bit(JW_DTYPE_FLOAT32), 1,
             JW_PARAM_CONTIGUOUS),
      tensor("y", 0, 1,
             JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT | JW_PARAM_OUTPUT, "x"),
      integer("n"),
      integer("count", JW_PARAM_DO_NOT_SPECIALIZE),
      floating("eps"),
      scalar_like("fill", "x", JW_PARAM_DO_NOT_SPECIALIZE),
      constexpr_param("BLOCK", 128),
  };
  static const jw_kernel_schema schema = {
      sizeof(jw_kernel_schema), nullptr, "test.ns.kernel", "", params, 7, ""};
  return KernelSchema::from_c(schema, "test");
}

}  // namespace

TEST_CASE("given integers, when specialized, then type follows the range") {
  CHECK(specialize_integer(0).type == JW_INT_I32);
  CHECK(specialize_integer((kOne << 31) - 1).type == JW_INT_I32);
  CHECK(specialize_integer(-(kOne << 31)).type == JW_INT_I32);
  CHECK(specialize_integer(kOne << 31).type == JW_INT_I64);
  CHECK(specialize_integer(-(kOne << 31) - 1).type == JW_INT_I64);
  CHECK(specialize_integer((kOne << 63) - 1).type == JW_INT_I64);
  CHECK(specialize_integer(-(kOne << 63)).type == JW_INT_I64);
  CHECK(specialize_integer(kOne << 63).type == JW_INT_U64);
  CHECK(specialize_integer((kOne << 64) - 1).type == JW_INT_U64);
}

TEST_CASE(
    "given integers outside [-2^63, 2^64), when specialized, then it is an "
    "overflow error") {
  CHECK_THROWS_WITH_AS(specialize_integer(kOne << 64),
                       doctest::Contains("overflows"), Error);
  CHECK_THROWS_AS(specialize_integer(-(kOne << 63) - 1), Error);
}

TEST_CASE(
    "given values, when specialized, then the class is one, divisible by 16 or "
    "none") {
  CHECK(specialize_integer(1) == spec(JW_INT_I32, JW_INT_CLASS_ONE));
  CHECK(specialize_integer(0) == spec(JW_INT_I32, JW_INT_CLASS_DIV16));
  CHECK(specialize_integer(16) == spec(JW_INT_I32, JW_INT_CLASS_DIV16));
  CHECK(specialize_integer(-32) == spec(JW_INT_I32, JW_INT_CLASS_DIV16));
  CHECK(specialize_integer(17) == spec(JW_INT_I32, JW_INT_CLASS_NONE));
  CHECK(specialize_integer(-1) == spec(JW_INT_I32, JW_INT_CLASS_NONE));
  CHECK(specialize_integer(kOne << 40) == spec(JW_INT_I64, JW_INT_CLASS_DIV16));
  CHECK(specialize_integer((kOne << 64) - 1) ==
        spec(JW_INT_U64, JW_INT_CLASS_NONE));
}

TEST_CASE(
    "given do_not_specialize, when specialized, then only the type remains") {
  CHECK(specialize_integer(1, true) == spec(JW_INT_I32, JW_INT_CLASS_NONE));
  CHECK(specialize_integer(16, true) == spec(JW_INT_I32, JW_INT_CLASS_NONE));
  CHECK(specialize_integer(kOne << 33, true) ==
        spec(JW_INT_I64, JW_INT_CLASS_NONE));
}

TEST_CASE(
    "given values, when asked for the representative, then the "
    "representatives of docs/compile-keys.md hold") {
  const auto rep = [](__int128 v) {
    return scalar_specialization_rep(specialize_integer(v));
  };
  CHECK(rep(0) == 16);
  CHECK(rep(1) == 1);
  CHECK(rep((kOne << 31) - 1) == 2);
  CHECK(rep(kOne << 31) == (kOne << 31));
  CHECK(rep((kOne << 31) + 5) == (kOne << 31) + 1);
  CHECK(rep(kOne << 63) == (kOne << 63));
  CHECK(rep((kOne << 64) - 1) == (kOne << 63) + 1);
  // A representative specializes exactly like the values it stands for.
  for (__int128 v : {__int128{0}, __int128{1}, __int128{7}, kOne << 31,
                     (kOne << 31) + 3, kOne << 63, (kOne << 63) + 9}) {
    CHECK(specialize_integer(rep(v)) == specialize_integer(v));
  }
}

TEST_CASE(
    "given a warmup tensor and a real tensor with equal metadata, then keys "
    "are equal") {
  const KernelSchema schema = test_schema();
  alignas(16) float storage[8] = {};
  const std::array<int64_t, 1> shape{4};
  jw_tensor aligned = make_tensor(storage, JW_DTYPE_FLOAT32, shape);
  jw_tensor_meta warm = make_tensor_meta(JW_DTYPE_FLOAT32, shape, true);
  const std::array real_args{arg(aligned), arg(aligned),    arg_int(16),
                             arg_int(5),   arg_float(1e-6), arg_float(0.5)};
  const std::array warm_args{warmup_arg(warm), warmup_arg(warm),
                             arg_int(32),      arg_int(7),
                             arg_float(3.0),   arg_float(2.0)};
  const CompileKey a = derive_key(schema, real_args, "cpu:x86_64", "impl");
  const CompileKey b = derive_key(schema, warm_args, "cpu:x86_64", "impl");
  CHECK(a == b);
  CHECK(a.hash() == b.hash());

  // The alignment of a real tensor is read from its pointer.
  jw_tensor misaligned = make_tensor(reinterpret_cast<char*>(storage) + 4,
                                     JW_DTYPE_FLOAT32, shape);
  const std::array odd_args{arg(misaligned), arg(aligned), arg_int(16),
                            arg_int(5),      arg_float(0), arg_float(0)};
  const CompileKey c = derive_key(schema, odd_args, "cpu:x86_64", "impl");
  CHECK_FALSE(c == a);
  CHECK(c.params()[0].alignment == JW_ALIGN_NONE);
  // ... unless the schema says not to specialize on it.
  const std::array odd_y{arg(aligned), arg(misaligned), arg_int(16),
                         arg_int(5),   arg_float(0),    arg_float(0)};
  CHECK(derive_key(schema, odd_y, "cpu:x86_64", "impl") == a);
}

TEST_CASE(
    "given trailing constexprs with defaults, when omitted, then the default "
    "is used") {
  const KernelSchema schema = test_schema();
  const std::array<int64_t, 1> shape{4};
  jw_tensor_meta m = make_tensor_meta(JW_DTYPE_FLOAT16, shape);
  const std::array args{warmup_arg(m), warmup_arg(m), arg_int(3),
                        arg_int(3),    arg_float(0),  arg_float(0)};
  const CompileKey k = derive_key(schema, args, "t:x", "i");
  REQUIRE(k.params().size() == 7);
  CHECK(k.params()[6].constexpr_value.value.i == 128);
  CHECK(k.params()[5].scalar_kind == JW_SCALAR_FLOAT);
  // "A scalar of x's kind": with a float x, an integer fill keys as a float.
  const std::array int_fill{warmup_arg(m), warmup_arg(m), arg_int(3),
                            arg_int(3),    arg_float(0),  arg_int(1)};
  CHECK(derive_key(schema, int_fill, "t:x", "i") == k);
}

TEST_CASE(
    "given an integer tensor, when its scalar is a float, then the key is "
    "refused") {
  using namespace schema_builders;
  static const jw_param_desc params[] = {
      tensor("x", bit(JW_DTYPE_INT32) | bit(JW_DTYPE_FLOAT32), 1),
      scalar_like("fill", "x"),
  };
  static const jw_kernel_schema c = {
      sizeof(jw_kernel_schema), nullptr, "t.fill", "", params, 2, ""};
  const KernelSchema schema = KernelSchema::from_c(c, "test");
  const std::array<int64_t, 1> shape{4};
  jw_tensor_meta ints = make_tensor_meta(JW_DTYPE_INT32, shape);
  const std::array float_fill{warmup_arg(ints), arg_float(1.5)};
  CHECK_THROWS_WITH(
      derive_key(schema, float_fill, "t:x", "i"),
      doctest::Contains(
          "'fill' must be an integer, like 'x' (int32); got a float"));
  const std::array big_fill{warmup_arg(ints), arg_int(int64_t{1} << 40)};
  CHECK(derive_key(schema, big_fill, "t:x", "i").params()[1].int_spec ==
        IntSpec{JW_INT_I64, JW_INT_CLASS_DIV16});
}

TEST_CASE(
    "given wrong tensor metadata, when deriving a key, then the error names "
    "the problem") {
  const KernelSchema schema = test_schema();
  const std::array<int64_t, 1> shape{4};
  const std::array<int64_t, 2> shape2{2, 2};
  jw_tensor_meta f32 = make_tensor_meta(JW_DTYPE_FLOAT32, shape);
  jw_tensor_meta f16 = make_tensor_meta(JW_DTYPE_FLOAT16, shape);
  jw_tensor_meta i8 = make_tensor_meta(JW_DTYPE_INT8, shape);
  jw_tensor_meta rank2 = make_tensor_meta(JW_DTYPE_FLOAT32, shape2);
  const std::array<int64_t, 1> stride{2};
  jw_tensor_meta strided = make_tensor_meta(JW_DTYPE_FLOAT32, shape, stride);
  const auto key_of = [&](jw_arg_value x, jw_arg_value y) {
    const std::array args{x,           y, arg_int(3), arg_int(3), arg_float(0),
                          arg_float(0)};
    return derive_key(schema, args, "t:x", "i");
  };
  CHECK_THROWS_WITH(
      key_of(warmup_arg(i8), warmup_arg(i8)),
      doctest::Contains("'x' does not take int8 (allowed: float16, float32)"));
  CHECK_THROWS_WITH(key_of(warmup_arg(rank2), warmup_arg(f32)),
                    doctest::Contains("'x' must have rank 1, got rank 2"));
  CHECK_THROWS_WITH(key_of(warmup_arg(strided), warmup_arg(f32)),
                    doctest::Contains("'x' must be contiguous"));
  CHECK_THROWS_WITH(
      key_of(warmup_arg(f32), warmup_arg(f16)),
      doctest::Contains(
          "'y' must have the dtype of 'x' (float32), got float16"));
  CHECK_THROWS_WITH(key_of(arg_int(1), warmup_arg(f32)),
                    doctest::Contains("'x' takes a tensor, got an integer"));
  jw_tensor null_data = make_tensor(nullptr, JW_DTYPE_FLOAT32, shape);
  CHECK_THROWS_WITH(key_of(arg(null_data), warmup_arg(f32)),
                    doctest::Contains("null data"));
  // An empty tensor may have no storage.
  const std::array<int64_t, 1> empty_shape{0};
  jw_tensor empty = make_tensor(nullptr, JW_DTYPE_FLOAT32, empty_shape);
  CHECK_NOTHROW(key_of(arg(empty), warmup_arg(f32)));
}

TEST_CASE(
    "given wrong argument counts or kinds, when deriving a key, then errors "
    "are precise") {
  const KernelSchema schema = test_schema();
  const std::array<int64_t, 1> shape{4};
  jw_tensor_meta m = make_tensor_meta(JW_DTYPE_FLOAT32, shape);
  const std::array too_few{warmup_arg(m), warmup_arg(m), arg_int(3)};
  CHECK_THROWS_WITH(derive_key(schema, too_few, "t:x", "i"),
                    doctest::Contains("missing argument 'count'"));
  std::vector<jw_arg_value> too_many(8, arg_int(1));
  CHECK_THROWS_WITH(derive_key(schema, too_many, "t:x", "i"),
                    doctest::Contains("takes 7 arguments, got 8"));
  const std::array float_for_int{warmup_arg(m), warmup_arg(m), arg_float(3),
                                 arg_int(3),    arg_float(0),  arg_float(0)};
  CHECK_THROWS_WITH(derive_key(schema, float_for_int, "t:x", "i"),
                    doctest::Contains("'n' takes an integer"));
}

TEST_CASE(
    "given a u64 constexpr that fits int64, then it keys like the same int") {
  const KernelSchema schema = test_schema();
  const std::array<int64_t, 1> shape{4};
  jw_tensor_meta m = make_tensor_meta(JW_DTYPE_FLOAT32, shape);
  const std::array as_int{warmup_arg(m), warmup_arg(m), arg_int(3), arg_int(3),
                          arg_float(0),  arg_float(0),  arg_int(64)};
  const std::array as_uint{warmup_arg(m), warmup_arg(m), arg_int(3),
                           arg_int(3),    arg_float(0),  arg_float(0),
                           arg_uint(64)};
  CHECK(derive_key(schema, as_int, "t:x", "i") ==
        derive_key(schema, as_uint, "t:x", "i"));
}

TEST_CASE(
    "given enums a C caller filled with garbage, then each is refused, not "
    "read as UB") {
  const KernelSchema schema = test_schema();
  const std::array<int64_t, 1> shape{4};
  jw_tensor_meta m = make_tensor_meta(JW_DTYPE_FLOAT32, shape);
  jw_tensor_meta bad_dtype = m;
  const int garbage = 42;
  std::memcpy(&bad_dtype.dtype, &garbage, sizeof garbage);
  const std::array dtype_args{
      warmup_arg(bad_dtype), warmup_arg(m), arg_int(3), arg_int(3),
      arg_float(0),          arg_float(0)};
  CHECK_THROWS_WITH(derive_key(schema, dtype_args, "t:x", "i"),
                    doctest::Contains("'x': invalid dtype 42"));
  jw_arg_value bad_kind = arg_int(3);
  std::memcpy(&bad_kind.kind, &garbage, sizeof garbage);
  const std::array kind_args{warmup_arg(m), warmup_arg(m), bad_kind,
                             arg_int(3),    arg_float(0),  arg_float(0)};
  CHECK_THROWS_WITH(derive_key(schema, kind_args, "t:x", "i"),
                    doctest::Contains("'n' has unknown value kind 42"));
  jw_arg_value bad_scalar = arg_int(3);
  std::memcpy(&bad_scalar.value.scalar.kind, &garbage, sizeof garbage);
  const std::array scalar_args{warmup_arg(m), warmup_arg(m), bad_scalar,
                               arg_int(3),    arg_float(0),  arg_float(0)};
  CHECK_THROWS_WITH(derive_key(schema, scalar_args, "t:x", "i"),
                    doctest::Contains("'n' has unknown scalar kind 42"));
}
