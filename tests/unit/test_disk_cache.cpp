// DiskCache: entries round-trip, corrupt or mismatched entries are misses,
// writes are atomic, LRU pruning, verify, the read-only system layer, and
// processes sharing one directory.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "disk_cache.hpp"
#include "numbered_key.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::TemporaryDirectory;
using namespace jitwarm::detail;
namespace fs = std::filesystem;

namespace {

CompileKey key_for(int n) {
  return jitwarm::test::numbered_key(n, "t:1");
}

Artifact artifact(std::string bytes) {
  Artifact a;
  a.binary = std::move(bytes);
  a.format = "cubin";
  a.entry_point = "_Z3fooPf";
  return a;
}

struct Captured {
  std::vector<std::string> lines;
  Logger logger{
      [this](jw_log_level, const std::string& m) { lines.push_back(m); }};
};

}  // namespace

TEST_CASE(
    "given a stored entry, when loaded with the same key and fingerprint, then "
    "it round-trips") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  Captured log;
  DiskCache cache(dir.path(), "", 0, &log.logger);
  const CompileKey key = key_for(1);
  std::string binary(1000, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i)
    binary[i] = static_cast<char>(i * 7);
  REQUIRE(cache.store(EntryRef(key, "nvrtc 13.0 -O3"), artifact(binary)));
  const TierLoad back = cache.load(EntryRef(key, "nvrtc 13.0 -O3"));
  REQUIRE(back.artifact);
  CHECK_FALSE(back.rejected());
  CHECK(back.artifact->binary == binary);
  CHECK(back.artifact->format == "cubin");
  CHECK(back.artifact->entry_point == "_Z3fooPf");
  // Another compiler: another entry.
  const TierLoad other_build = cache.load(EntryRef(key, "nvrtc 12.4 -O3"));
  CHECK_FALSE(other_build.artifact);
  const TierLoad other_key = cache.load(EntryRef(key_for(2), "nvrtc 13.0 -O3"));
  CHECK_FALSE(other_key.artifact);
  CHECK_FALSE(other_build.rejected());
  CHECK_FALSE(other_key.rejected());
  CHECK(cache.stats().entries == 1);
  // No temporary files are left behind.
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

TEST_CASE(
    "given corrupt entries, when loaded, then each is a miss with a warning, "
    "never a crash") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  Captured log;
  DiskCache cache(dir.path(), "", 0, &log.logger);
  const CompileKey key = key_for(3);
  REQUIRE(cache.store(EntryRef(key, "fp"), artifact("0123456789abcdef")));
  const fs::path path = cache.entry_path(key, "fp");
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto load_with = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    const TierLoad loaded = cache.load(EntryRef(key, "fp"));
    return std::make_pair(loaded.artifact.has_value(), loaded.rejected());
  };
  CHECK(load_with(good) == std::make_pair(true, false));
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{5}, good.size() / 2, good.size() - 1}) {
    CHECK(load_with(good.substr(0, cut)) == std::make_pair(false, true));
  }
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 1;
  CHECK(load_with(flipped) == std::make_pair(false, true));
  CHECK(load_with("garbage") == std::make_pair(false, true));
  CHECK_FALSE(log.lines.empty());
  CHECK(log.lines.back().find("ignored") != std::string::npos);
  DiskCacheStats v = cache.verify();
  CHECK(v.corrupt == 1);
  CHECK(v.corrupt_files.size() == 1);
  // Rewriting it heals the entry.
  REQUIRE(cache.store(EntryRef(key, "fp"), artifact("fresh")));
  CHECK(cache.verify().corrupt == 0);
}

TEST_CASE(
    "given an entry copied under another key's name, then the stored key makes "
    "it a miss") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  DiskCache cache(dir.path(), "", 0, nullptr);
  REQUIRE(cache.store(EntryRef(key_for(10), "fp"), artifact("ten")));
  fs::create_directories(cache.entry_path(key_for(11), "fp").parent_path());
  fs::copy_file(cache.entry_path(key_for(10), "fp"),
                cache.entry_path(key_for(11), "fp"));
  const TierLoad copied = cache.load(EntryRef(key_for(11), "fp"));
  CHECK_FALSE(copied.artifact);
  CHECK(copied.rejected());
  CHECK(cache.verify().corrupt == 1);  // the name does not match the content
}

