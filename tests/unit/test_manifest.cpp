// Warmup manifests (core/src/manifest.cpp): parsing, errors with file and
// line, and the record-mode entry that reproduces a key.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include "schema_builders.hpp"

using namespace jitwarm;

namespace {

using namespace schema_builders;
const jw_param_desc kParams[] = {
    tensor("x", bit(JW_DTYPE_FLOAT16) | bit(JW_DTYPE_BFLOAT16), 1),
    integer("H"),
    integer("big"),
    floating("eps"),
    constexpr_param("BLOCK"),
};
const jw_kernel_schema kSchema = {
    sizeof(jw_kernel_schema), nullptr, "ns.m", "", kParams, 5, ""};

}  // namespace

TEST_CASE(
    "given a manifest with every axis form, then it parses into requests") {
  const auto m = parse_warmup_manifest(R"(
version = 1
[[kernel]]
name = "ns.m"
platform = "cuda"
[kernel.params]
x = { dtype = ["float16", "bfloat16"], aligned = [true, false] }
H = { range = [1, 8193] }
big = ["18446744073709551615", 5]
eps = 1e-6
BLOCK = [128, 256]
[[kernel.exclude]]
x = "bfloat16"
BLOCK = 256

[[kernel]]
name = "ns.m"
[[kernel.zip]]
H = [1, 16]
BLOCK = [64, 128]
)",
                                       "m.toml");
  REQUIRE(m.requests.size() == 2);
  const WarmupRequest& r = m.requests[0];
  CHECK(r.kernel_name == "ns.m");
  CHECK(r.platform == "cuda");
  REQUIRE(r.axes.size() == 5);
  CHECK(r.axes[0].second.values.size() == 4);  // 2 dtypes x 2 alignments
  CHECK(r.axes[1].second.ranges.size() == 1);
  CHECK(r.axes[1].second.ranges[0].stop == 8193);
  CHECK(std::get<__int128>(r.axes[2].second.values[0]) ==
        (__int128{1} << 64) - 1);
  CHECK(r.exclude.size() == 1);
  CHECK(m.requests[1].zipped.size() == 1);

  const KernelSchema s = KernelSchema::from_c(kSchema, "test");
  // 4 tensors x 3 H classes x 2 big x 2 BLOCK, minus the excluded bf16 x 256 (2
  // x 3 x 2).
  CHECK(enumerate_warmup_keys(s, r, "cuda:sm_90", "i").size() ==
        4 * 3 * 2 * 2 - 2 * 3 * 2);
}

TEST_CASE(
    "given malformed manifests, then the error names file, line and problem") {
  const auto error_of = [](const char* text) {
    try {
      parse_warmup_manifest(text, "bad.toml");
    } catch (const Error& e) {
      CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of("[[kernel]]\nname = \n").find("bad.toml:2") !=
        std::string::npos);
  CHECK(error_of("version = 2\n").find("unsupported manifest version") !=
        std::string::npos);
  CHECK(error_of("[[kernel]]\nparams = { H = 1 }\n").find("needs a name") !=
        std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"a\"\ncolour = 1\n").find("bad.toml:3") !=
        std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"a\"\nparams = { x = \"float17\" }\n")
            .find("neither a dtype nor an integer") != std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"a\"\nparams = { H = { range = [1] } }\n")
            .find("range must be") != std::string::npos);
  CHECK(
      error_of(
          "[[kernel]]\nname = \"a\"\nparams = { H = { range = [1, 9, 0] } }\n")
          .find("step must be positive") != std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"a\"\nparams = { x = { dtype = \"half\", "
                 "align = true } }\n")
            .find("unknown tensor field 'align'") != std::string::npos);
}

TEST_CASE("given a missing file, then it is an I/O error naming it") {
  try {
    load_warmup_manifest("/nonexistent/m.toml");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_IO);
    CHECK(std::string(e.what()).find("/nonexistent/m.toml") !=
          std::string::npos);
  }
}

TEST_CASE(
    "given a key, when written as a manifest entry and read back, then it "
    "warms that key") {
  const KernelSchema s = KernelSchema::from_c(kSchema, "test");
  WarmupRequest r;
  r.kernel_name = "ns.m";
  r.axes = {{"x", WarmupAxis{{TensorChoice{JW_DTYPE_BFLOAT16, false, {}}}, {}}},
            {"H", WarmupAxis{{__int128{48}}, {}}},
            {"big", WarmupAxis{{(__int128{1} << 63) + 7}, {}}},
            {"BLOCK", WarmupAxis{{__int128{512}}, {}}}};
  const auto keys = enumerate_warmup_keys(s, r, "cuda:sm_90", "i");
  REQUIRE(keys.size() == 1);
  const std::string entry = manifest_entry_for_key(s, keys[0], "cuda");
  const auto back = parse_warmup_manifest(entry, "recorded.toml");
  REQUIRE(back.requests.size() == 1);
  CHECK(back.requests[0].platform == "cuda");
  const auto again =
      enumerate_warmup_keys(s, back.requests[0], "cuda:sm_90", "i");
  REQUIRE(again.size() == 1);
  CHECK(again[0] == keys[0]);
}
