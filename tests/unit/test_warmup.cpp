// The warmup engine's enumeration (core/src/warmup.cpp): cartesian
// products, collapsing by specialization, zipped groups, filters, and
// inputs that reproduce their keys.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include "schema_builders.hpp"

#include <cstring>
#include <optional>
#include <set>

using namespace jitwarm;

namespace {

using namespace schema_builders;
const jw_param_desc kParams[] = {
    tensor("out", bit(JW_DTYPE_FLOAT16) | bit(JW_DTYPE_FLOAT32), 1,
           JW_PARAM_OUTPUT, "x"),
    tensor("x", bit(JW_DTYPE_FLOAT16) | bit(JW_DTYPE_FLOAT32), 1),
    integer("H"),
    integer("T", JW_PARAM_DO_NOT_SPECIALIZE),
    floating("eps"),
    scalar_like("fill", "x", JW_PARAM_DO_NOT_SPECIALIZE),
    constexpr_param("BLOCK", 256),
};
const jw_kernel_schema kSchema = {
    sizeof(jw_kernel_schema), nullptr, "ns.norm", "", kParams, 7, ""};

KernelSchema schema() {
  return KernelSchema::from_c(kSchema, "test");
}

WarmupAxis values(std::initializer_list<WarmupValue> v) {
  return WarmupAxis{v, {}};
}
WarmupAxis range(int64_t start, int64_t stop, int64_t step = 1) {
  return WarmupAxis{{}, {IntRange{start, stop, step}}};
}
TensorChoice tensor(jw_dtype d, bool aligned = true) {
  return TensorChoice{d, aligned, {}};
}

std::vector<CompileKey> keys(const WarmupRequest& r) {
  return enumerate_warmup_keys(schema(), r, "cuda:sm_90", "impl");
}

WarmupRequest base() {
  WarmupRequest r;
  r.kernel_name = "ns.norm";
  r.axes = {{"x", values({tensor(JW_DTYPE_FLOAT16)})},
            {"H", values({__int128{16}})}};
  return r;
}

}  // namespace

TEST_CASE(
    "given a range of 8192 values, then it collapses to its three classes") {
  WarmupRequest r = base();
  r.axes[1] = {"H", range(1, 8193)};
  const auto k = keys(r);
  REQUIRE(k.size() == 3);
  std::set<int> classes;
  for (const auto& key : k)
    classes.insert(key.find_param("H")->int_spec.value_class);
  CHECK(classes ==
        std::set<int>{JW_INT_CLASS_ONE, JW_INT_CLASS_DIV16, JW_INT_CLASS_NONE});
}

TEST_CASE(
    "given a range that crosses 2^31, then i64 classes appear too, without "
    "walking it") {
  WarmupRequest r = base();
  r.axes[1] = {"H", range((int64_t{1} << 31) - 40, (int64_t{1} << 40), 1)};
  const auto k = keys(r);
  std::set<std::pair<int, int>> specs;
  for (const auto& key : k) {
    specs.insert({key.find_param("H")->int_spec.type,
                  key.find_param("H")->int_spec.value_class});
  }
  CHECK(specs ==
        std::set<std::pair<int, int>>{{JW_INT_I32, JW_INT_CLASS_DIV16},
                                      {JW_INT_I32, JW_INT_CLASS_NONE},
                                      {JW_INT_I64, JW_INT_CLASS_DIV16},
                                      {JW_INT_I64, JW_INT_CLASS_NONE}});
}

TEST_CASE(
    "given parameters that do not affect the key, then they add no keys") {
  WarmupRequest r = base();
  r.axes.push_back({"T", range(0, 100000)});
  r.axes.push_back({"eps", values({1e-5, 1e-6, 0.1})});
  CHECK(keys(r).size() == 1);
}

TEST_CASE(
    "given several axes, then the product is taken and deduplicated in order") {
  WarmupRequest r = base();
  r.axes[0] = {"x", values({tensor(JW_DTYPE_FLOAT16), tensor(JW_DTYPE_FLOAT32),
                            tensor(JW_DTYPE_FLOAT16)})};
  r.axes[1] = {"H", values({__int128{16}, __int128{32}, __int128{7}})};
  r.axes.push_back({"BLOCK", values({__int128{128}, __int128{256}})});
  const auto k = keys(r);
  CHECK(k.size() == 2 * 2 * 2);
  std::set<std::string> unique;
  for (const auto& key : k) unique.insert(key.encoding());
  CHECK(unique.size() == k.size());
  // The first key takes the first value of each axis.
  CHECK(k.front().find_param("x")->dtype == JW_DTYPE_FLOAT16);
  CHECK(k.front().find_param("out")->dtype == JW_DTYPE_FLOAT16);  // follows x
  CHECK(k.front().find_param("BLOCK")->constexpr_value.value.i == 128);
}

