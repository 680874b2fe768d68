// Warmup manifests (core/src/manifest.cpp): parsing, errors with file and
// line, and the record-mode entry that reproduces a key.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <filesystem>
#include <fstream>

#include "schema_builders.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::TemporaryDirectory;

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

// The message of the error parsing `text` throws ("no error" if none).
std::string error_of(std::string_view text) {
  try {
    parse_warmup_manifest(text, "bad.toml");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
    return std::string(e.what());
  }
  return std::string("no error");
}

// load_warmup_manifest's error for `path`: status and message.
std::pair<jw_status, std::string> load_error(const std::string& path) {
  try {
    load_warmup_manifest(path);
  } catch (const Error& e) {
    return {e.status(), e.what()};
  }
  return {JW_OK, "no error"};
}

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

TEST_CASE(
    "given documents that break toml++'s own parser checks, then each is an "
    "error naming file and line, never an abort") {
  // The libFuzzer crash files of issue 11 were all of these two shapes; an
  // abort here ends the test binary.
  CHECK(error_of(std::string_view("[\x01", 2)).find("bad.toml:1:2:") !=
        std::string::npos);
  CHECK(error_of("a = [}").find("bad.toml:1:6:") != std::string::npos);
  CHECK(error_of("version = 1\nx = { a = [}] }\n").find("bad.toml:2:") !=
        std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"a\"\n[kernel.\x02]\n")
            .find("bad.toml:3:") != std::string::npos);
}

TEST_CASE(
    "given non-ASCII characters toml++ 3.3 mistakes for unreachable (its "
    "whitespace table), then each is an ordinary error or ordinary text") {
  // Under UBSan each of these reached __builtin_unreachable() in toml++.
  CHECK(error_of("n\xc3\xa9 = 1\n") ==
        "bad.toml:1:2: Error while parsing key-value pair: expected '=', saw "
        "'\xc3\xa9'");
  CHECK(error_of("version = 1\na = 1\xef\xb1\xbf\n").find("bad.toml:2:6:") !=
        std::string::npos);
  CHECK(error_of("versyi = 1wat\"vvlm\xd2\x88"
                 "at\"\n")
            .find("bad.toml:1:10:") != std::string::npos);
  CHECK(error_of("a = \"\"\"\\\xc3\xa9\"\"\"\n").find("bad.toml:1:9:") !=
        std::string::npos);
  // Valid TOML: after a line-ending backslash, in comments, strings, keys.
  CHECK(error_of("version = 1 # caf\xc3\xa9 \xe3\x80\x81\n"
                 "[[kernel]]\nname = \"\"\"\\\n   \xe3\x80\x81\xc3\xa9\"\"\"\n"
                 "[kernel.params]\n\"\xc3\xa9\" = 1\n"
                 "[[kernel]]\nname = 'caf\xc3\xa9'\n") == "no error");
}

TEST_CASE(
    "given strides that mix a list and an integer, then it is an error naming "
    "the line") {
  const std::string e = error_of(
      "[[kernel]]\nname = \"a\"\n[kernel.params]\n"
      "x = { dtype = \"float16\", strides = [[1, 2], 3] }\n");
  CHECK(e.find("bad.toml:4:") != std::string::npos);
  CHECK(e.find("strides must be one list of integers or a list of lists") !=
        std::string::npos);
}

TEST_CASE(
    "given an integer no argument can hold, then the error names file and "
    "line") {
  const std::string e = error_of(
      "[[kernel]]\nname = \"a\"\n[kernel.params]\n"
      "big = \"18446744073709551616\"\n");
  CHECK(e.find("bad.toml:4:") != std::string::npos);
  CHECK(e.find("integer 18446744073709551616 overflows") != std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"a\"\n"
                 "params = { big = \"-9223372036854775809\" }\n")
            .find("bad.toml:3:") != std::string::npos);
  CHECK(error_of("[[kernel]]\nname = \"a\"\n"
                 "params = { big = "
                 "\"1000000000000000000000000000000000000000000000\" }\n")
            .find("overflows") != std::string::npos);
  // The extremes are fine.
  CHECK(error_of("[[kernel]]\nname = \"a\"\nparams = { big = "
                 "[\"18446744073709551615\", \"-9223372036854775808\"] }\n") ==
        "no error");
}

TEST_CASE(
    "given a manifest, then each request and axis knows the file and line it "
    "came from") {
  const auto m = parse_warmup_manifest(R"(version = 1
[[kernel]]
name = "ns.m"
[kernel.params]
H = [1, 2]
[[kernel.zip]]
BLOCK = [64]
)",
                                       "m.toml");
  REQUIRE(m.requests.size() == 1);
  CHECK(m.requests[0].origin == "m.toml:2");
  CHECK(m.requests[0].axes.at(0).second.origin == "m.toml:5");
  CHECK(m.requests[0].zipped.at(0).at(0).second.origin == "m.toml:7");
}

TEST_CASE(
    "given a path that is not a regular file of sane size, then loading it is "
    "an I/O error saying what it is, never a hang or an empty manifest") {
  TemporaryDirectory dir("jitwarm-manifest-test-");
  const std::string fifo = (dir.path() / "fifo.toml").string();
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const std::string sparse = (dir.path() / "huge.toml").string();
  std::ofstream(sparse).close();
  std::filesystem::resize_file(sparse, 3ull << 30);  // 3 GiB, sparse

  const auto directory = load_error(dir.path().string());
  CHECK(directory.first == JW_ERROR_IO);
  CHECK(directory.second.find("is a directory") != std::string::npos);
  const auto zero = load_error("/dev/zero");
  CHECK(zero.first == JW_ERROR_IO);
  CHECK(zero.second.find("/dev/zero: it is a character device") !=
        std::string::npos);
  const auto pipe = load_error(fifo);  // no writer: reading would block
  CHECK(pipe.first == JW_ERROR_IO);
  CHECK(pipe.second.find("is a FIFO") != std::string::npos);
  const auto huge = load_error(sparse);
  CHECK(huge.first == JW_ERROR_IO);
  CHECK(huge.second.find("is 3221225472 bytes") != std::string::npos);

  // A link to a manifest is followed.
  const std::filesystem::path real = dir.path() / "real.toml";
  std::ofstream(real) << "version = 1\n";
  std::filesystem::create_symlink(real, dir.path() / "link.toml");
  CHECK(load_warmup_manifest((dir.path() / "link.toml").string())
            .requests.empty());
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
