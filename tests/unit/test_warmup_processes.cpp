// Process-parallel warmup (core/src/warmup_execution_processes.cpp,
// `jitwarm warmup --jobs N`): results per key, artifacts in this process's
// cache, a worker that dies, and workers that never outlive their parent nor
// leave the file they were writing.
#include <doctest/doctest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "in_flight_files.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using jitwarm::detail::TemporaryDirectory;
namespace fs = std::filesystem;

namespace {

constexpr const char* kScale = "jitwarm.test.scale";

// How the test implementation of the fake kernel compiles.
struct Behaviour {
  std::string log;          // one line per compile started: "<pid> <key>"
  std::string in_flight;    // directory for files "being written"
  bool block = false;       // never finish (until a signal)
  bool die_on_f64 = false;  // SIGKILL itself on float64 keys
};

void append(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::app) << line << "\n" << std::flush;
}

jw_status test_compile(void* user_data, const jw_compile_key_view* key,
                       const jw_artifact_sink* out) {
  const auto& b = *static_cast<const Behaviour*>(user_data);
  if (b.die_on_f64 && key->params[0].dtype == JW_DTYPE_FLOAT64)
    std::raise(SIGKILL);
  if (b.block) {
    // What a worker killed in the middle of DiskCache::store leaves: a
    // registered temporary file.
    const fs::path file =
        fs::path(b.in_flight) / (".entry.jwc.tmp." + std::to_string(getpid()));
    const detail::InFlightFile registered(file);
    std::ofstream(file) << "half an entry";
    append(b.log, std::to_string(getpid()) + " " + key->text);
    while (true) pause();
  }
  append(b.log, std::to_string(getpid()) + " " + key->text);
  jw_artifact_desc a{};
  a.struct_size = sizeof(a);
  a.binary = "test";
  a.binary_size = 4;
  a.format = "fake";
  a.entry_point = "scale<f32>";
  return out->emit(out->ctx, &a);
}
jw_status test_launch(void*, const jw_artifact_view*, const jw_arg_value*,
                      uint32_t, void*) {
  return JW_OK;
}
// With a fingerprint its artifacts can travel through a store, which is
// what lets workers compile it.
jw_status test_fingerprint(void*, const jw_compile_key_view*,
                           const jw_text_sink* out) {
  out->append(out->ctx, "test-scale-v1", 13);
  return JW_OK;
}

// A runtime with the fake plugin, its kernel compiled as `b` says, and
// the keys of its default warmup (2 dtypes x 3 classes of n).
struct Setup {
  Runtime runtime;
  RegistrationHandle handle;
  std::vector<CompileKey> keys;
  // `cache_dir` empty: memory only (the workers' artifacts then travel
  // through a private temporary store).
  explicit Setup(Behaviour& b, const std::string& cache_dir = "")
      : runtime(options_for(cache_dir)) {
    REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
    jw_kernel_impl impl{};
    impl.struct_size = sizeof(impl);
    impl.platform = "fake";
    impl.impl_name = "test-scale";
    impl.user_data = &b;
    impl.compile = test_compile;
    impl.launch = test_launch;
    impl.fingerprint = test_fingerprint;
    handle = runtime.register_kernels({KernelOverride{kScale, impl, {}}});
    WarmupRequest request;
    request.kernel_name = kScale;
    WarmupOptions options;
    options.platform = "fake";
    keys = runtime.warmup_plan({request}, options);
    REQUIRE(keys.size() == 6);
  }
  static RuntimeOptions options_for(const std::string& cache_dir) {
    RuntimeOptions o;
    o.cache_dir = cache_dir;
    o.no_cache_dir = cache_dir.empty();
    o.log = [](jw_log_level, const std::string&) {};
    return o;
  }
  WarmupResult warm_in_processes(
      unsigned jobs,
      std::function<void(std::size_t, std::size_t, const CompileKey&)>
          progress = {}) {
    WarmupOptions options;
    options.jobs = jobs;
    options.parallel = WarmupParallelism::processes;
    options.progress = std::move(progress);
    return runtime.warmup_keys(keys, options);
  }
};

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE(
    "given worker processes, then every key's result comes back to the "
    "parent, with progress per key") {
  TemporaryDirectory dir("jitwarm-workers-test-");
  Behaviour b{(dir.path() / "log").string(), dir.path().string()};
  for (const bool persistent : {false, true}) {
    CAPTURE(persistent);
    fs::remove(b.log);
    Setup s(b, persistent ? (dir.path() / "cache").string() : "");
    std::vector<std::size_t> progress;
    const WarmupResult r = s.warm_in_processes(
        3, [&](std::size_t done, std::size_t total, const CompileKey&) {
          CHECK(total == 6);
          progress.push_back(done);
        });
    CHECK(r.compiled == 6);
    CHECK(r.failed == 0);
    CHECK(progress == std::vector<std::size_t>{1, 2, 3, 4, 5, 6});
    for (std::size_t i = 0; i < s.keys.size(); ++i)
      CHECK(r.keys[i].key_text == s.keys[i].text());
    // Compiled in the workers, not here...
    std::set<std::string> pids;
    for (const auto& line : lines_of(b.log))
      pids.insert(line.substr(0, line.find(' ')));
    CHECK(lines_of(b.log).size() == 6);
    CHECK(pids.size() > 1);
    CHECK_FALSE(pids.contains(std::to_string(getpid())));
    // ... and in this process's cache all the same: nothing compiles again.
    for (const CompileKey& key : s.keys) {
      CHECK(s.runtime.cached_artifact(key).has_value());
    }
    CHECK(s.runtime.cache_stats().compiles == 0);
    WarmupOptions again;
    CHECK(s.runtime.warmup_keys(s.keys, again).compiled == 0);
    CHECK(lines_of(b.log).size() == 6);
  }
  // The private store is gone with the warmup.
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    CHECK(e.path().filename().string().rfind("jitwarm-warmup-", 0) != 0);
  }
}

