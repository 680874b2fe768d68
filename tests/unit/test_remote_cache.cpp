// RedisCache, the remote tier under the disk cache, against a redis-server
// each test starts for itself (tests/support/redis_server.hpp): runtimes
// sharing it, a server killed mid-warmup, frozen, unreachable, full or read
// only, corrupt values, passwords and databases, threads and forked
// workers. Whatever the server does, compiles go on and stay local, with
// one warning; counters say what happened. Signed values tampered with on
// the server are refused under trust, and a read-only node never writes.
// Skipped (77) without redis-server.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "compile_cache.hpp"
#include "cpu_launch_check.hpp"
#include "disk_cache.hpp"
#include "numbered_key.hpp"
#include "redis_server.hpp"
#include "redis_url.hpp"
#include "remote_cache.hpp"
#include "tampered_entry.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::TemporaryDirectory;
using namespace jitwarm::detail;
using jitwarm::test::RedisServer;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  RedisServer::skip_unless_available();
  doctest::Context context(argc, argv);
  return context.run();
}

namespace {

// Log lines, from any thread.
struct Captured {
  mutable std::mutex mutex;
  std::vector<std::string> lines;
  Logger logger{[this](jw_log_level level, const std::string& m) {
    std::lock_guard lock(mutex);
    if (level >= JW_LOG_WARNING) lines.push_back(m);
  }};
  std::size_t count(const std::string& text) const {
    std::lock_guard lock(mutex);
    std::size_t n = 0;
    for (const auto& l : lines) n += l.find(text) != std::string::npos;
    return n;
  }
};

CompileKey key_for(int n) {
  return jitwarm::test::numbered_key(n);
}

CompileCache::Compiler compiler(std::atomic<int>& calls, int n) {
  CompileCache::Compiler c;
  c.compile = [&calls, n] {
    calls.fetch_add(1);
    Artifact a;
    a.binary = "binary of " + std::to_string(n);
    a.format = "cubin";
    a.entry_point = "k";
    return a;
  };
  c.fingerprint = [] { return std::optional<std::string>("nvrtc 13.0"); };
  return c;
}

// A process's caches: its own disk directory, and the shared server.
struct Machine {
  TemporaryDirectory dir{"jitwarm-remote-test-"};
  Captured log;
  std::shared_ptr<DiskCache> disk;
  std::shared_ptr<RedisCache> remote;
  CompileCache cache;
  std::atomic<int> compiles{0};

  explicit Machine(const std::string& url,
                   std::chrono::milliseconds timeout = std::chrono::seconds(2))
      : disk(std::make_shared<DiskCache>(dir.path(), "", 0, &log.logger)),
        remote(std::make_shared<RedisCache>(parse_redis_url(url, "test"),
                                            timeout, &log.logger)) {
    cache.set_store(disk);
    cache.set_remote(remote);
  }
  // True when this call compiled.
  bool get(int n) {
    return cache.get_or_compile(key_for(n), compiler(compiles, n)).compiled;
  }
  std::string value_name(int n) const {
    return RedisCache::value_name(EntryRef(key_for(n), "nvrtc 13.0"));
  }
};

std::string warmup_manifest() {
  return JITWARM_TEST_MANIFEST;
}

}  // namespace

TEST_CASE(
    "given two machines sharing one server, when the first compiles, then "
    "the second fetches each key without compiling and keeps it locally") {
  RedisServer server;
  Machine first(server.url()), second(server.url());
  for (int n = 0; n < 10; ++n) CHECK(first.get(n));
  CacheStats s = first.cache.stats();
  CHECK(s.remote_misses == 10);
  CHECK(s.remote_writes == 10);
  CHECK(s.disk_writes == 10);
  for (int n = 0; n < 10; ++n) {
    CHECK_FALSE(second.get(n));
    CHECK(second.cache.find(key_for(n))->binary ==
          "binary of " + std::to_string(n));
  }
  s = second.cache.stats();
  CHECK(second.compiles.load() == 0);
  CHECK(s.remote_hits == 10);
  CHECK(s.remote_misses == 0);
  CHECK(s.remote_writes == 0);  // nothing compiled, nothing written back
  CHECK(s.disk_writes == 10);   // the next process here finds them locally
  CHECK(second.disk->stats().entries == 10);
  CHECK(server.command({"DBSIZE"}) == "10");
  CHECK(first.log.lines.empty());
  CHECK(second.log.lines.empty());
}

