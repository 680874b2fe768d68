// KernelSchema::from_c validation (core/src/schema.cpp).
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <cstring>

using namespace jitwarm;

namespace {
jw_param_desc param(const char* name, jw_param_kind kind, uint32_t flags = 0,
                    const char* same = nullptr) {
  return jw_param_desc{sizeof(jw_param_desc), nullptr, name, kind, flags, 0, -1,
                       {JW_SCALAR_NONE, {0}}, same};
}
jw_kernel_schema schema(const char* name, const jw_param_desc* params,
                        uint32_t n) {
  return jw_kernel_schema{
      sizeof(jw_kernel_schema), nullptr, name, "summary", params, n, "rule"};
}
}  // namespace

TEST_CASE("given a valid schema, then it is copied with its origin") {
  const jw_param_desc params[] = {param("x", JW_PARAM_TENSOR),
                                  param("n", JW_PARAM_INT)};
  const KernelSchema s =
      KernelSchema::from_c(schema("a.b.c", params, 2), "libx.so");
  CHECK(s.name() == "a.b.c");
  CHECK(s.short_name() == "c");
  CHECK(s.origin() == "libx.so");
  CHECK(s.launch_rule() == "rule");
  CHECK(s.index_of("n") == 1);
  CHECK(s.index_of("zz") == -1);
}

TEST_CASE("given malformed schemas, then each is refused with a reason") {
  const jw_param_desc dup[] = {param("x", JW_PARAM_INT),
                               param("x", JW_PARAM_INT)};
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", dup, 2), "o"),
                    doctest::Contains("'x' appears twice"));
  const jw_param_desc ok[] = {param("x", JW_PARAM_INT)};
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("bad name!", ok, 1), "o"),
                    doctest::Contains("not a dotted identifier"));
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a..b", ok, 1), "o"),
                    doctest::Contains("not a dotted identifier"));
  jw_param_desc bad_kind = param("x", static_cast<jw_param_kind>(42));
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", &bad_kind, 1), "o"),
                    doctest::Contains("unknown kind 42"));
  const jw_param_desc follows[] = {param("x", JW_PARAM_TENSOR, 0, "nope")};
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", follows, 1), "o"),
                    doctest::Contains("not another tensor parameter"));
  jw_param_desc no_default =
      param("B", JW_PARAM_CONSTEXPR, JW_PARAM_HAS_DEFAULT);
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", &no_default, 1), "o"),
                    doctest::Contains("gives none"));
  jw_kernel_schema small = schema("a.b", ok, 1);
  small.struct_size = 8;
  CHECK_THROWS_WITH(KernelSchema::from_c(small, "o"),
                    doctest::Contains("struct_size"));
}

TEST_CASE(
    "given dtype sets outside the known dtypes, then the schema is refused at "
    "definition (so warmup never sees a set with no dtype in it)") {
  for (const jw_dtype_set bad :
       {jw_dtype_set{0x1}, jw_dtype_set{0xFFFF0000u},
        JW_DTYPE_BIT(JW_DTYPE_FLOAT32) | 0x1u, JW_DTYPE_BIT(JW_DTYPE_COUNT)}) {
    CAPTURE(bad);
    jw_param_desc x = param("x", JW_PARAM_TENSOR);
    x.allowed_dtypes = bad;
    CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", &x, 1), "o"),
                      doctest::Contains("that name no dtype"));
  }
  jw_param_desc every = param("x", JW_PARAM_TENSOR);
  for (int d = 1; d < JW_DTYPE_COUNT; ++d)
    every.allowed_dtypes |= JW_DTYPE_BIT(d);
  CHECK(KernelSchema::from_c(schema("a.b", &every, 1), "o")
            .params()[0]
            .allowed_dtypes == every.allowed_dtypes);
  // A scalar has no dtype: a set there is dropped, not kept.
  jw_param_desc n = param("n", JW_PARAM_INT);
  n.allowed_dtypes = JW_DTYPE_BIT(JW_DTYPE_INT32);
  CHECK(KernelSchema::from_c(schema("a.b", &n, 1), "o")
            .params()[0]
            .allowed_dtypes == 0);
}

