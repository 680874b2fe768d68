// CompileCache: counters after each step, one compile per key under
// contention (threads, and processes sharing a disk cache), failures not
// cached, and the persistent layer under it.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "compile_cache.hpp"
#include "disk_cache.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::TemporaryDirectory;
using namespace jitwarm::detail;

namespace {

CompileKey key_named(const std::string& target) {
  std::vector<ParamSpec> params(1);
  params[0].name = "n";
  params[0].kind = JW_PARAM_INT;
  return CompileKey("ns.k", "impl", target, params);
}

CompileCache::Compiler counting(std::atomic<int>& calls,
                                std::string binary = "bin") {
  CompileCache::Compiler c;
  c.compile = [&calls, binary] {
    calls.fetch_add(1);
    Artifact a;
    a.binary = binary;
    a.format = "test";
    a.entry_point = "main";
    return a;
  };
  return c;
}

// An in-memory store to test the layering without touching disk.
struct MemoryStore : ArtifactStore {
  std::map<std::string, Artifact> entries;
  int loads = 0;
  TierLoad load(const EntryRef& entry) override {
    ++loads;
    auto it = entries.find(entry.name());
    if (it == entries.end()) return {};
    return TierLoad::found(it->second, CacheTier::disk);
  }
  bool store(const EntryRef& entry, const Artifact& a) override {
    entries[entry.name()] = a;
    return true;
  }
};

}  // namespace

TEST_CASE(
    "given a cold cache, when a key is asked twice, then one compile then one "
    "hit") {
  CompileCache cache;
  std::atomic<int> calls{0};
  const CompileKey key = key_named("t:1");
  CHECK(cache.find(key) == nullptr);
  auto first = cache.get_or_compile(key, counting(calls));
  CHECK(first.compiled);
  CHECK(first.artifact->binary == "bin");
  CacheStats s = cache.stats();
  CHECK(s.misses == 1);
  CHECK(s.hits == 0);
  CHECK(s.compiles == 1);
  CHECK(s.entries == 1);
  auto second = cache.get_or_compile(key, counting(calls));
  CHECK_FALSE(second.compiled);
  CHECK(second.artifact == first.artifact);
  s = cache.stats();
  CHECK(s.hits == 1);
  CHECK(s.misses == 1);
  CHECK(s.compiles == 1);
  CHECK(calls.load() == 1);
  CHECK(cache.find(key) == first.artifact);
}

TEST_CASE(
    "given many threads asking for one key at once, then exactly one compile "
    "runs") {
  CompileCache cache;
  std::atomic<int> calls{0};
  std::atomic<bool> go{false};
  const CompileKey key = key_named("t:contended");
  CompileCache::Compiler slow;
  slow.compile = [&] {
    calls.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Artifact a;
    a.binary = "slow";
    return a;
  };
  constexpr int kThreads = 8;
  std::vector<const Artifact*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      seen[t] = cache.get_or_compile(key, slow).artifact;
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  CHECK(calls.load() == 1);
  const CacheStats s = cache.stats();
  CHECK(s.compiles == 1);
  CHECK(s.hits + s.misses == kThreads);
  for (const Artifact* a : seen) CHECK(a == seen[0]);
  CHECK(seen[0]->binary == "slow");
}

TEST_CASE(
    "given a failing compile, then the error reaches the caller and a retry "
    "compiles again") {
  CompileCache cache;
  const CompileKey key = key_named("t:fail");
  int attempts = 0;
  CompileCache::Compiler failing;
  failing.compile = [&]() -> Artifact {
    ++attempts;
    throw Error(JW_ERROR_COMPILE_FAILED, "syntax error");
  };
  CHECK_THROWS_WITH(cache.get_or_compile(key, failing), "syntax error");
  CHECK(cache.find(key) == nullptr);
  std::atomic<int> calls{0};
  CHECK(cache.get_or_compile(key, counting(calls)).compiled);
  CHECK(attempts == 1);
  CHECK(calls.load() == 1);
  CHECK(cache.stats().compiles == 2);
}