TEST_CASE(
    "given a size budget, when pruned, then least recently used entries go "
    "first") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  DiskCache cache(dir.path(), "", 0, nullptr);
  const std::string payload(4096, 'x');
  for (int i = 0; i < 4; ++i) {
    REQUIRE(cache.store(EntryRef(key_for(100 + i), "fp"), artifact(payload)));
    // Distinct, ordered access times (file times are coarse on some file
    // systems).
    fs::last_write_time(
        cache.entry_path(key_for(100 + i), "fp"),
        fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  // 100 is now the most recent.
  REQUIRE(cache.load(EntryRef(key_for(100), "fp")).artifact);
  const uint64_t one = cache.stats().bytes / 4;
  CHECK(cache.prune(one * 2) == 2);
  CHECK(cache.load(EntryRef(key_for(100), "fp")).artifact);
  CHECK(cache.load(EntryRef(key_for(103), "fp")).artifact);
  CHECK_FALSE(cache.load(EntryRef(key_for(101), "fp")).artifact);
  CHECK_FALSE(cache.load(EntryRef(key_for(102), "fp")).artifact);
}

TEST_CASE(
    "given a read-only system cache under the user cache, then it answers user "
    "misses") {
  TemporaryDirectory system_dir("jitwarm-disk-test-"),
      user_dir("jitwarm-disk-test-");
  {
    DiskCache builder(system_dir.path(), "", 0, nullptr);
    REQUIRE(builder.store(EntryRef(key_for(7), "fp"), artifact("shipped")));
  }
  DiskCache cache(user_dir.path(), system_dir.path(), 0, nullptr);
  auto a = cache.load(EntryRef(key_for(7), "fp")).artifact;
  REQUIRE(a);
  CHECK(a->binary == "shipped");
  CHECK(cache.stats().entries == 0);  // nothing written to the user cache
}

TEST_CASE(
    "given several processes writing the same keys at once, then every entry "
    "stays valid") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = fork();
    if (pid == 0) {
      DiskCache cache(dir.path(), "", 0, nullptr);
      for (int i = 0; i < 50; ++i)
        cache.store(EntryRef(key_for(i % 10), "fp"),
                    artifact(std::string(2000 + i % 10, 'a' + i % 10)));
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
  }
  DiskCache cache(dir.path(), "", 0, nullptr);
  CHECK(cache.verify().corrupt == 0);
  CHECK(cache.stats().entries == 10);
  for (int i = 0; i < 10; ++i) {
    auto a = cache.load(EntryRef(key_for(i), "fp")).artifact;
    REQUIRE(a);
    CHECK(a->binary == std::string(2000 + i, 'a' + i));
  }
}

TEST_CASE(
    "given plugin blobs, then get returns what put stored, keyed exactly") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  DiskCache cache(dir.path(), "", 0, nullptr);
  CHECK_FALSE(cache.get_blob("k1"));
  REQUIRE(cache.put_blob("k1", std::string("v\0alue", 6)));
  CHECK(cache.get_blob("k1") == std::string("v\0alue", 6));
  CHECK_FALSE(cache.get_blob("k2"));
}

TEST_CASE("given size texts, then bytes are parsed or refused") {
  CHECK(parse_byte_size("1000") == 1000);
  CHECK(parse_byte_size("2K") == 2048);
  CHECK(parse_byte_size("3M") == 3ull << 20);
  CHECK(parse_byte_size("1G") == 1ull << 30);
  CHECK_THROWS_AS(parse_byte_size("12X"), Error);
  CHECK_THROWS_AS(parse_byte_size("M"), Error);
}

TEST_CASE(
    "given sizes of 2^64 bytes or more, then they are refused, never wrapped "
    "around") {
  CHECK(parse_byte_size("18446744073709551615") == UINT64_MAX);
  CHECK(parse_byte_size("17179869183G") == 17179869183ull << 30);
  // 2^64 + 1000: wrapped around, this was a budget of 1000 bytes.
  CHECK_THROWS_WITH_AS(parse_byte_size("18446744073709552616"),
                       doctest::Contains("too large"), Error);
  CHECK_THROWS_WITH_AS(parse_byte_size("18446744073709551616"),
                       doctest::Contains("too large"), Error);
  CHECK_THROWS_WITH_AS(parse_byte_size("17179869184G"),  // 2^64
                       doctest::Contains("too large"), Error);
  CHECK_THROWS_WITH_AS(parse_byte_size("99999999999999999999999999K"),
                       doctest::Contains("too large"), Error);
}