TEST_CASE(
    "given a follower tensor not mentioned, then it takes its leader's "
    "alignment too") {
  WarmupRequest r = base();
  r.axes[0] = {"x", values({tensor(JW_DTYPE_FLOAT32, false),
                            tensor(JW_DTYPE_FLOAT32, true)})};
  auto k = keys(r);
  REQUIRE(k.size() == 2);
  CHECK(k[0].find_param("out")->alignment == JW_ALIGN_NONE);
  CHECK(k[1].find_param("out")->alignment == JW_ALIGN_16);
  // Mentioned, it varies on its own.
  r.axes.push_back({"out", values({TensorChoice{JW_DTYPE_INVALID, true, {}}})});
  k = keys(r);
  REQUIRE(k.size() == 2);
  CHECK(k[0].find_param("out")->alignment == JW_ALIGN_16);
  CHECK(k[0].find_param("x")->alignment == JW_ALIGN_NONE);
}

TEST_CASE("given unmentioned parameters, then schema defaults fill them") {
  WarmupRequest r;
  r.kernel_name = "ns.norm";
  const auto k = keys(r);
  // x: both dtypes (aligned); H: one / div16 / other; BLOCK: its default.
  CHECK(k.size() == 2 * 3);
  for (const auto& key : k) {
    CHECK(key.find_param("BLOCK")->constexpr_value.value.i == 256);
    const ParamSpec* fill = key.find_param("fill");
    CHECK(fill->scalar_kind == JW_SCALAR_FLOAT);  // x is a float tensor
  }
}

TEST_CASE("given zipped parameters, then they vary in lockstep") {
  WarmupRequest r = base();
  r.axes.erase(r.axes.begin() + 1);  // H comes from the zip
  r.zipped.push_back(
      {{"H", values({__int128{1}, __int128{16}, __int128{48}})},
       {"BLOCK", values({__int128{64}, __int128{128}, __int128{128}})}});
  const auto k = keys(r);
  REQUIRE(k.size() == 2);  // (16, 128) and (48, 128) specialize alike
  CHECK(k[0].find_param("H")->int_spec.value_class == JW_INT_CLASS_ONE);
  CHECK(k[0].find_param("BLOCK")->constexpr_value.value.i == 64);
  CHECK(k[1].find_param("BLOCK")->constexpr_value.value.i == 128);

  WarmupRequest uneven = r;
  uneven.zipped[0][1].second = values({__int128{1}});
  CHECK_THROWS_WITH(keys(uneven), doctest::Contains("lists of one length"));
}

TEST_CASE(
    "given a filter and exclusions, then matching combinations are skipped") {
  WarmupRequest r = base();
  r.axes[0] = {"x",
               values({tensor(JW_DTYPE_FLOAT16), tensor(JW_DTYPE_FLOAT32)})};
  r.axes[1] = {"H", range(1, 100)};
  std::vector<__int128> seen_h;
  r.filter = [&](const WarmupAssignment& a) {
    seen_h.push_back(std::get<__int128>(*a.find("H")));
    return std::get<TensorChoice>(*a.find("x")).dtype == JW_DTYPE_FLOAT32 ||
           std::get<__int128>(*a.find("H")) != 1;
  };
  CHECK(keys(r).size() == 6 - 1);
  // The filter saw the first value of each class: 1, 2, 16.
  CHECK(std::set<__int128>(seen_h.begin(), seen_h.end()) ==
        std::set<__int128>{1, 2, 16});

  WarmupRequest ex = base();
  ex.axes[0] = {"x",
                values({tensor(JW_DTYPE_FLOAT16), tensor(JW_DTYPE_FLOAT32)})};
  ex.exclude.push_back({{"x", tensor(JW_DTYPE_FLOAT32)}});
  const auto k = keys(ex);
  REQUIRE(k.size() == 1);
  CHECK(k[0].find_param("x")->dtype == JW_DTYPE_FLOAT16);
}