TEST_CASE(
    "given a worker that dies, then its unreported keys fail saying how, and "
    "the others' results stand") {
  TemporaryDirectory dir("jitwarm-workers-test-");
  Behaviour b{(dir.path() / "log").string(), dir.path().string()};
  b.die_on_f64 = true;
  Setup s(b);
  const WarmupResult r = s.warm_in_processes(2);
  std::size_t killed = 0;
  for (const auto& k : r.keys) {
    if (!k.failed) continue;
    CHECK(k.error.find("killed by signal 9") != std::string::npos);
    ++killed;
  }
  CHECK(killed > 0);
  CHECK(r.failed == killed);
  CHECK(r.compiled + r.failed == 6);
}

TEST_CASE(
    "given a warmup parent killed mid-warmup by SIGKILL, SIGTERM or SIGINT, "
    "then no worker survives it and no file a worker was writing remains") {
  // Orphaned workers become this process's children, so the test can see
  // (and reap) them.
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  for (int signal_number : {SIGKILL, SIGTERM, SIGINT}) {
    CAPTURE(signal_number);
    TemporaryDirectory dir("jitwarm-workers-test-");
    const fs::path in_flight = dir.path() / "in-flight";
    fs::create_directories(in_flight);
    Behaviour b{(dir.path() / "log").string(), in_flight.string()};
    b.block = true;
    const pid_t parent = fork();
    REQUIRE(parent >= 0);
    if (parent == 0) {
      // As in a shell's job (the test framework catches these).
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      Setup s(b);
      s.warm_in_processes(2);
      _exit(0);
    }
    // Both workers are inside a compile, each writing its file.
    std::vector<std::string> started;
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while ((started = lines_of(b.log)).size() < 2 &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(started.size() == 2);
    std::set<pid_t> workers;
    for (const auto& line : started) workers.insert(std::stoi(line));

    REQUIRE(kill(parent, signal_number) == 0);
    int status = 0;
    REQUIRE(waitpid(parent, &status, 0) == parent);
    CHECK(WIFSIGNALED(status));

    // Each worker ends (by the SIGTERM its parent's death sends); one that
    // is still there after two minutes is an orphan still compiling.
    std::map<pid_t, int> ends;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (ends.size() < workers.size() &&
           std::chrono::steady_clock::now() < deadline) {
      for (pid_t w : workers) {
        if (ends.contains(w)) continue;
        if (waitpid(w, &status, WNOHANG) == w) ends[w] = status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (pid_t w : workers) {
      if (ends.contains(w)) {
        CHECK(WIFSIGNALED(ends[w]));
        CHECK(WTERMSIG(ends[w]) == SIGTERM);
        continue;
      }
      FAIL_CHECK("worker " << w << " outlived its parent");
      kill(w, SIGKILL);
      waitpid(w, nullptr, 0);
    }
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(in_flight))
      left.push_back(e.path().filename().string());
    CHECK(left.empty());
  }
  // The killed parents' private stores are swept by the next warmup that
  // needs one.
  TemporaryDirectory dir("jitwarm-workers-test-");
  Behaviour b{(dir.path() / "log").string(), dir.path().string()};
  Setup s(b);
  CHECK(s.warm_in_processes(2).compiled == 6);
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    CHECK(e.path().filename().string().rfind("jitwarm-warmup-", 0) != 0);
  }
}