namespace {

// What can sit at an entry's path instead of an entry.
enum class Impostor {
  fifo,
  link_to_dev_zero,
  dangling_link,
  directory,
  sparse
};

void plant(Impostor kind, const fs::path& path) {
  fs::create_directories(path.parent_path());
  switch (kind) {
    case Impostor::fifo: REQUIRE(mkfifo(path.c_str(), 0600) == 0); break;
    case Impostor::link_to_dev_zero:
      fs::create_symlink("/dev/zero", path);
      break;
    case Impostor::dangling_link:
      fs::create_symlink(path.string() + ".nowhere", path);
      break;
    case Impostor::directory:
      fs::create_directories(path / "inside");
      std::ofstream(path / "inside" / "file") << "x";
      break;
    case Impostor::sparse:
      std::ofstream(path).close();
      fs::resize_file(path, 5ull << 30);  // 5 GiB, of which nothing is stored
      break;
  }
}

}  // namespace

TEST_CASE(
    "given a FIFO, a link to /dev/zero, a dangling link, a directory or a "
    "multi-GiB sparse file in place of an entry, then it is a counted miss "
    "that is never read, verify reports it, and the next store replaces it") {
  for (Impostor kind :
       {Impostor::fifo, Impostor::link_to_dev_zero, Impostor::dangling_link,
        Impostor::directory, Impostor::sparse}) {
    CAPTURE(static_cast<int>(kind));
    TemporaryDirectory dir("jitwarm-disk-test-");
    Captured log;
    DiskCache cache(dir.path(), "", 0, &log.logger);
    const CompileKey key = key_for(42);
    const fs::path path = cache.entry_path(key, "fp");
    plant(kind, path);

    const TierLoad planted = cache.load(EntryRef(key, "fp"));
    CHECK_FALSE(planted.artifact);  // no hang, nothing read
    CHECK(planted.rejected());
    REQUIRE_FALSE(log.lines.empty());
    CHECK(log.lines.back().find("ignored: it is") != std::string::npos);
    const DiskCacheStats before = cache.verify();
    CHECK(before.entries == 1);
    CHECK(before.corrupt == 1);
    CHECK(before.corrupt_files == std::vector<std::string>{path.string()});

    REQUIRE(cache.store(EntryRef(key, "fp"), artifact("healed")));
    const TierLoad back = cache.load(EntryRef(key, "fp"));
    REQUIRE(back.artifact);
    CHECK(back.artifact->binary == "healed");
    CHECK_FALSE(back.rejected());
    const DiskCacheStats after = cache.verify();
    CHECK(after.entries == 1);
    CHECK(after.corrupt == 0);
  }
}

TEST_CASE(
    "given a file where an entry's directory belongs, then the next store "
    "replaces it") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  DiskCache cache(dir.path(), "", 0, nullptr);
  const CompileKey key = key_for(43);
  const fs::path path = cache.entry_path(key, "fp");
  fs::create_directories(path.parent_path().parent_path());
  std::ofstream(path.parent_path()) << "not a directory";
  CHECK_FALSE(cache.load(EntryRef(key, "fp")).artifact);
  REQUIRE(cache.store(EntryRef(key, "fp"), artifact("stored")));
  CHECK(cache.load(EntryRef(key, "fp")).artifact);
}

TEST_CASE(
    "given an artifact larger than an entry may be, then it is not stored "
    "(it could never be read back)") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  Captured log;
  DiskCache cache(dir.path(), "", 0, &log.logger);
  CHECK_FALSE(
      cache.store(EntryRef(key_for(44), "fp"),
                  artifact(std::string(DiskCache::kMaxEntryBytes, 'x'))));
  CHECK(cache.stats().entries == 0);
  REQUIRE_FALSE(log.lines.empty());
  CHECK(log.lines.back().find("not caching") != std::string::npos);
}

namespace {

void make_old(const fs::path& path) {
  fs::last_write_time(path, fs::file_time_type::clock::now() -
                                DiskCache::kStaleFileAge -
                                std::chrono::minutes(1));
}

}  // namespace