TEST_CASE(
    "given two runtimes with their own directories and one server, when the "
    "first warms the kernel set, then the second compiles none of it") {
  RedisServer server;
  TemporaryDirectory a("jitwarm-remote-test-"), b("jitwarm-remote-test-");
  const WarmupManifest manifest = load_warmup_manifest(warmup_manifest());
  WarmupOptions cpu;
  cpu.platform = "cpu";
  RuntimeOptions options;
  options.remote_cache = server.url();
  options.cache_dir = a.path().string();
  Runtime first(options);
  first.load_plugins();
  const WarmupResult cold = first.warmup(manifest.requests, cpu);
  REQUIRE(cold.failed == 0);
  CHECK(cold.compiled == cold.keys.size());
  CHECK(first.cache_stats().remote_writes == cold.keys.size());

  options.cache_dir = b.path().string();
  Runtime second(options);
  second.load_plugins();
  const WarmupResult warm = second.warmup(manifest.requests, cpu);
  CHECK(warm.failed == 0);
  CHECK(warm.compiled == 0);
  CHECK(warm.cached == cold.keys.size());
  const CacheStats s = second.cache_stats();
  CHECK(s.remote_hits == cold.keys.size());
  CHECK(s.compiles == 0);
  CHECK(second.cache_settings().remote == server.url());
}

TEST_CASE(
    "given a server killed mid-warmup, then every key still compiles and "
    "lands on disk, with one warning and the errors counted") {
  RedisServer server;
  TemporaryDirectory dir("jitwarm-remote-test-");
  Captured log;
  RuntimeOptions options;
  options.remote_cache = server.url();
  options.cache_dir = dir.path().string();
  options.log = [&](jw_log_level level, const std::string& m) {
    log.logger.log(level, m);
  };
  Runtime runtime(options);
  runtime.load_plugins();
  WarmupOptions cpu;
  cpu.platform = "cpu";
  cpu.progress = [&](std::size_t done, std::size_t, const CompileKey&) {
    if (done == 40) server.kill();
  };
  const WarmupResult result =
      runtime.warmup(load_warmup_manifest(warmup_manifest()).requests, cpu);
  CHECK(result.failed == 0);
  CHECK(result.compiled == result.keys.size());
  const CacheStats s = runtime.cache_stats();
  CHECK(s.remote_writes == 40);
  CHECK(s.remote_errors > 0);
  CHECK(s.disk_writes == result.keys.size());
  CHECK(log.count("is unavailable") == 1);
  CHECK(log.count("remote cache") == 1);
}

TEST_CASE(
    "given corrupt, truncated, foreign and wrongly typed values, then each is "
    "a counted reject and a compile, and the compile repairs the value") {
  RedisServer server;
  {
    Machine writer(server.url());
    for (int n = 0; n < 4; ++n) writer.get(n);
  }
  const Machine names(server.url());
  std::string good = server.command({"GET", names.value_name(0)});
  REQUIRE(good.size() > 20);
  std::string flipped = good;
  // A byte of the binary (before the empty signer and signature fields and
  // the checksum).
  flipped[flipped.size() - 8 - 16 - 2] ^= 1;
  CHECK(server.command({"SET", names.value_name(0), flipped}) == "OK");
  CHECK(server.command({"SET", names.value_name(1),
                        good.substr(0, good.size() - 3)}) == "OK");
  // Another key's valid entry under this key's name.
  CHECK(server.command({"SET", names.value_name(2), good}) == "OK");
  CHECK(server.command({"DEL", names.value_name(3)}) == "1");
  CHECK(server.command({"LPUSH", names.value_name(3), "x"}) == "1");

  Machine reader(server.url());
  for (int n = 0; n < 3; ++n) CHECK(reader.get(n));
  CacheStats s = reader.cache.stats();
  CHECK(s.remote_rejects == 3);
  CHECK(reader.log.count("ignored") == 3);
  CHECK(reader.log.count("checksum mismatch") == 1);
  CHECK(reader.log.count("another key") == 1);
  CHECK(reader.get(3));  // WRONGTYPE: a reject too (SET replaces the list)
  s = reader.cache.stats();
  CHECK(s.remote_rejects == 4);
  CHECK(s.remote_writes == 4);
  CHECK(reader.log.count("WRONGTYPE") == 1);
  CHECK(reader.cache.find(key_for(2))->binary == "binary of 2");

  Machine next(server.url());
  for (int n = 0; n < 4; ++n) CHECK_FALSE(next.get(n));  // repaired
  CHECK(next.cache.stats().remote_hits == 4);
}