TEST_CASE("given a request with mistakes, then errors name the parameter") {
  WarmupRequest r = base();
  r.axes.push_back({"nope", values({__int128{1}})});
  CHECK_THROWS_WITH(keys(r), doctest::Contains("unknown parameter 'nope'"));
  WarmupRequest twice = base();
  twice.axes.push_back({"H", values({__int128{2}})});
  CHECK_THROWS_WITH(keys(twice), doctest::Contains("'H' is given twice"));
  WarmupRequest wrong = base();
  wrong.axes[1] = {"H", values({2.5})};
  CHECK_THROWS_WITH(keys(wrong), doctest::Contains("'H' takes an integer"));
  WarmupRequest bad_range = base();
  bad_range.axes[1] = {"H", range(0, 10, 0)};
  CHECK_THROWS_WITH(keys(bad_range), doctest::Contains("positive step"));
  WarmupRequest overflow = base();
  overflow.axes[1] = {"H", values({__int128{1} << 70})};
  CHECK_THROWS_WITH(keys(overflow), doctest::Contains("overflows"));
}

TEST_CASE(
    "given a zipped tensor without a dtype, then the error says it needs one "
    "(never an internal error)") {
  WarmupRequest r = base();
  r.axes.erase(r.axes.begin());  // x comes from the zip
  r.zipped.push_back({{"x", values({TensorChoice{JW_DTYPE_INVALID, true, {}}})},
                      {"BLOCK", values({__int128{64}})}});
  CHECK_THROWS_WITH_AS(
      keys(r), doctest::Contains("zipped tensor 'x' needs a dtype"), Error);
  // A zipped tensor that follows another's dtype needs none.
  WarmupRequest follows = base();
  follows.zipped.push_back(
      {{"out", values({TensorChoice{JW_DTYPE_INVALID, false, {}}})},
       {"BLOCK", values({__int128{64}})}});
  const auto k = keys(follows);
  REQUIRE(k.size() == 1);
  CHECK(k[0].find_param("out")->dtype == JW_DTYPE_FLOAT16);
}

TEST_CASE(
    "given a constexpr range of more values than the bound, then it is an "
    "error naming the range, at once") {
  WarmupRequest r = base();
  r.axes.push_back({"BLOCK", range(0, INT64_MAX)});
  CHECK_THROWS_WITH_AS(
      keys(r),
      doctest::Contains("constexpr range of 'BLOCK' [0, 9223372036854775807) "
                        "step 1 gives 9223372036854775807 values"),
      Error);
  WarmupRequest just_over = base();
  just_over.axes.push_back({"BLOCK", range(0, 4097)});
  CHECK_THROWS_WITH_AS(keys(just_over), doctest::Contains("at most 4096"),
                       Error);
  // At the bound, and near the top of int64 (where stepping could overflow).
  WarmupRequest at_bound = base();
  at_bound.axes.push_back({"BLOCK", range(0, 4096)});
  CHECK(keys(at_bound).size() == 4096);
  WarmupRequest top = base();
  top.axes.push_back({"BLOCK", range(INT64_MAX - 10, INT64_MAX, 4)});
  const auto k = keys(top);
  REQUIRE(k.size() == 3);
  CHECK(k[2].find_param("BLOCK")->constexpr_value.value.i == INT64_MAX - 2);
}

TEST_CASE(
    "given an integer range over all of int64, then it still collapses to the "
    "classes it produces") {
  WarmupRequest r = base();
  r.axes[1] = {"H", range(INT64_MIN, INT64_MAX)};
  const auto k = keys(r);
  // i64 and i32 regions, each with its classes: a handful, not 2^64.
  CHECK(k.size() >= 3);
  CHECK(k.size() <= 6);
}

TEST_CASE(
    "given axes whose product is larger than the bound, then it is an error "
    "before any key is derived") {
  static const jw_param_desc kMany[] = {
      schema_builders::constexpr_param("A"),
      schema_builders::constexpr_param("B"),
      schema_builders::constexpr_param("C"),
  };
  static const jw_kernel_schema kManySchema = {
      sizeof(jw_kernel_schema), nullptr, "ns.many", "", kMany, 3, ""};
  const KernelSchema s = KernelSchema::from_c(kManySchema, "test");
  WarmupRequest r;
  r.kernel_name = "ns.many";
  r.axes = {{"A", range(0, 200)}, {"B", range(0, 200)}, {"C", range(0, 200)}};
  CHECK_THROWS_WITH_AS(
      enumerate_warmup_keys(s, r, "cuda:sm_90", "impl"),
      doctest::Contains("combines 200 x 200 x 200 values, more than the "
                        "1048576"),
      Error);
}

