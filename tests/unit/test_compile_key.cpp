// CompileKey: canonical encoding, stable hash, text form, decoding
// (core/src/compile_key.cpp). The golden file pins the encoding: changing
// it without bumping the format version fails here, because persistent
// cache entries are named by it.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <sstream>

#include "golden_file.hpp"

using namespace jitwarm;
using jitwarm::test::check_golden;
using jitwarm::test::hex;

namespace {

CompileKey sample_key() {
  std::vector<ParamSpec> params(6);
  params[0].name = "positions";
  params[0].kind = JW_PARAM_TENSOR;
  params[0].dtype = JW_DTYPE_INT64;
  params[0].alignment = JW_ALIGN_16;
  params[1].name = "x";
  params[1].kind = JW_PARAM_TENSOR;
  params[1].dtype = JW_DTYPE_FLOAT16;
  params[1].alignment = JW_ALIGN_NONE;
  params[1].stride_specs = {{JW_INT_I32, JW_INT_CLASS_DIV16},
                            {JW_INT_I32, JW_INT_CLASS_ONE}};
  params[2].name = "block_size";
  params[2].kind = JW_PARAM_INT;
  params[2].int_spec = {JW_INT_I32, JW_INT_CLASS_DIV16};
  params[3].name = "eps";
  params[3].kind = JW_PARAM_FLOAT;
  params[4].name = "fill";
  params[4].kind = JW_PARAM_SCALAR;
  params[4].scalar_kind = JW_SCALAR_INT;
  params[4].int_spec = {JW_INT_U64, JW_INT_CLASS_NONE};
  params[5].name = "BLOCK";
  params[5].kind = JW_PARAM_CONSTEXPR;
  params[5].constexpr_value = scalar_int(1024);
  return CompileKey("vllm.v1.worker.block_table.compute_slot_mapping",
                    "jitwarm-cuda", "cuda:sm_90", params);
}

}  // namespace

TEST_CASE("given a key, then its text form reads like docs/compile-keys.md") {
  CHECK(sample_key().text() ==
        "compute_slot_mapping[cuda:sm_90](positions:i64*:a16, "
        "x:fp16*[i32:D,i32:1]:a1, "
        "block_size:i32:D, eps:fp32, fill:u64, BLOCK=1024) via jitwarm-cuda");
}

TEST_CASE(
    "given a key, when encoded and decoded, then it round-trips exactly") {
  const CompileKey key = sample_key();
  const CompileKey back = CompileKey::decode(key.encoding());
  CHECK(back == key);
  CHECK(back.text() == key.text());
  CHECK(back.hash() == key.hash());
}

TEST_CASE(
    "given two keys that differ in one class, then encodings and hashes "
    "differ") {
  const CompileKey a = sample_key();
  std::vector<ParamSpec> params = a.params();
  params[2].int_spec.value_class = JW_INT_CLASS_NONE;
  const CompileKey b(a.kernel_name(), a.impl_name(), a.target(), params);
  CHECK_FALSE(a == b);
  CHECK_FALSE(a.hash() == b.hash());
  const CompileKey c(a.kernel_name(), a.impl_name(), "cuda:sm_80", a.params());
  CHECK_FALSE(a.hash() == c.hash());
}

TEST_CASE("given bad encodings, when decoded, then each is rejected cleanly") {
  const std::string good = sample_key().encoding();
  CHECK_THROWS_WITH(CompileKey::decode(""), doctest::Contains("truncated"));
  CHECK_THROWS_WITH(CompileKey::decode("XYZ\x01"),
                    doctest::Contains("bad magic"));
  std::string bad_version = good;
  bad_version[3] = 9;
  CHECK_THROWS_WITH(CompileKey::decode(bad_version),
                    doctest::Contains("format version 9"));
  CHECK_THROWS_WITH(CompileKey::decode(good + "x"),
                    doctest::Contains("trailing"));
  // Every truncation of a valid key is an error, never a crash.
  for (std::size_t n = 0; n < good.size(); ++n) {
    CHECK_THROWS_AS(CompileKey::decode(good.substr(0, n)), Error);
  }
  // Every single-byte corruption is rejected or decodes to a different key.
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string corrupt = good;
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
    try {
      const CompileKey k = CompileKey::decode(corrupt);
      CHECK(k.encoding() == corrupt);
      CHECK_FALSE(k == sample_key());
    } catch (const Error& e) {
      CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
    }
  }
  // A huge length does not allocate: it is refused.
  std::string huge = good.substr(0, 4) + std::string("\xff\xff\xff\x7f", 4);
  CHECK_THROWS_WITH(CompileKey::decode(huge), doctest::Contains("exceeds"));
}

