// CompileCache: counters after each step, one compile per key under
// contention, failures not cached, and the persistent layer under it.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <atomic>
#include <map>
#include <thread>

#include "compile_cache.hpp"

using namespace jitwarm;
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
  std::optional<Artifact> load(const CompileKey& key, std::string_view fp,
                               bool*) override {
    ++loads;
    auto it = entries.find(key.encoding() + std::string(fp));
    if (it == entries.end()) return std::nullopt;
    return it->second;
  }
  bool store(const CompileKey& key, std::string_view fp,
             const Artifact& a) override {
    entries[key.encoding() + std::string(fp)] = a;
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