TEST_CASE(
    "given a schema with no known dtype for a tensor or a default of unknown "
    "kind, then warming it with defaults is an error, never a crash") {
  // Issue 11: these were accepted at load, then warmup indexed an empty axis.
  // Schema validation may refuse them at definition instead; either way is
  // an Error.
  jw_param_desc tensor_param =
      schema_builders::tensor("x", 0xFFFF0000u, 1);  // no dtype below COUNT
  jw_param_desc only_invalid =
      schema_builders::tensor("x", bit(JW_DTYPE_INVALID), 1);
  jw_param_desc odd_default = schema_builders::constexpr_param("BLOCK", 4);
  // 7, not the 77: a value outside the enum's range is itself
  // undefined where schema.cpp reads it (reported to its owner).
  const uint32_t unknown_kind = 7;
  std::memcpy(&odd_default.default_value.kind, &unknown_kind,
              sizeof unknown_kind);
  for (const jw_param_desc& p : {tensor_param, only_invalid, odd_default}) {
    CAPTURE(p.name);
    const jw_kernel_schema c = {
        sizeof(jw_kernel_schema), nullptr, "ns.odd", "", &p, 1, ""};
    std::optional<KernelSchema> s;
    try {
      s = KernelSchema::from_c(c, "test");
    } catch (const Error&) {
      continue;  // refused at definition
    }
    WarmupRequest r;
    r.kernel_name = "ns.odd";
    CHECK_THROWS_AS(enumerate_warmup_keys(*s, r, "cuda:sm_90", "impl"), Error);
  }
}

TEST_CASE(
    "given a request from a manifest, then planning errors name its file and "
    "line") {
  WarmupRequest r = base();
  r.origin = "m.toml:7";
  r.axes[1].second.origin = "m.toml:9";
  r.axes[1].second.values = {2.5};  // H takes an integer
  CHECK_THROWS_WITH(keys(r), doctest::Contains("m.toml:9: warmup of ns.norm: "
                                               "parameter 'H' takes"));
  WarmupRequest unknown = base();
  unknown.origin = "m.toml:7";
  unknown.axes.push_back({"nope", values({__int128{1}})});
  unknown.axes.back().second.origin = "m.toml:12";
  CHECK_THROWS_WITH(keys(unknown),
                    doctest::Contains("m.toml:12: warmup of ns.norm: unknown"));
  WarmupRequest overflow = base();
  overflow.origin = "m.toml:7";
  overflow.axes[1] = {"H", values({__int128{1} << 70})};  // no axis origin
  CHECK_THROWS_WITH(keys(overflow), doctest::Contains("m.toml:7: "));
}

TEST_CASE(
    "given every enumerated key, then its warmup inputs reproduce it without "
    "storage") {
  WarmupRequest r;
  r.kernel_name = "ns.norm";
  r.axes = {{"x", WarmupAxis{{tensor(JW_DTYPE_FLOAT16, false),
                              tensor(JW_DTYPE_FLOAT32)},
                             {}}},
            {"H", range(-40, 1 << 20)},
            {"fill", values({__int128{5}, (__int128{1} << 40), 2.0})}};
  const KernelSchema s = schema();
  for (const CompileKey& key :
       enumerate_warmup_keys(s, r, "cuda:sm_90", "impl")) {
    WarmupInputs in = warmup_inputs_for(s, key);
    for (const jw_arg_value& a : in.args)
      CHECK(a.kind != JW_VALUE_TENSOR);  // no storage
    CHECK(derive_key(s, in.args, "cuda:sm_90", "impl") == key);
  }
}

TEST_CASE(
    "given a key that no input can reproduce, then the error names both keys") {
  const KernelSchema s = schema();
  WarmupRequest r = base();
  CompileKey good = keys(r).front();
  std::vector<ParamSpec> params = good.params();
  params[2].int_spec =
      IntSpec{JW_INT_I64, JW_INT_CLASS_NONE};  // fine: reproducible
  CHECK_NOTHROW(warmup_inputs_for(
      s, CompileKey(good.kernel_name(), "impl", "cuda:sm_90", params)));
  params[3].int_spec =
      IntSpec{JW_INT_I32, JW_INT_CLASS_DIV16};  // T is do_not_specialize
  const CompileKey impossible(good.kernel_name(), "impl", "cuda:sm_90", params);
  try {
    warmup_inputs_for(s, impossible);
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("expected " + impossible.text()) != std::string::npos);
    CHECK(what.find("produced ") != std::string::npos);
  }
}
