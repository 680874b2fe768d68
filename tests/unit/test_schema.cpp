// KernelSchema::from_c validation (core/src/schema.cpp).
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

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
