// Plugins that crash, exit or hang in their own code (tests/plugins/
// zoo-crash: in jitwarm_plugin_negotiate or in register_all), against a
// host that probes each candidate in a child process first
// (core/src/plugin_probe.hpp): each is rejected with what happened and
// where, the host keeps working, and its other plugins launch. Without the
// probe, the documented behaviour: the process that loads one dies with it.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace jitwarm;
namespace fs = std::filesystem;

namespace {

// Each spinning candidate costs its bound; far above what a real load of
// these plugins takes (milliseconds, under the sanitizers too).
constexpr double kProbeTimeout = 8;

constexpr const char* kSilu =
    "vllm.model_executor.layers.activation.silu_and_mul";

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// The sanitizers catch SIGSEGV themselves and end the process their way
// (CI: abort_on_error), and check for leaks in exit(): the signal and the
// status then are theirs.
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string crasher(const std::string& variant) {
  return std::string(ZOO_CRASH_PLUGIN_DIR) + "/libjitwarm-zoo-" + variant +
         ".so";
}

Runtime quiet_runtime() {
  RuntimeOptions options;
  options.no_cache_dir = true;
  options.no_remote_cache = true;
  options.log = [](jw_log_level, const std::string&) {};
  return Runtime(std::move(options));
}

// What each crashing variant's probe must say (unsanitized; sanitized runs
// check the place and the kind of death only).
struct Expected {
  std::string variant;
  std::string text;  // the whole detail
  std::string where;
};
const std::vector<Expected> kExpected = {
    {"entry-segfaults",
     "killed by signal 11 (SIGSEGV) while loading, in jitwarm_plugin_negotiate",
     "jitwarm_plugin_negotiate"},
    {"entry-aborts",
     "killed by signal 6 (SIGABRT) while loading, in jitwarm_plugin_negotiate",
     "jitwarm_plugin_negotiate"},
    {"entry-exits",
     "exited with status 3 while loading, in jitwarm_plugin_negotiate",
     "jitwarm_plugin_negotiate"},
    {"entry-spins",
     "timed out after 8 s while loading, in jitwarm_plugin_negotiate",
     "jitwarm_plugin_negotiate"},
    {"register-segfaults",
     "killed by signal 11 (SIGSEGV) while loading, in register_all",
     "register_all"},
    {"register-aborts",
     "killed by signal 6 (SIGABRT) while loading, in register_all",
     "register_all"},
    {"register-exits", "exited with status 3 while loading, in register_all",
     "register_all"},
    {"register-spins", "timed out after 8 s while loading, in register_all",
     "register_all"},
};

void check_rejections(const PluginLoadReport& report) {
  std::map<std::string, const PluginLoadRecord*> by_file;
  for (const PluginLoadRecord& r : report.records) {
    by_file[fs::path(r.path).filename().string()] = &r;
  }
  for (const Expected& e : kExpected) {
    CAPTURE(e.variant);
    const std::string file = "libjitwarm-zoo-" + e.variant + ".so";
    REQUIRE(by_file.contains(file));
    const PluginLoadRecord& r = *by_file.at(file);
    CHECK_FALSE(r.loaded);
    CHECK(r.rejection == PluginRejection::crashed_in_probe);
    if (!kSanitized || contains(e.text, "timed out")) {
      CHECK(r.detail == e.text);
    } else {
      CHECK(contains(r.detail, " in " + e.where));
    }
  }
}

// The host still warms and launches the CPU reference's silu_and_mul, by
// its short name.
void check_host_works(Runtime& runtime) {
  WarmupOptions cpu;
  cpu.platform = "cpu";
  WarmupRequest silu;
  silu.kernel_name = kSilu;
  const WarmupResult warmed = runtime.warmup({silu}, cpu);
  CHECK(warmed.failed == 0);
  std::vector<float> x(4 * 16, 1.0f), out(4 * 8, 0.0f);
  const int64_t x_shape[] = {4, 16}, out_shape[] = {4, 8};
  const jw_tensor x_tensor = make_tensor(x.data(), JW_DTYPE_FLOAT32, x_shape);
  const jw_tensor out_tensor =
      make_tensor(out.data(), JW_DTYPE_FLOAT32, out_shape);
  runtime.kernel("silu_and_mul")
      .launch({arg(out_tensor), arg(x_tensor), arg_int(4), arg_int(8)},
              LaunchOptions{"cpu", 0, nullptr});
  CHECK(out[0] > 0.73f);  // silu(1) * 1 = 0.7311
  CHECK(out[0] < 0.74f);
}

}  // namespace

TEST_CASE(
    "given plugins that crash, exit or spin in negotiate or register_all, "
    "when a host loads them isolated, then each is rejected with what "
    "happened and where, and the host keeps working") {
  Runtime runtime = quiet_runtime();
  PluginLoadOptions options;
  options.search_path = {ZOO_CRASH_PLUGIN_DIR, REFERENCE_PLUGIN};
  options.isolate = true;
  options.probe_timeout_seconds = kProbeTimeout;
  const PluginLoadReport report = runtime.load_plugins(options);
  check_rejections(report);
  CHECK(report.loaded_count() == 1);  // the CPU reference
  CHECK(report.rejected_count() == kExpected.size());
  CHECK(contains(report.to_text(), "crashed in probe"));
  check_host_works(runtime);
}