TEST_CASE(
    "given a server out of memory, then writes stop with one warning and "
    "reads go on") {
  RedisServer server;
  {
    Machine writer(server.url());
    writer.get(0);
  }
  CHECK(server.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) ==
        "OK");
  CHECK(server.command({"CONFIG", "SET", "maxmemory", "1"}) == "OK");
  Machine m(server.url());
  CHECK_FALSE(m.get(0));  // read
  for (int n = 1; n < 6; ++n) CHECK(m.get(n));
  const CacheStats s = m.cache.stats();
  CHECK(s.remote_hits == 1);
  CHECK(s.remote_writes == 0);
  CHECK(s.remote_errors == 5);
  CHECK(m.log.count("refuses writes") == 1);
  CHECK(m.log.count("OOM") == 1);
  CHECK(m.disk->stats().entries == 6);
}

TEST_CASE(
    "given a read-only replica, then writes stop with one warning naming it "
    "and reads go on") {
  RedisServer server;
  {
    Machine writer(server.url());
    writer.get(0);
  }
  // A master that is not there: the replica keeps its data, read only.
  CHECK(server.command({"REPLICAOF", "127.0.0.1", "1"}) == "OK");
  Machine m(server.url());
  CHECK_FALSE(m.get(0));
  CHECK(m.get(1));
  CHECK(m.get(2));
  CHECK(m.log.count("READONLY") == 1);
  CHECK(m.cache.stats().remote_writes == 0);
  CHECK(m.disk->stats().entries == 3);
}

TEST_CASE(
    "given a frozen server, then a lookup gives up after the timeout, once, "
    "and the rest go on without it") {
  RedisServer server;
  Machine m(server.url(), std::chrono::milliseconds(200));
  CHECK(m.get(0));  // connected and written while it answered
  server.pause();
  for (int n = 1; n < 5; ++n) CHECK(m.get(n));
  server.resume();
  const CacheStats s = m.cache.stats();
  CHECK(s.remote_errors == 8);  // four lookups and four write-backs
  CHECK(m.log.count("no answer within 200 ms") == 1);
  CHECK(m.log.lines.size() == 1);
  CHECK(m.disk->stats().entries == 5);
}

TEST_CASE(
    "given no server at the address, then compiles go on with one warning "
    "saying so") {
  int port = 0;
  {
    RedisServer gone;
    port = gone.port();
  }
  Machine m("redis://127.0.0.1:" + std::to_string(port) + "/0");
  for (int n = 0; n < 3; ++n) CHECK(m.get(n));
  CHECK(m.log.count("Connection refused") == 1);
  CHECK(m.cache.stats().remote_errors == 6);
}