TEST_CASE(
    "given a store under the cache, then a miss asks it first and a compile is "
    "written to it") {
  auto store = std::make_shared<MemoryStore>();
  std::atomic<int> calls{0};
  const CompileKey key = key_named("t:disk");
  {
    CompileCache cache;
    cache.set_store(store);
    auto c = counting(calls, "persisted");
    c.fingerprint = [] { return std::optional<std::string>("fp1"); };
    CHECK(cache.get_or_compile(key, c).compiled);
    CHECK(cache.stats().disk_writes == 1);
    CHECK(store->entries.size() == 1);
  }
  {
    CompileCache fresh;  // a new process, as far as memory goes
    fresh.set_store(store);
    auto c = counting(calls, "never");
    c.fingerprint = [] { return std::optional<std::string>("fp1"); };
    auto hit = fresh.get_or_compile(key, c);
    CHECK_FALSE(hit.compiled);
    CHECK(hit.artifact->binary == "persisted");
    CHECK(fresh.stats().disk_hits == 1);
    CHECK(fresh.stats().compiles == 0);
    // A different fingerprint (another compiler, another source) misses.
    auto other = counting(calls, "rebuilt");
    other.fingerprint = [] { return std::optional<std::string>("fp2"); };
    const CompileKey key2 = key_named("t:disk2");
    CHECK(fresh.get_or_compile(key2, other).compiled);
  }
  CHECK(calls.load() == 2);
}

TEST_CASE(
    "given finalize, then it runs once on the artifact before anyone sees it") {
  CompileCache cache;
  std::atomic<int> calls{0};
  auto c = counting(calls);
  int finalized = 0;
  c.finalize = [&](Artifact& a) {
    ++finalized;
    a.attachment = std::make_shared<int>(7);
  };
  const CompileKey key = key_named("t:fin");
  auto first = cache.get_or_compile(key, c);
  auto second = cache.get_or_compile(key, c);
  CHECK(finalized == 1);
  CHECK(*static_cast<const int*>(second.artifact->attachment.get()) == 7);
  CHECK(first.artifact->id != 0);
}

