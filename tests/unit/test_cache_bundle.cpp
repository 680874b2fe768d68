// Cache bundles (core/src/cache_bundle.hpp): export and import round trips
// with targets and the system layer; every truncation, flipped byte,
// trailing byte, bad header and corrupt entry refused naming where, with
// nothing imported; export's errors for a missing directory or target.
#include <doctest/doctest.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <filesystem>
#include <fstream>

#include "cache_bundle.hpp"
#include "disk_cache.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::TemporaryDirectory;
using namespace jitwarm::detail;
namespace fs = std::filesystem;

namespace {

CompileKey key_for(int n, const std::string& target) {
  std::vector<ParamSpec> params(1);
  params[0].name = "BLOCK";
  params[0].kind = JW_PARAM_CONSTEXPR;
  params[0].constexpr_value = scalar_int(n);
  return CompileKey("ns.k", "impl", target, params);
}

Artifact artifact(int n) {
  Artifact a;
  a.binary = std::string(200 + n, static_cast<char>('a' + n % 26));
  a.format = "cubin";
  a.entry_point = "k";
  return a;
}

RuntimeOptions in(const fs::path& dir) {
  RuntimeOptions o;
  o.cache_dir = dir.string();
  return o;
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A cache with `n` entries for sm_90 and 2 for gfx942.
void fill(const fs::path& dir, int n) {
  DiskCache cache(dir, "", 0, nullptr);
  for (int i = 0; i < n; ++i)
    REQUIRE(cache.store(EntryRef(key_for(i, "cuda:sm_90"), "fp"), artifact(i)));
  for (int i = 0; i < 2; ++i)
    REQUIRE(cache.store(EntryRef(key_for(i, "hip:gfx942"), "fp"), artifact(i)));
}

std::string import_error(const fs::path& bundle, const fs::path& into) {
  try {
    (void)import_cache_bundle(bundle.string(), in(into));
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "given a cache of two targets, when one target is exported and imported "
    "elsewhere, then exactly its entries arrive, and a second import finds "
    "them there") {
  TemporaryDirectory from("jitwarm-bundle-test-"), to("jitwarm-bundle-test-"),
      out("jitwarm-bundle-test-");
  fill(from.path(), 5);
  const fs::path bundle = out.path() / "sm90.jwb";
  const CacheBundleSummary exported =
      export_cache_bundle(bundle.string(), {"cuda:sm_90"}, in(from.path()));
  CHECK(exported.entries == 5);
  CHECK(exported.targets ==
        std::vector<std::pair<std::string, std::size_t>>{{"cuda:sm_90", 5}});
  CHECK(exported.manifest.size() == 5);
  CHECK(exported.file_bytes == fs::file_size(bundle));
  CHECK(exported.file_bytes < exported.entry_bytes);  // compressed
  for (const auto& e : fs::directory_iterator(out.path()))
    CHECK(e.path() == bundle);  // no temporary file left

  const CacheBundleSummary imported =
      import_cache_bundle(bundle.string(), in(to.path() / "new"));
  CHECK(imported.entries == 5);
  CHECK(imported.written == 5);
  CHECK(imported.present == 0);
  DiskCache target(to.path() / "new", "", 0, nullptr);
  CHECK(target.stats().entries == 5);
  for (int i = 0; i < 5; ++i) {
    const auto a =
        target.load(EntryRef(key_for(i, "cuda:sm_90"), "fp")).artifact;
    REQUIRE(a);
    CHECK(a->binary == artifact(i).binary);
  }
  CHECK_FALSE(target.load(EntryRef(key_for(0, "hip:gfx942"), "fp")).artifact);
  const CacheBundleSummary again =
      import_cache_bundle(bundle.string(), in(to.path() / "new"));
  CHECK(again.written == 0);
  CHECK(again.present == 5);

  // Every target when none is named.
  CHECK(export_cache_bundle(bundle.string(), {}, in(from.path())).entries == 7);
}

TEST_CASE(
    "given a bundle cut at any byte, then import refuses it naming where it "
    "stopped, and writes nothing") {
  TemporaryDirectory from("jitwarm-bundle-test-"), work("jitwarm-bundle-test-");
  fill(from.path(), 3);
  const fs::path bundle = work.path() / "b.jwb";
  export_cache_bundle(bundle.string(), {}, in(from.path()));
  const std::string good = read(bundle);
  const fs::path cut = work.path() / "cut.jwb";
  for (std::size_t n = 0; n < good.size(); ++n) {
    write(cut, good.substr(0, n));
    const std::string why = import_error(cut, work.path() / "into");
    CAPTURE(n);
    CHECK(why.find("nothing was imported") != std::string::npos);
    CHECK_FALSE(fs::exists(work.path() / "into"));
  }
  write(cut, good.substr(0, good.size() / 2));
  CHECK(import_error(cut, work.path() / "into").find("entry ") !=
        std::string::npos);
  write(cut, good + "x");
  CHECK(import_error(cut, work.path() / "into").find("something follows") !=
        std::string::npos);
}

TEST_CASE(
    "given a bundle with any byte flipped, then import refuses it, or (where "
    "the flip changes nothing the content depends on) imports the same "
    "entries") {
  TemporaryDirectory from("jitwarm-bundle-test-"), work("jitwarm-bundle-test-");
  fill(from.path(), 2);
  const fs::path bundle = work.path() / "b.jwb";
  export_cache_bundle(bundle.string(), {"cuda:sm_90"}, in(from.path()));
  const std::string good = read(bundle);
  const fs::path bad = work.path() / "bad.jwb";
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string flipped = good;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x10);
    write(bad, flipped);
    const fs::path into = work.path() / ("into" + std::to_string(i));
    try {
      const CacheBundleSummary s = import_cache_bundle(bad.string(), in(into));
      CAPTURE(i);
      CHECK(s.written == 2);
      DiskCache imported(into, "", 0, nullptr);
      for (int k = 0; k < 2; ++k) {
        const auto a =
            imported.load(EntryRef(key_for(k, "cuda:sm_90"), "fp")).artifact;
        REQUIRE(a);
        CHECK(a->binary == artifact(k).binary);
      }
    } catch (const Error& e) {
      CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
      CHECK_FALSE(fs::exists(into));
    }
    fs::remove_all(into);
  }
}

TEST_CASE(
    "given a bundle whose second entry is corrupt inside a valid frame, then "
    "the error names that entry and its key") {
  TemporaryDirectory work("jitwarm-bundle-test-");
  std::vector<BundleItem> items;
  for (int i = 0; i < 3; ++i) {
    const CompileKey key = key_for(i, "cuda:sm_90");
    std::string bytes = serialize_entry(key, "fp", artifact(i));
    std::string why;
    items.push_back(BundleItem{*identify_entry(bytes, &why), bytes});
  }
  items[1].bytes[items[1].bytes.size() / 2] ^= 1;
  const fs::path bundle = work.path() / "b.jwb";
  write_bundle(bundle, items);
  const std::string why = import_error(bundle, work.path() / "into");
  CHECK(why.find("entry 2 of 3 (k[cuda:sm_90](BLOCK=1)") != std::string::npos);
  CHECK(why.find("is corrupt: checksum mismatch") != std::string::npos);
  CHECK_FALSE(fs::exists(work.path() / "into"));
}

TEST_CASE("given files that are not bundles, then import says what each is") {
  TemporaryDirectory work("jitwarm-bundle-test-");
  const auto status_of = [&](const fs::path& p) {
    try {
      (void)import_cache_bundle(p.string(), in(work.path() / "into"));
    } catch (const Error& e) {
      return std::make_pair(e.status(), std::string(e.what()));
    }
    return std::make_pair(JW_OK, std::string());
  };
  auto [status, why] = status_of(work.path() / "missing.jwb");
  CHECK(status == JW_ERROR_NOT_FOUND);
  CHECK(why.find("missing.jwb") != std::string::npos);
  std::tie(status, why) = status_of(work.path());
  CHECK(status == JW_ERROR_INVALID_ARGUMENT);
  CHECK(why.find("not a regular file") != std::string::npos);
  std::tie(status, why) = status_of("/dev/zero");
  CHECK(why.find("not a regular file") != std::string::npos);
  write(work.path() / "text.jwb", "hello, this is not a bundle");
  std::tie(status, why) = status_of(work.path() / "text.jwb");
  CHECK(why.find("does not start with the bundle magic") != std::string::npos);
  write(work.path() / "v9.jwb",
        std::string("JWBUNDLE\x09\0\0\0\x01\0\0\0", 16));
  std::tie(status, why) = status_of(work.path() / "v9.jwb");
  CHECK(why.find("bundle format version 9") != std::string::npos);
  CHECK_FALSE(fs::exists(work.path() / "into"));
}

TEST_CASE(
    "given export from a missing directory, a target it lacks or no "
    "directory at all, then each is a clear error and nothing is made") {
  TemporaryDirectory work("jitwarm-bundle-test-");
  try {
    (void)export_cache_bundle((work.path() / "b").string(), {},
                              in(work.path() / "absent"));
    FAIL("exported");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_NOT_FOUND);
    CHECK(std::string(e.what()).find("does not exist") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(work.path() / "absent"));
  fill(work.path() / "cache", 1);
  try {
    (void)export_cache_bundle((work.path() / "b").string(), {"hip:gfx90a"},
                              in(work.path() / "cache"));
    FAIL("exported");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_NOT_FOUND);
    CHECK(std::string(e.what()).find(
              "no entry for hip:gfx90a (it holds cuda:sm_90 (1), "
              "hip:gfx942 (2))") != std::string::npos);
  }
  RuntimeOptions none;
  none.no_cache_dir = true;
  CHECK_THROWS_WITH(export_cache_bundle((work.path() / "b").string(), {}, none),
                    doctest::Contains("no cache directory to export from"));
  CHECK_THROWS_WITH(export_cache_bundle((work.path() / "no-dir" / "b").string(),
                                        {}, in(work.path() / "cache")),
                    doctest::Contains("cannot write bundle"));
  CHECK_FALSE(fs::exists(work.path() / "b"));
}