TEST_CASE(
    "given defaults of unknown or unfitting kinds, then the schema is "
    "refused; without HAS_DEFAULT the default is ignored") {
  jw_param_desc block =
      param("BLOCK", JW_PARAM_CONSTEXPR, JW_PARAM_HAS_DEFAULT);
  const int kind77 = 77;
  std::memcpy(&block.default_value.kind, &kind77, sizeof(kind77));
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", &block, 1), "o"),
                    doctest::Contains("unknown scalar kind 77"));
  jw_param_desc n = param("n", JW_PARAM_INT, JW_PARAM_HAS_DEFAULT);
  n.default_value = jw_scalar{JW_SCALAR_FLOAT, {0}};
  CHECK_THROWS_WITH(
      KernelSchema::from_c(schema("a.b", &n, 1), "o"),
      doctest::Contains("a default of kind float for a parameter of kind int"));
  jw_param_desc t = param("t", JW_PARAM_TENSOR, JW_PARAM_HAS_DEFAULT);
  t.default_value = jw_scalar{JW_SCALAR_INT, {1}};
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", &t, 1), "o"),
                    doctest::Contains("for a parameter of kind tensor"));
  // Without the flag the field is never read: garbage there is harmless and
  // not kept.
  jw_param_desc ignored = param("BLOCK", JW_PARAM_CONSTEXPR);
  std::memcpy(&ignored.default_value.kind, &kind77, sizeof(kind77));
  const KernelSchema s = KernelSchema::from_c(schema("a.b", &ignored, 1), "o");
  CHECK(s.params()[0].default_value.kind == JW_SCALAR_NONE);
  jw_param_desc ok = param("BLOCK", JW_PARAM_CONSTEXPR, JW_PARAM_HAS_DEFAULT);
  ok.default_value = jw_scalar{JW_SCALAR_BOOL, {1}};
  CHECK(KernelSchema::from_c(schema("a.b", &ok, 1), "o")
            .params()[0]
            .default_value.kind == JW_SCALAR_BOOL);
}

TEST_CASE(
    "given unknown flags, tensor flags on a scalar, bad names or chained "
    "dtype references, then the schema is refused naming the parameter") {
  jw_param_desc unknown = param("x", JW_PARAM_TENSOR, 1u << 20);
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", &unknown, 1), "o"),
                    doctest::Contains("'x' has unknown flag bits 0x100000"));
  jw_param_desc out_int = param("n", JW_PARAM_INT, JW_PARAM_OUTPUT);
  CHECK_THROWS_WITH(
      KernelSchema::from_c(schema("a.b", &out_int, 1), "o"),
      doctest::Contains("'n' is not a tensor but has tensor flags"));
  jw_param_desc spaced = param("a b", JW_PARAM_INT);
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", &spaced, 1), "o"),
                    doctest::Contains("names are identifiers"));
  const jw_param_desc chained[] = {param("a", JW_PARAM_TENSOR, 0, "b"),
                                   param("b", JW_PARAM_TENSOR, 0, "c"),
                                   param("c", JW_PARAM_TENSOR)};
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", chained, 3), "o"),
                    doctest::Contains("which itself follows 'c'"));
  const jw_param_desc int_follows[] = {param("t", JW_PARAM_TENSOR),
                                       param("n", JW_PARAM_INT, 0, "t")};
  CHECK_THROWS_WITH(KernelSchema::from_c(schema("a.b", int_follows, 2), "o"),
                    doctest::Contains("only tensors and scalars follow"));
  const jw_param_desc scalar_follows[] = {param("t", JW_PARAM_TENSOR),
                                          param("s", JW_PARAM_SCALAR, 0, "t")};
  CHECK(KernelSchema::from_c(schema("a.b", scalar_follows, 2), "o")
            .params()[1]
            .same_dtype_as == "t");
}