TEST_CASE(
    "given the golden key, then encoding and hash match the checked-in file") {
  const CompileKey key = sample_key();
  std::ostringstream now;
  now << key.text() << "\n"
      << hex(key.encoding()) << "\n"
      << key.hash().hex() << "\n";
  check_golden("compile_key_v1.txt", now.str(),
               "the compile-key encoding changed: bump kFormatVersion in "
               "compile_key.cpp");
}

TEST_CASE(
    "given a tuned key, then its config is sorted, shown in the text and "
    "round-trips") {
  const CompileKey untuned = sample_key();
  const CompileKey tuned =
      untuned.with_config({{"threads", 256}, {"rows", -2}});
  REQUIRE(tuned.config().size() == 2);
  CHECK(tuned.config()[0].name == "rows");
  CHECK(tuned.config()[1].name == "threads");
  CHECK(tuned.text() ==
        "compute_slot_mapping[cuda:sm_90](positions:i64*:a16, "
        "x:fp16*[i32:D,i32:1]:a1, block_size:i32:D, eps:fp32, fill:u64, "
        "BLOCK=1024) {rows=-2, threads=256} via jitwarm-cuda");
  // A tuned key is its own cache entry; its untuned key is unchanged.
  CHECK_FALSE(tuned == untuned);
  CHECK_FALSE(tuned.hash() == untuned.hash());
  CHECK(tuned.with_config({}) == untuned);
  CHECK(tuned.with_config({}).encoding() == untuned.encoding());
  CHECK(static_cast<uint8_t>(untuned.encoding()[3]) == 1);
  CHECK(static_cast<uint8_t>(tuned.encoding()[3]) == 2);
  // The order it was listed in does not matter.
  CHECK(untuned.with_config({{"rows", -2}, {"threads", 256}}) == tuned);
  const CompileKey back = CompileKey::decode(tuned.encoding());
  CHECK(back == tuned);
  CHECK(back.config() == tuned.config());
  CHECK(back.text() == tuned.text());
  CHECK(tune_config_text({}) == "");
}

TEST_CASE("given a bad config, then the key is refused cleanly") {
  const CompileKey key = sample_key();
  CHECK_THROWS_WITH(key.with_config({{"rows", 1}, {"rows", 2}}),
                    doctest::Contains("'rows' given twice"));
  CHECK_THROWS_WITH(key.with_config({{"", 1}}),
                    doctest::Contains("without a name"));
  TuneConfig many;
  for (int i = 0; i < 65; ++i) many.push_back({"c" + std::to_string(i), i});
  CHECK_THROWS_WITH(key.with_config(many), doctest::Contains("exceed 64"));
}

TEST_CASE(
    "given bad tuned encodings, when decoded, then each is rejected cleanly") {
  const CompileKey tuned = sample_key().with_config({{"a", 1}, {"b", 2}});
  const std::string good = tuned.encoding();
  for (std::size_t n = 0; n < good.size(); ++n) {
    CHECK_THROWS_AS(CompileKey::decode(good.substr(0, n)), Error);
  }
  // Version 2 with no config is not canonical: an untuned key is version 1.
  std::string no_config = sample_key().encoding();
  no_config[3] = 2;
  no_config += std::string(4, '\0');
  CHECK_THROWS_WITH(CompileKey::decode(no_config),
                    doctest::Contains("0 config values"));
  // The same values out of order re-encode differently: refused.
  const std::string a_then_b = good;
  const std::size_t a =
      a_then_b.rfind(std::string("\x01\x00\x00\x00"
                                 "a",
                                 5));
  const std::size_t b =
      a_then_b.rfind(std::string("\x01\x00\x00\x00"
                                 "b",
                                 5));
  REQUIRE(a != std::string::npos);
  REQUIRE(b == a + 13);
  std::string b_then_a = a_then_b;
  b_then_a.replace(a, 13, a_then_b.substr(b, 13));
  b_then_a.replace(b, 13, a_then_b.substr(a, 13));
  CHECK_THROWS_WITH(CompileKey::decode(b_then_a),
                    doctest::Contains("canonical"));
  // A duplicated name is refused as the constructor refuses it.
  std::string twice = a_then_b;
  twice[b + 4] = 'a';
  CHECK_THROWS_WITH(CompileKey::decode(twice), doctest::Contains("twice"));
}

TEST_CASE(
    "given the golden tuned key, then encoding and hash match the checked-in "
    "file") {
  const CompileKey key =
      sample_key().with_config({{"threads", 256}, {"rows", 4}});
  std::ostringstream now;
  now << key.text() << "\n"
      << hex(key.encoding()) << "\n"
      << key.hash().hex() << "\n";
  check_golden("compile_key_v2.txt", now.str(),
               "the tuned compile-key encoding changed: bump "
               "kTunedFormatVersion in compile_key.cpp");
}