namespace {
// Where the host's crash handler below records that it ran.
int g_host_handler_fd = -1;
void host_crash_handler(int) {
  const char mark = 'x';
  [[maybe_unused]] const ssize_t n = ::write(g_host_handler_fd, &mark, 1);
  ::_exit(99);
}
}  // namespace

TEST_CASE(
    "given a host with crash handlers of its own, when a probed plugin "
    "crashes, then the plugin's death is named and the host's handler never "
    "runs for it") {
  int marks[2];
  REQUIRE(::pipe(marks) == 0);
  g_host_handler_fd = marks[1];
  struct sigaction handler = {}, old_segv = {}, old_abrt = {};
  handler.sa_handler = host_crash_handler;
  REQUIRE(::sigaction(SIGSEGV, &handler, &old_segv) == 0);
  REQUIRE(::sigaction(SIGABRT, &handler, &old_abrt) == 0);
  Runtime runtime = quiet_runtime();
  PluginLoadOptions options;
  options.search_path = {crasher("entry-segfaults"),
                         crasher("register-aborts")};
  options.isolate = true;
  const PluginLoadReport report = runtime.load_plugins(options);
  ::sigaction(SIGSEGV, &old_segv, nullptr);
  ::sigaction(SIGABRT, &old_abrt, nullptr);
  ::close(marks[1]);
  char mark = 0;
  CHECK(::read(marks[0], &mark, 1) == 0);  // nothing written, writer closed
  ::close(marks[0]);
  REQUIRE(report.records.size() == 2);
  for (const PluginLoadRecord& r : report.records) {
    CAPTURE(r.path);
    CHECK(r.rejection == PluginRejection::crashed_in_probe);
    CHECK(contains(r.detail, "killed by signal"));
  }
}

TEST_CASE(
    "given JITWARM_PLUGIN_ISOLATION=1, then every load of any host probes, "
    "load_plugin too") {
  Runtime runtime = quiet_runtime();
  REQUIRE(setenv("JITWARM_PLUGIN_ISOLATION", "1", 1) == 0);
  PluginLoadOptions options;
  options.search_path = {crasher("entry-segfaults"), REFERENCE_PLUGIN};
  const PluginLoadReport report = runtime.load_plugins(options);
  const PluginLoadRecord one = runtime.load_plugin(crasher("register-exits"));
  unsetenv("JITWARM_PLUGIN_ISOLATION");
  REQUIRE(report.records.size() == 2);
  CHECK(report.records[0].rejection == PluginRejection::crashed_in_probe);
  CHECK(report.records[1].loaded);
  CHECK(one.rejection == PluginRejection::crashed_in_probe);
  CHECK(contains(one.detail, "in register_all"));
  check_host_works(runtime);
}

TEST_CASE(
    "given a JITWARM_PLUGIN_ISOLATION that is not 0 or 1, then loading is an "
    "error naming the variable") {
  Runtime runtime = quiet_runtime();
  REQUIRE(setenv("JITWARM_PLUGIN_ISOLATION", "yes", 1) == 0);
  PluginLoadOptions options;
  options.search_path = {REFERENCE_PLUGIN};
  std::string message;
  try {
    runtime.load_plugins(options);
  } catch (const Error& e) {
    message = e.what();
    CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
  }
  unsetenv("JITWARM_PLUGIN_ISOLATION");
  CHECK(contains(message, "JITWARM_PLUGIN_ISOLATION=yes"));
  CHECK(runtime.load_plugins(options).loaded_count() == 1);
}

TEST_CASE(
    "given good plugins only, then a probing load loads what an in-process "
    "load loads") {
  Runtime probed = quiet_runtime();
  Runtime direct = quiet_runtime();
  PluginLoadOptions options;
  options.search_path = {REFERENCE_PLUGIN};
  options.isolate = true;
  const PluginLoadReport a = probed.load_plugins(options);
  options.isolate = false;
  const PluginLoadReport b = direct.load_plugins(options);
  CHECK(a.to_text() == b.to_text());
  CHECK(probed.kernel_names() == direct.kernel_names());
}

TEST_CASE(
    "given a crashing plugin and no probe, then the process that loads it "
    "dies with it (the documented behaviour)") {
  for (const std::string variant :
       {"entry-segfaults", "entry-aborts", "register-exits"}) {
    CAPTURE(variant);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // The child dies as a host would: without doctest's crash handler,
      // which would report the death as this test's failure.
      std::signal(SIGSEGV, SIG_DFL);
      std::signal(SIGABRT, SIG_DFL);
      Runtime runtime = quiet_runtime();
      runtime.load_plugin(crasher(variant));
      _exit(0);  // not reached: the plugin ends the process
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    if (!kSanitized) {
      if (variant == "register-exits") {
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 3);
      } else {
        CHECK(WIFSIGNALED(status));
      }
    }
  }
}