TEST_CASE(
    "given a server with a password and a database number, then the URL's "
    "are used, and a wrong password is one warning") {
  RedisServer server({"--requirepass", "s3cret"});
  const std::string base =
      "redis://:s3cret@127.0.0.1:" + std::to_string(server.port());
  Machine m(base + "/3");
  CHECK(m.get(0));
  CHECK(m.cache.stats().remote_writes == 1);
  CHECK(m.log.lines.empty());
  Machine wrong("redis://:nope@127.0.0.1:" + std::to_string(server.port()) +
                "/3");
  CHECK(wrong.get(0));
  CHECK(wrong.log.count("AUTH refused") == 1);
  CHECK(wrong.log.count("nope") == 0);  // a password is never logged
  Machine other_db(base + "/4");
  CHECK(other_db.get(0));  // db 4 does not have it
  Machine same_db(base + "/3");
  CHECK_FALSE(same_db.get(0));
}

TEST_CASE(
    "given threads compiling different keys through one tier, then each key "
    "is written once and read back") {
  RedisServer server;
  Machine m(server.url());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int n = t * 10; n < t * 10 + 10; ++n) m.get(n);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(m.cache.stats().remote_writes == 80);
  CHECK(server.command({"DBSIZE"}) == "80");
  Machine reader(server.url());
  for (int n = 0; n < 80; ++n) CHECK_FALSE(reader.get(n));
}

TEST_CASE(
    "given a forked worker using the tier its parent used, then both talk to "
    "the server on their own connections") {
  RedisServer server;
  Machine parent(server.url());
  CHECK(parent.get(0));  // the parent's connection is now pooled
  const pid_t pid = fork();
  if (pid == 0) {
    // A new CompileCache, the inherited tier: it must open its own link.
    CompileCache child;
    child.set_remote(parent.remote);
    std::atomic<int> calls{0};
    bool ok = !child.get_or_compile(key_for(0), compiler(calls, 0)).compiled;
    for (int n = 100; n < 120; ++n)
      ok = ok && child.get_or_compile(key_for(n), compiler(calls, n)).compiled;
    _exit(ok && child.stats().remote_writes == 20 ? 0 : 1);
  }
  for (int n = 1; n < 20; ++n) CHECK(parent.get(n));
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(parent.cache.stats().remote_writes == 20);
  CHECK(parent.log.lines.empty());
  CHECK(server.command({"DBSIZE"}) == "40");
}

TEST_CASE(
    "given a warmup, then its result says what the remote tier answered and "
    "did not, in threads and in worker processes alike") {
  RedisServer server;
  WarmupRequest request;
  request.kernel_name = "silu_and_mul";
  request.axes = {{"x", {{TensorChoice{JW_DTYPE_FLOAT32, true, {}}}, {}}},
                  {"H", {{__int128{16}, __int128{17}, __int128{1}}, {}}}};
  const auto warm = [&](unsigned jobs) {
    RuntimeOptions options;
    options.remote_cache = server.url();
    options.remote_timeout = std::chrono::milliseconds(500);
    options.no_cache_dir = true;
    options.log = [](jw_log_level, const std::string&) {};
    Runtime runtime(options);
    runtime.load_plugins();
    WarmupOptions cpu;
    cpu.platform = "cpu";
    cpu.jobs = jobs;
    cpu.parallel = WarmupParallelism::processes;
    return runtime.warmup({request}, cpu);
  };
  for (const unsigned jobs : {1u, 2u}) {
    CAPTURE(jobs);
    const WarmupResult answered = warm(jobs);
    CHECK(answered.failed == 0);
    CHECK(answered.remote_answered >= answered.keys.size());
    CHECK(answered.remote_failed == 0);
  }
  server.kill();
  for (const unsigned jobs : {1u, 2u}) {
    CAPTURE(jobs);
    const WarmupResult refused = warm(jobs);
    CHECK(refused.failed == 0);
    CHECK(refused.compiled == refused.keys.size());
    CHECK(refused.remote_answered == 0);
    CHECK(refused.remote_failed > 0);
  }
}