TEST_CASE(
    "given temporary and lock files older than the grace period, then verify, "
    "prune and the next store into their directory remove them; fresh ones "
    "and held locks stay") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  DiskCache cache(dir.path(), "", 0, nullptr);
  const fs::path entry = cache.entry_path(key_for(50), "fp");
  const fs::path shard = entry.parent_path();
  fs::create_directories(shard);
  const auto touch = [](const fs::path& p) { std::ofstream(p) << "partial"; };
  const fs::path stale_temp = shard / ".0123.jwc.tmp.4242.abc";
  const fs::path fresh_temp = shard / ".0124.jwc.tmp.4242.abd";
  const fs::path stale_lock = shard / ".0125.jwc.lock";
  const fs::path held_lock = shard / ".0126.jwc.lock";
  for (const auto& p : {stale_temp, fresh_temp, stale_lock, held_lock})
    touch(p);
  for (const auto& p : {stale_temp, stale_lock, held_lock}) make_old(p);
  const int held = ::open(held_lock.c_str(), O_RDWR);
  REQUIRE(held >= 0);
  REQUIRE(::flock(held, LOCK_EX) == 0);  // someone is compiling that key

  const DiskCacheStats v = cache.verify();
  CHECK(v.stale_files_removed == 2);
  CHECK(v.corrupt == 0);
  CHECK_FALSE(fs::exists(stale_temp));
  CHECK_FALSE(fs::exists(stale_lock));
  CHECK(fs::exists(fresh_temp));
  CHECK(fs::exists(held_lock));
  ::close(held);

  // prune removes leftovers even without a budget.
  make_old(fresh_temp);
  cache.prune();
  CHECK_FALSE(fs::exists(fresh_temp));
  CHECK_FALSE(fs::exists(held_lock));  // no longer held

  // A store sweeps the directory it writes to (once per process).
  touch(stale_temp);
  make_old(stale_temp);
  REQUIRE(cache.store(EntryRef(key_for(50), "fp"), artifact("fifty")));
  CHECK_FALSE(fs::exists(stale_temp));
}

TEST_CASE(
    "given verify running while prune removes every entry, then no removed "
    "entry is reported corrupt") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  {
    DiskCache writer(dir.path(), "", 0, nullptr);
    for (int i = 0; i < 1500; ++i)
      REQUIRE(
          writer.store(EntryRef(key_for(1000 + i), "fp"), artifact("entry")));
  }
  DiskCache verifier(dir.path(), "", 0, nullptr);
  DiskCache pruner(dir.path(), "", 0, nullptr);
  std::atomic<bool> stop{false};
  std::thread pruning([&] {
    while (!stop.load()) pruner.prune(1);
  });
  std::size_t corrupt = 0;
  for (int round = 0; round < 3; ++round) corrupt += verifier.verify().corrupt;
  stop.store(true);
  pruning.join();
  CHECK(corrupt == 0);
}

TEST_CASE(
    "given a claimed key, then a second claim waits its bound and gives up; "
    "once released, or once its holder is dead, a claim succeeds at once") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  Captured log;
  DiskCache cache(dir.path(), "", 0, &log.logger);
  cache.set_lock_wait(std::chrono::milliseconds(100));
  const CompileKey key = key_for(60);
  auto first = cache.claim(EntryRef(key, "fp"));
  REQUIRE(first);
  CHECK_FALSE(
      cache.claim(EntryRef(key, "fp")));  // flock conflicts across descriptors
  REQUIRE_FALSE(log.lines.empty());
  CHECK(log.lines.back().find("compiling it here too") != std::string::npos);
  CHECK(
      cache.claim(EntryRef(key_for(61), "fp")));  // other keys are not held up
  first.reset();
  CHECK(cache.claim(EntryRef(key, "fp")));

  // A process that dies holding a claim leaves its lock file behind, but
  // not its lock.
  const pid_t pid = fork();
  if (pid == 0) {
    DiskCache child(dir.path(), "", 0, nullptr);
    auto held = child.claim(EntryRef(key, "fp"));
    _exit(held ? 0 : 1);  // no destructor: the file stays
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  cache.set_lock_wait(std::chrono::minutes(10));  // would hang a test run
  CHECK(cache.claim(EntryRef(key, "fp")));
}

