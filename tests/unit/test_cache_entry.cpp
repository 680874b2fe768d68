// The cache entry every tier stores (core/src/cache_entry.hpp): round trips,
// every truncation and bit flip refused with a reason, an entry of another
// key or build refused, identify_entry's name, and a golden file that pins
// the format (change it only with kEntryFormatVersion).
#define XXH_INLINE_ALL
#include <doctest/doctest.h>
#include <xxhash.h>
#include <jitwarm/jitwarm.hpp>

#include <fstream>
#include <sstream>

#include "cache_entry.hpp"
#include "golden_file.hpp"

using namespace jitwarm;
using jitwarm::test::check_golden;
using jitwarm::test::hex;
using namespace jitwarm::detail;

namespace {

CompileKey key_for(int n, std::string target = "cuda:sm_90") {
  std::vector<ParamSpec> params(1);
  params[0].name = "BLOCK";
  params[0].kind = JW_PARAM_CONSTEXPR;
  params[0].constexpr_value = scalar_int(n);
  return CompileKey("ns.k", "impl", std::move(target), params);
}

Artifact artifact(std::string binary) {
  Artifact a;
  a.binary = std::move(binary);
  a.format = "cubin";
  a.entry_point = "_Z1kPf";
  return a;
}

}  // namespace

TEST_CASE(
    "given a serialized entry, then it parses back to its artifact for its "
    "key and fingerprint only") {
  const CompileKey key = key_for(1);
  const std::string bytes =
      serialize_entry(key, "nvrtc 13.0", artifact(std::string(300, '\7')));
  CHECK(bytes.size() ==
        entry_size(key, "nvrtc 13.0", artifact(std::string(300, '\7'))));
  std::string why;
  const auto a = entry_artifact(bytes, key, "nvrtc 13.0", &why);
  REQUIRE(a);
  CHECK(a->binary == std::string(300, '\7'));
  CHECK(a->format == "cubin");
  CHECK(a->entry_point == "_Z1kPf");
  CHECK_FALSE(entry_artifact(bytes, key, "nvrtc 12.4", &why));
  CHECK(why.find("another key or build") != std::string::npos);
  CHECK_FALSE(entry_artifact(bytes, key_for(2), "nvrtc 13.0", &why));
  const auto id = identify_entry(bytes, &why);
  REQUIRE(id);
  CHECK(id->key == key);
  CHECK(id->fingerprint == "nvrtc 13.0");
  CHECK(id->name == entry_name(key, "nvrtc 13.0"));
  CHECK(id->name.size() == 32);
}

TEST_CASE(
    "given every truncation and every flipped byte of an entry, then each is "
    "refused with a reason, never a crash") {
  const CompileKey key = key_for(3);
  const std::string good = serialize_entry(key, "fp", artifact("0123456789"));
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    std::string why;
    CHECK_FALSE(entry_artifact(good.substr(0, cut), key, "fp", &why));
    CHECK_FALSE(why.empty());
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    std::string why;
    CHECK_FALSE(entry_artifact(bad, key, "fp", &why));
    CHECK_FALSE(why.empty());
    CHECK_FALSE(identify_entry(bad, &why));
  }
}

TEST_CASE(
    "given a valid checksum over a key that does not decode, then "
    "identify_entry says so") {
  std::string bytes = serialize_entry(key_for(4), "fp", artifact("x"));
  // Corrupt the key encoding's first byte (after magic, version and its
  // length), then make the checksum right again, as a forgery would.
  bytes[8 + 4 + 8] = '\xff';
  const uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
  for (int i = 0; i < 8; ++i)
    bytes[bytes.size() - 8 + i] = static_cast<char>(sum >> (8 * i));
  std::string why;
  CHECK(parse_entry(bytes, &why));
  CHECK_FALSE(identify_entry(bytes, &why));
  CHECK(why.find("its key does not decode") != std::string::npos);
}

namespace {

// The key and artifact the golden entries hold.
CompileKey golden_key() {
  std::vector<ParamSpec> params(1);
  params[0].name = "BLOCK";
  params[0].kind = JW_PARAM_CONSTEXPR;
  params[0].constexpr_value = scalar_int(1024);
  return CompileKey("vllm.test.k", "jitwarm-cuda", "cuda:sm_90", params);
}

// A golden file's name line and entry bytes.
std::pair<std::string, std::string> read_golden(const std::string& name) {
  std::ifstream in(std::string(JITWARM_TEST_GOLDEN_DIR) + "/" + name);
  std::string entry_name_line, hex_line;
  std::getline(in, entry_name_line);
  std::getline(in, hex_line);
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex_line.size(); i += 2)
    bytes += static_cast<char>(std::stoi(hex_line.substr(i, 2), nullptr, 16));
  return {entry_name_line, bytes};
}

}  // namespace

TEST_CASE(
    "given the golden entry, then its name and bytes match the checked-in "
    "file") {
  const CompileKey key = golden_key();
  const std::string bytes = serialize_entry(key, "nvrtc 13.0 -O3",
                                            artifact("\x7f"
                                                     "ELF"));
  std::ostringstream now;
  now << entry_name(key, "nvrtc 13.0 -O3") << "\n" << hex(bytes) << "\n";
  check_golden("cache_entry_v2.txt", now.str(),
               "the cache entry format changed: bump kEntryFormatVersion in "
               "cache_entry.hpp (and keep reading this version)");
}

TEST_CASE(
    "given the golden entries of older format versions, then they still read "
    "under the same name, as unsigned entries") {
  const CompileKey key = golden_key();
  for (const char* file : {"cache_entry_v1.txt"}) {
    CAPTURE(file);
    const auto [name, bytes] = read_golden(file);
    CHECK(name == entry_name(key, "nvrtc 13.0 -O3"));
    std::string why;
    const std::optional<Artifact> a =
        entry_artifact(bytes, key, "nvrtc 13.0 -O3", &why);
    REQUIRE_MESSAGE(a, why);
    CHECK(a->binary ==
          "\x7f"
          "ELF");
    const auto id = identify_entry(bytes, &why);
    REQUIRE(id);
    CHECK(id->signer.empty());
  }
}