TEST_CASE(
    "given a tampered cubin in a signed value of the server, when a runtime "
    "that trusts the signer launches its kernel, then the value is refused "
    "as tampered, counted, recompiled, and the launch is right") {
  RedisServer server;
  TemporaryDirectory keys("jitwarm-remote-keys-"),
      builder("jitwarm-remote-test-"), node("jitwarm-remote-test-");
  const CacheKeyPair pair =
      write_cache_key_pair((keys.path() / "build.key").string());
  RuntimeOptions o;
  o.remote_cache = server.url();
  o.cache_dir = builder.path().string();
  o.signing_key = pair.secret_key_file;
  {
    Runtime build(o);
    build.load_plugins();
    jitwarm::test::launch_silu_and_mul_and_check(build);
    REQUIRE(build.cache_stats().remote_writes == 1);
  }
  REQUIRE(server.command({"DBSIZE"}) == "1");
  const std::string name = server.command({"RANDOMKEY"});
  const std::string value = server.command({"GET", name});
  CHECK(server.command({"SET", name, jitwarm::test::tampered(value)}) == "OK");

  Captured log;
  RuntimeOptions n;
  n.remote_cache = server.url();
  n.cache_dir = node.path().string();
  n.trusted_keys = {pair.public_key};
  n.remote_cache_mode = RemoteCacheMode::read_only;
  n.log = [&](jw_log_level level, const std::string& m) {
    log.logger.log(level, m);
  };
  Runtime fleet(n);
  fleet.load_plugins();
  jitwarm::test::launch_silu_and_mul_and_check(fleet);
  const CacheStats s = fleet.cache_stats();
  CHECK(s.compiles == 1);
  CHECK(s.remote_rejects == 1);
  CHECK(s.remote_hits == 0);
  CHECK(fleet.metrics_text().find(
            "jitwarm_cache_rejected_entries_total{tier=\"redis\",reason="
            "\"bad_signature\"} 1\n") != std::string::npos);
  CHECK(log.count("tampered") == 1);
  // Read-only: the tampered value stays as it was (the node wrote nothing).
  CHECK(server.command({"GET", name}) == jitwarm::test::tampered(value));
}

TEST_CASE(
    "given a read-only node, when it compiles a warmup and misses, then no "
    "SET reaches the server, and it still loads what is there") {
  RedisServer server;
  TemporaryDirectory node("jitwarm-remote-test-"),
      builder("jitwarm-remote-test-");
  const WarmupManifest manifest = load_warmup_manifest(warmup_manifest());
  WarmupOptions cpu;
  cpu.platform = "cpu";
  RuntimeOptions o;
  o.remote_cache = server.url();
  o.cache_dir = node.path().string();
  o.remote_cache_mode = RemoteCacheMode::read_only;
  {
    Runtime reader(o);
    reader.load_plugins();
    const WarmupResult cold = reader.warmup(manifest.requests, cpu);
    REQUIRE(cold.failed == 0);
    CHECK(cold.compiled == cold.keys.size());
    CHECK(reader.cache_stats().remote_writes == 0);
    CHECK(reader.cache_stats().remote_errors == 0);
    CHECK(reader.cache_settings().remote_mode == RemoteCacheMode::read_only);
  }
  CHECK(server.command({"DBSIZE"}) == "0");
  const std::string stats = server.command({"INFO", "commandstats"});
  CHECK(stats.find("cmdstat_set:") == std::string::npos);
  CHECK(stats.find("cmdstat_getrange:") != std::string::npos);

  // A writer fills the server; a read-only node with an empty directory
  // loads it all and compiles nothing.
  RuntimeOptions w = o;
  w.cache_dir = builder.path().string();
  w.remote_cache_mode = RemoteCacheMode::read_write;
  {
    Runtime writer(w);
    writer.load_plugins();
    REQUIRE(writer.warmup(manifest.requests, cpu).failed == 0);
  }
  TemporaryDirectory fresh("jitwarm-remote-test-");
  o.cache_dir = fresh.path().string();
  Runtime reader(o);
  reader.load_plugins();
  const WarmupResult warm = reader.warmup(manifest.requests, cpu);
  CHECK(warm.compiled == 0);
  CHECK(reader.cache_stats().remote_hits == warm.keys.size());
}