// ---------------------------------------------------------------------------
// Several processes on one disk cache
// ---------------------------------------------------------------------------
namespace {

namespace fs = std::filesystem;

// Appends one line per compile, from any process (O_APPEND writes of a
// short line do not interleave).
void log_compile(const fs::path& log, const std::string& what) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const std::string line = what + "\n";
  if (fd >= 0) {
    (void)::write(fd, line.data(), line.size());
    ::close(fd);
  }
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Forks `n` children that each run `body` once all are forked (so they
// really ask at the same time); returns their exit codes.
template <typename Body>
std::vector<int> run_together(int n, Body body) {
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      (void)::read(gate[0], &c, 1);  // EOF once the parent lets go
      int code = 99;
      try {
        code = body();
      } catch (...) {
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  std::vector<int> codes;
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

}  // namespace

TEST_CASE(
    "given several processes on one cold disk cache, when they all ask for "
    "the same keys at once, then each key is compiled by one of them") {
  TemporaryDirectory dir("jitwarm-compile-cache-test-");
  const fs::path log = dir.path() / "compiles.log";
  constexpr int kKeys = 12;
  const auto codes = run_together(4, [&] {
    CompileCache cache;
    cache.set_store(
        std::make_shared<DiskCache>(dir.path() / "cache", "", 0, nullptr));
    for (int k = 0; k < kKeys; ++k) {
      const CompileKey key = key_named("t:" + std::to_string(k));
      CompileCache::Compiler c;
      c.fingerprint = [] { return std::optional<std::string>("fp"); };
      c.compile = [&] {
        log_compile(log, key.text());
        // Long enough that, without cross-process claims, the others
        // start the same compile meanwhile.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        Artifact a;
        a.binary = key.text();
        return a;
      };
      if (cache.get_or_compile(key, c).artifact->binary != key.text()) return 1;
    }
    return 0;
  });
  CHECK(codes == std::vector<int>(4, 0));
  const auto compiled = lines_of(log);
  CHECK(compiled.size() == kKeys);
  CHECK(std::set<std::string>(compiled.begin(), compiled.end()).size() ==
        kKeys);
}

namespace {

// A C implementation of the fake plugin's kernel whose compile is slow and
// logged (user_data: the log's path), with a fingerprint, so the runtime
// uses the disk cache for it.
jw_status slow_compile(void* user_data, const jw_compile_key_view* key,
                       const jw_artifact_sink* out) {
  log_compile(static_cast<const char*>(user_data), key->text);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  jw_artifact_desc a{};
  a.struct_size = sizeof(a);
  a.binary = "slow";
  a.binary_size = 4;
  a.format = "fake";
  a.entry_point = "scale<f32>";
  return out->emit(out->ctx, &a);
}
jw_status slow_launch(void*, const jw_artifact_view*, const jw_arg_value*,
                      uint32_t, void*) {
  return JW_OK;
}
jw_status slow_fingerprint(void*, const jw_compile_key_view*,
                           const jw_text_sink* out) {
  out->append(out->ctx, "slow-scale-v1", 13);
  return JW_OK;
}

}  // namespace

TEST_CASE(
    "given several runtimes in separate processes warming one cold cache "
    "with the fake plugin, then each key is compiled once in all") {
  TemporaryDirectory dir("jitwarm-compile-cache-test-");
  const std::string log = (dir.path() / "compiles.log").string();
  const std::string cache_dir = (dir.path() / "cache").string();
  WarmupRequest request;
  request.kernel_name = "jitwarm.test.scale";
  WarmupOptions on_fake;
  on_fake.platform = "fake";
  std::size_t planned = 0;
  {
    Runtime runtime;
    REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
    planned = runtime.warmup_plan({request}, on_fake).size();
  }
  REQUIRE(planned >= 4);
  const auto codes = run_together(4, [&] {
    RuntimeOptions options;
    options.cache_dir = cache_dir;
    Runtime runtime(options);
    if (!runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded) return 98;
    jw_kernel_impl impl{};
    impl.struct_size = sizeof(impl);
    impl.platform = "fake";
    impl.impl_name = "fake-scale";  // keeps the planned keys
    impl.user_data = const_cast<char*>(log.c_str());
    impl.compile = slow_compile;
    impl.launch = slow_launch;
    impl.fingerprint = slow_fingerprint;
    const RegistrationHandle handle = runtime.register_kernels(
        {KernelOverride{request.kernel_name, impl, {}}});
    const WarmupResult r = runtime.warmup({request}, on_fake);
    return r.failed > 0 ? 97 : static_cast<int>(r.compiled);
  });
  int compiled = 0;
  for (int code : codes) {
    CHECK(code < 97);
    compiled += code;
  }
  CHECK(compiled == static_cast<int>(planned));
  CHECK(lines_of(log).size() == planned);
}

TEST_CASE(
    "given a FIFO where a key's disk entry belongs, then the miss is counted "
    "as a reject, compiled once, and the entry stored in its place") {
  TemporaryDirectory dir("jitwarm-compile-cache-test-");
  auto disk = std::make_shared<DiskCache>(dir.path() / "cache", "", 0, nullptr);
  const CompileKey key = key_named("t:fifo");
  const fs::path entry = disk->entry_path(key, "fp");
  fs::create_directories(entry.parent_path());
  REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);  // reading it would block
  std::atomic<int> calls{0};
  auto c = counting(calls, "compiled");
  c.fingerprint = [] { return std::optional<std::string>("fp"); };
  {
    CompileCache cache;
    cache.set_store(disk);
    CHECK(cache.get_or_compile(key, c).compiled);
    const CacheStats s = cache.stats();
    CHECK(s.disk_rejects == 1);
    CHECK(s.compiles == 1);
    CHECK(s.disk_writes == 1);
  }
  CompileCache next_run;
  next_run.set_store(disk);
  CHECK_FALSE(next_run.get_or_compile(key, c).compiled);
  CHECK(next_run.stats().disk_hits == 1);
  CHECK(next_run.stats().disk_rejects == 0);
  CHECK(calls.load() == 1);
}

// --- several keys at once (get_or_compile_batch) ---------------------------
namespace {

// A batch compiler whose keys compile together into "batch:<i>" (or fail,
// for the indices in `failing`), counting its runs and the keys it saw.
struct CountingBatch {
  std::vector<CompileKey> keys;
  std::set<std::size_t> failing;
  bool throw_whole_batch = false;
  bool leave_unanswered = false;        // answers only the first key
  std::string fingerprint;              // empty: none (memory only)
  int batch_runs = 0, single_runs = 0;  // run on the calling thread
  std::vector<std::size_t> together;    // the indices of the last batch

  CompileCache::BatchCompiler compiler() {
    CompileCache::BatchCompiler b;
    b.compiler_for = [this](std::size_t i) {
      CompileCache::Compiler c;
      c.compile = [this, i] {
        ++single_runs;
        Artifact a;
        a.binary = "single:" + std::to_string(i);
        return a;
      };
      if (!fingerprint.empty()) {
        c.fingerprint = [this] {
          return std::optional<std::string>(fingerprint);
        };
      }
      return c;
    };
    b.compile_together = [this](std::span<const std::size_t> indices) {
      ++batch_runs;
      together.assign(indices.begin(), indices.end());
      if (throw_whole_batch) throw Error(JW_ERROR_COMPILE_FAILED, "batch");
      std::vector<CompileCache::KeyOutcome> outcomes(indices.size());
      for (std::size_t k = 0; k < indices.size(); ++k) {
        if (leave_unanswered && k > 0) continue;
        if (failing.contains(indices[k])) {
          outcomes[k].error = std::make_exception_ptr(Error(
              JW_ERROR_COMPILE_FAILED, "key " + std::to_string(indices[k])));
        } else {
          Artifact a;
          a.binary = "batch:" + std::to_string(indices[k]);
          outcomes[k].artifact = std::move(a);
        }
      }
      return outcomes;
    };
    return b;
  }
  std::vector<const CompileKey*> pointers() const {
    std::vector<const CompileKey*> p;
    for (const CompileKey& k : keys) p.push_back(&k);
    return p;
  }
};

CountingBatch batch_of(int n) {
  CountingBatch b;
  for (int i = 0; i < n; ++i)
    b.keys.push_back(key_named("b:" + std::to_string(i)));
  return b;
}

std::string error_of(const CompileCache::BatchLookup& r) {
  try {
    std::rethrow_exception(r.error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE(
    "given a cold cache, when four keys are asked as a batch, then they "
    "compile in one run, count four compiles, and hit afterwards") {
  CompileCache cache;
  CountingBatch batch = batch_of(4);
  const auto keys = batch.pointers();
  const auto results = cache.get_or_compile_batch(keys, batch.compiler());
  CHECK(batch.batch_runs == 1);
  CHECK(batch.single_runs == 0);
  CHECK(batch.together == std::vector<std::size_t>{0, 1, 2, 3});
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(results[i].artifact != nullptr);
    CHECK(results[i].compiled);
    CHECK(results[i].artifact->binary == "batch:" + std::to_string(i));
  }
  CacheStats s = cache.stats();
  CHECK(s.misses == 4);
  CHECK(s.compiles == 4);
  CHECK(s.entries == 4);
  // Every key is now an ordinary hit, alone or in a batch.
  std::atomic<int> calls{0};
  CHECK_FALSE(cache.get_or_compile(batch.keys[2], counting(calls)).compiled);
  const auto again = cache.get_or_compile_batch(keys, batch.compiler());
  CHECK(batch.batch_runs == 1);
  for (const auto& r : again) CHECK_FALSE(r.compiled);
  CHECK(cache.stats().hits == 5);
  CHECK(calls == 0);
}

TEST_CASE(
    "given a batch with one failing key, then the others land and the "
    "failing one reports its own error and is not cached") {
  CompileCache cache;
  CountingBatch batch = batch_of(3);
  batch.failing = {1};
  const auto keys = batch.pointers();
  const auto results = cache.get_or_compile_batch(keys, batch.compiler());
  CHECK(results[0].artifact != nullptr);
  CHECK(results[2].artifact != nullptr);
  REQUIRE(results[1].artifact == nullptr);
  CHECK(error_of(results[1]) == "key 1");
  CHECK(cache.find(batch.keys[1]) == nullptr);
  // A later call compiles the failed key again.
  batch.failing.clear();
  const auto retry = cache.get_or_compile_batch(keys, batch.compiler());
  CHECK(retry[1].compiled);
  CHECK(batch.together == std::vector<std::size_t>{1});
}

TEST_CASE(
    "given a batch that fails as a whole or answers only some keys, then the "
    "keys it did not answer are compiled one by one") {
  CompileCache cache;
  CountingBatch whole = batch_of(3);
  whole.throw_whole_batch = true;
  const auto whole_keys = whole.pointers();
  const auto results = cache.get_or_compile_batch(whole_keys, whole.compiler());
  CHECK(whole.single_runs == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    REQUIRE(results[i].artifact != nullptr);
    CHECK(results[i].artifact->binary == "single:" + std::to_string(i));
  }
  CompileCache other;
  CountingBatch partial = batch_of(3);
  for (CompileKey& k : partial.keys) k = key_named(k.target() + "p");
  partial.leave_unanswered = true;
  const auto partial_keys = partial.pointers();
  const auto answered =
      other.get_or_compile_batch(partial_keys, partial.compiler());
  CHECK(answered[0].artifact->binary == "batch:0");
  CHECK(answered[1].artifact->binary == "single:1");
  CHECK(answered[2].artifact->binary == "single:2");
  CHECK(other.stats().compiles == 3);
}

TEST_CASE(
    "given keys already in the store and a key another process is "
    "compiling, then the batch reads the first, waits for the second, and "
    "compiles only the rest together") {
  TemporaryDirectory dir("jitwarm-compile-cache-test-");
  auto disk = std::make_shared<DiskCache>(dir.path() / "cache", "", 0, nullptr);
  CountingBatch batch = batch_of(4);
  batch.fingerprint = "fp";
  {
    // Key 0 is on disk already.
    CompileCache earlier;
    earlier.set_store(disk);
    std::atomic<int> calls{0};
    auto c = counting(calls, "from disk");
    c.fingerprint = [] { return std::optional<std::string>("fp"); };
    earlier.get_or_compile(batch.keys[0], c);
  }
  // Key 3 is being compiled by another process: it holds the key's claim
  // for a moment, then stores the entry.
  const pid_t child = ::fork();
  if (child == 0) {
    const EntryRef entry(batch.keys[3], "fp");
    auto claim = disk->claim(entry);
    std::ofstream(dir.path() / "claimed") << "yes";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Artifact a;
    a.binary = "other process";
    disk->store(entry, a);
    ::_exit(0);
  }
  while (!fs::exists(dir.path() / "claimed")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CompileCache cache;
  cache.set_store(disk);
  const auto keys = batch.pointers();
  const auto results = cache.get_or_compile_batch(keys, batch.compiler());
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(batch.together == std::vector<std::size_t>{1, 2});
  CHECK(results[0].artifact->binary == "from disk");
  CHECK_FALSE(results[0].compiled);
  CHECK(results[1].artifact->binary == "batch:1");
  CHECK(results[3].artifact->binary == "other process");
  CHECK_FALSE(results[3].compiled);
  CHECK(batch.single_runs == 0);
  const CacheStats s = cache.stats();
  CHECK(s.compiles == 2);
  CHECK(s.disk_hits == 2);
  CHECK(s.disk_writes == 2);
}

TEST_CASE(
    "given a key another thread is compiling, when a batch asks for it, then "
    "the batch waits for that compile instead of compiling it again") {
  CompileCache cache;
  CountingBatch batch = batch_of(2);
  std::atomic<bool> started{false}, release{false};
  CompileCache::Compiler slow;
  slow.compile = [&] {
    started = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Artifact a;
    a.binary = "thread";
    return a;
  };
  std::thread other([&] { cache.get_or_compile(batch.keys[1], slow); });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  const auto keys = batch.pointers();
  const auto results = cache.get_or_compile_batch(keys, batch.compiler());
  other.join();
  releaser.join();
  CHECK(batch.together == std::vector<std::size_t>{0});
  CHECK(results[1].artifact->binary == "thread");
  CHECK_FALSE(results[1].compiled);
  CHECK(cache.stats().compiles == 2);
}

namespace {

// A remote tier whose answer a test picks.
struct ScriptedRemote : RemoteTier {
  std::map<std::string, Artifact> values;
  TierLoad failure;  // for keys it does not hold: a miss
  bool writable = true;
  int loads = 0, stores = 0;
  TierLoad load(const EntryRef& entry) override {
    ++loads;
    auto it = values.find(entry.name());
    if (it != values.end())
      return TierLoad::found(it->second, CacheTier::redis);
    return failure;
  }
  bool store(const EntryRef& entry, const Artifact& a) override {
    ++stores;
    if (writable) values[entry.name()] = a;
    return writable;
  }
};

CompileCache::Compiler fingerprinted(std::atomic<int>& calls) {
  CompileCache::Compiler c = counting(calls, "compiled");
  c.fingerprint = [] { return std::optional<std::string>("fp"); };
  return c;
}

}  // namespace

TEST_CASE(
    "given a remote tier under the store, then a local hit never asks it, a "
    "remote hit lands in the store, and only compiles are written back") {
  auto local = std::make_shared<MemoryStore>();
  auto remote = std::make_shared<ScriptedRemote>();
  std::atomic<int> calls{0};
  {
    CompileCache cache;
    cache.set_store(local);
    cache.set_remote(remote);
    CHECK(
        cache.get_or_compile(key_named("t:a"), fingerprinted(calls)).compiled);
    const CacheStats s = cache.stats();
    CHECK(s.remote_misses == 1);
    CHECK(s.remote_writes == 1);
    CHECK(s.disk_writes == 1);
    CHECK(remote->loads == 1);  // not asked again after the claim
  }
  {
    // Another machine: nothing local, the remote has it.
    auto empty = std::make_shared<MemoryStore>();
    CompileCache cache;
    cache.set_store(empty);
    cache.set_remote(remote);
    const auto got =
        cache.get_or_compile(key_named("t:a"), fingerprinted(calls));
    CHECK_FALSE(got.compiled);
    CHECK(got.artifact->binary == "compiled");
    const CacheStats s = cache.stats();
    CHECK(s.remote_hits == 1);
    CHECK(s.remote_writes == 0);
    CHECK(s.disk_writes == 1);
    CHECK(empty->entries.size() == 1);
  }
  {
    // This machine again: the local store answers; the remote is not asked.
    CompileCache cache;
    cache.set_store(local);
    cache.set_remote(remote);
    const int before = remote->loads;
    CHECK_FALSE(
        cache.get_or_compile(key_named("t:a"), fingerprinted(calls)).compiled);
    CHECK(remote->loads == before);
    CHECK(cache.stats().disk_hits == 1);
  }
  CHECK(calls.load() == 1);
}

TEST_CASE(
    "given a remote tier that fails or rejects, then the key compiles, and "
    "each outcome has its counter") {
  auto remote = std::make_shared<ScriptedRemote>();
  std::atomic<int> calls{0};
  CompileCache cache;
  cache.set_remote(remote);  // no local store: the remote alone
  remote->failure = TierLoad::not_answered();
  remote->writable = false;
  CHECK(
      cache.get_or_compile(key_named("t:down"), fingerprinted(calls)).compiled);
  remote->failure = TierLoad::refused(CacheTier::redis, RejectReason::corrupt);
  CHECK(
      cache.get_or_compile(key_named("t:bad"), fingerprinted(calls)).compiled);
  const CacheStats s = cache.stats();
  CHECK(s.remote_errors == 3);  // one lookup, two write-backs
  CHECK(s.remote_rejects == 1);
  CHECK(s.remote_writes == 0);
  CHECK(calls.load() == 2);
  // Without a fingerprint nothing is persisted, so the remote is not asked.
  CompileCache plain;
  plain.set_remote(remote);
  const int before = remote->loads;
  CHECK(plain.get_or_compile(key_named("t:plain"), counting(calls)).compiled);
  CHECK(remote->loads == before);
}