TEST_CASE(
    "given a directory that does not exist, then opening it as existing is "
    "an error that makes nothing, and creating it makes it") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  try {
    DiskCache look(dir.path() / "absent", "", 0, nullptr,
                   DiskCache::Opening::existing);
    FAIL("opened");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_NOT_FOUND);
    CHECK(std::string(e.what()).find("does not exist") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir.path() / "absent"));
  fs::create_directories(dir.path());
  std::ofstream(dir.path() / "file") << "x";
  CHECK_THROWS_WITH(DiskCache(dir.path() / "file", "", 0, nullptr,
                              DiskCache::Opening::existing),
                    doctest::Contains("is not a directory"));
  DiskCache made(dir.path() / "made", "", 0, nullptr);
  CHECK(fs::is_directory(dir.path() / "made" / "v1"));
  CHECK_FALSE(made.write_problem());
}

TEST_CASE(
    "given entries of two targets, a corrupt one and a system layer, then "
    "for_each_entry checks each, and clear removes a target's or all") {
  TemporaryDirectory dir("jitwarm-disk-test-"), system("jitwarm-disk-test-");
  DiskCache cache(dir.path(), system.path(), 0, nullptr);
  const auto key = [](int n, const char* target) {
    std::vector<ParamSpec> params(1);
    params[0].name = "BLOCK";
    params[0].kind = JW_PARAM_CONSTEXPR;
    params[0].constexpr_value = scalar_int(n);
    return CompileKey("ns.k", "impl", target, params);
  };
  for (int i = 0; i < 3; ++i) {
    REQUIRE(cache.store(EntryRef(key(i, "cuda:sm_90"), "fp"), artifact("a")));
    REQUIRE(cache.store(EntryRef(key(i, "hip:gfx942"), "fp"), artifact("b")));
  }
  const fs::path corrupt_path = cache.entry_path(key(9, "cuda:sm_90"), "fp");
  fs::create_directories(corrupt_path.parent_path());
  std::ofstream(corrupt_path, std::ios::binary) << "garbage";
  {
    DiskCache sys(system.path(), "", 0, nullptr);
    REQUIRE(sys.store(EntryRef(key(5, "cuda:sm_90"), "fp"), artifact("s")));
  }
  std::map<std::string, int> seen;
  int corrupt = 0, in_system = 0;
  cache.for_each_entry(
      [&](const FoundEntry& e) {
        if (!e.identity) {
          ++corrupt;
          CHECK(e.why == "bad magic");
          return;
        }
        ++seen[e.identity->key.target()];
        in_system += e.system;
        CHECK(e.content.size() == e.bytes);
      },
      /*with_system=*/true);
  CHECK(seen ==
        std::map<std::string, int>{{"cuda:sm_90", 4}, {"hip:gfx942", 3}});
  CHECK(corrupt == 1);
  CHECK(in_system == 1);
  REQUIRE(cache.put_blob("plugin key", "value"));

  const DiskCache::Cleared hip = cache.clear({"hip:gfx942"});
  CHECK(hip.entries == 3);
  CHECK(hip.by_target == std::map<std::string, std::size_t>{{"hip:gfx942", 3}});
  CHECK(cache.stats().entries == 4);  // three sm_90 and the corrupt one
  CHECK(cache.get_blob("plugin key"));
  const DiskCache::Cleared all = cache.clear({});
  CHECK(all.entries == 4);
  CHECK(all.by_target.at("(corrupt)") == 1);
  CHECK(cache.stats().entries == 0);
  CHECK_FALSE(cache.get_blob("plugin key"));
  // The system layer is read only: never cleared.
  CHECK(DiskCache(system.path(), "", 0, nullptr).stats().entries == 1);
}

TEST_CASE(
    "given an entry checked elsewhere, then put_entry writes it under its "
    "name once, and reports it present after") {
  TemporaryDirectory dir("jitwarm-disk-test-");
  DiskCache cache(dir.path(), "", 0, nullptr);
  const CompileKey key = key_for(77);
  const std::string bytes = serialize_entry(key, "fp", artifact("put"));
  std::string why;
  const auto identity = identify_entry(bytes, &why);
  REQUIRE(identity);
  CHECK(cache.put_entry(*identity, bytes) == DiskCache::Put::written);
  CHECK(cache.put_entry(*identity, bytes) == DiskCache::Put::present);
  CHECK(cache.load(EntryRef(key, "fp")).artifact->binary == "put");
}