TEST_CASE(
    "given a corrupt entry and a system layer, then export leaves the "
    "corrupt one out and takes the system's, the user's entry winning") {
  TemporaryDirectory user("jitwarm-bundle-test-"),
      system("jitwarm-bundle-test-"), work("jitwarm-bundle-test-");
  {
    DiskCache u(user.path(), "", 0, nullptr);
    REQUIRE(u.store(EntryRef(key_for(1, "cuda:sm_90"), "fp"), artifact(1)));
    REQUIRE(u.store(EntryRef(key_for(2, "cuda:sm_90"), "fp"), artifact(2)));
    write(u.entry_path(key_for(2, "cuda:sm_90"), "fp"), "garbage");
    DiskCache s(system.path(), "", 0, nullptr);
    REQUIRE(s.store(EntryRef(key_for(1, "cuda:sm_90"), "fp"), artifact(7)));
    REQUIRE(s.store(EntryRef(key_for(3, "cuda:sm_90"), "fp"), artifact(3)));
  }
  RuntimeOptions o = in(user.path());
  o.system_cache_dir = system.path().string();
  const fs::path bundle = work.path() / "b.jwb";
  const CacheBundleSummary s = export_cache_bundle(bundle.string(), {}, o);
  CHECK(s.entries == 2);
  CHECK(s.skipped_corrupt == 1);
  import_cache_bundle(bundle.string(), in(work.path() / "into"));
  DiskCache imported(work.path() / "into", "", 0, nullptr);
  CHECK(imported.load(EntryRef(key_for(1, "cuda:sm_90"), "fp"))
            .artifact->binary == artifact(1).binary);
  CHECK(imported.load(EntryRef(key_for(3, "cuda:sm_90"), "fp")).artifact);
}
