// The bad-plugin zoo (tests/plugins/zoo, built from fake_plugin.cpp with one
// macro per fault) against the loader: for each fault, what the load report
// says, and that the host keeps running. Also truncated copies of a plugin,
// threads left running in a plugin, implementations whose parameter names
// do not fit their schema in either load order, and the vet hook.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "registry.hpp"
#include "runtime_impl.hpp"

using namespace jitwarm;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSilu =
    "vllm.model_executor.layers.activation.silu_and_mul";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string zoo(const std::string& variant) {
  return std::string(ZOO_PLUGIN_DIR) + "/libjitwarm-zoo-" + variant + ".so";
}

// A runtime whose log lines are kept.
struct LoggedRuntime {
  std::shared_ptr<std::vector<std::string>> lines =
      std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
  std::unique_ptr<Runtime> runtime;
  LoggedRuntime() {
    RuntimeOptions options;
    options.log = [lines = lines, mutex = mutex](jw_log_level,
                                                 const std::string& line) {
      std::lock_guard lock(*mutex);
      lines->push_back(line);
    };
    runtime = std::make_unique<Runtime>(std::move(options));
  }
  bool logged(const std::string& part) const {
    std::lock_guard lock(*mutex);
    for (const auto& line : *lines) {
      if (contains(line, part)) return true;
    }
    return false;
  }
};

const PluginLoadRecord& record_for(const PluginLoadReport& report,
                                   const std::string& variant) {
  const std::string file = "libjitwarm-zoo-" + variant + ".so";
  for (const auto& r : report.records) {
    if (fs::path(r.path).filename() == file) return r;
  }
  FAIL("no record for " << file);
  throw;  // unreachable
}

// The implementation registered for `kernel` on `platform`, as the core
// calls it (its guarded table).
const detail::ImplRecord& winner(Runtime& runtime, const std::string& kernel,
                                 const std::string& platform) {
  auto slot = detail::impl_of(runtime).registry().slot(kernel);
  REQUIRE(slot != nullptr);
  const auto reading = detail::impl_of(runtime).registry().read_guard();
  const detail::ImplRecord* impl =
      slot->state.load(std::memory_order_acquire)->winner(platform);
  REQUIRE(impl != nullptr);
  return *impl;
}

fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("jitwarm-zoo-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE(
    "given the zoo directory, when it is loaded in-process, then each fault "
    "is named in the load report and the host keeps running") {
  LoggedRuntime l;
  Runtime& runtime = *l.runtime;
  runtime.load_plugins({{REFERENCE_PLUGIN}, false});
  const PluginLoadReport report = runtime.load_plugins({{ZOO_PLUGIN_DIR}});
  CHECK(report.records.size() == 15);

  const auto rejected = [&](const std::string& variant, PluginRejection why,
                            const std::string& detail) {
    const PluginLoadRecord& r = record_for(report, variant);
    CAPTURE(variant);
    CAPTURE(r.detail);
    CHECK_FALSE(r.loaded);
    CHECK(r.rejection == why);
    CHECK(contains(r.detail, detail));
  };
  rejected("negotiate-throws", PluginRejection::negotiation_failed,
           "jitwarm_plugin_negotiate threw std::runtime_error: fake: "
           "negotiate throws");
  rejected("negotiate-throws-int", PluginRejection::negotiation_failed,
           "jitwarm_plugin_negotiate threw an exception of type int");
  rejected("register-all-throws", PluginRejection::registration_failed,
           "register_all threw std::runtime_error: fake: register_all throws");
  rejected("register-all-throws-int", PluginRejection::registration_failed,
           "register_all threw an exception of type int");
  rejected("thread-then-rejected", PluginRejection::registration_failed,
           "started a thread, then refused to register");
  rejected("schema-dtype-invalid-bit", PluginRejection::registration_failed,
           "allows dtype bits 0x1 that name no dtype");
  rejected("schema-dtype-high-bits", PluginRejection::registration_failed,
           "allows dtype bits 0xffff0000 that name no dtype");
  rejected("schema-default-kind-77", PluginRejection::registration_failed,
           "has a default of unknown scalar kind 77");
  rejected("schema-same-dtype-missing", PluginRejection::registration_failed,
           "follows the dtype of 'no_such_param', which is not another "
           "tensor parameter");
  // The reference defined silu_and_mul first: the names are checked now.
  rejected("wrong-param-names", PluginRejection::registration_failed,
           "unexpected argument name(s) input");
  for (const std::string variant :
       {"shutdown-throws", "shutdown-throws-int", "callbacks-throw",
        "callbacks-throw-int", "thread-left-running"}) {
    const PluginLoadRecord& r = record_for(report, variant);
    CAPTURE(variant);
    CHECK_MESSAGE(r.loaded, r.detail);
  }
  CHECK(report.loaded_count() == 5);

  // Nothing malformed was defined: no zoo schema reached the registry but
  // those of the plugins that loaded.
  for (const std::string& name : runtime.kernel_names()) {
    CAPTURE(name);
    CHECK((name.rfind("vllm.", 0) == 0 ||
           name == "jitwarm.zoo.shutdown_throws" ||
           name == "jitwarm.zoo.shutdown_throws_int" ||
           name == "jitwarm.zoo.callbacks_throw" ||
           name == "jitwarm.zoo.callbacks_throw_int" ||
           name == "jitwarm.zoo.thread_left_running"));
  }
  // And the host still warms and launches.
  WarmupOptions cpu;
  cpu.platform = "cpu";
  WarmupRequest silu;
  silu.kernel_name = kSilu;
  const WarmupResult warm = runtime.warmup({silu}, cpu);
  CHECK(warm.failed == 0);
  CHECK(warm.compiled > 0);
}

TEST_CASE(
    "given a plugin whose every callback throws, when the core calls each, "
    "then each throw becomes that call's failure naming the plugin, and "
    "none escapes") {
  for (const std::string variant : {"callbacks-throw", "callbacks-throw-int"}) {
    CAPTURE(variant);
    const std::string thrown = variant == "callbacks-throw"
                                   ? "std::runtime_error: fake: "
                                   : "an exception of type int";
    LoggedRuntime l;
    Runtime& runtime = *l.runtime;
    const PluginLoadRecord loaded = runtime.load_plugin(zoo(variant));
    REQUIRE_MESSAGE(loaded.loaded, loaded.detail);
    const std::string kernel =
        variant == "callbacks-throw"
            ? std::string("jitwarm.zoo.callbacks_throw")
            : std::string("jitwarm.zoo.callbacks_throw_int");
    const std::string platform = "zoo_" + kernel.substr(12);

    // Platform callbacks, as the core and tools reach them.
    const std::vector<PlatformInfo> infos = runtime.platforms();
    REQUIRE(infos.size() == 1);
    CHECK_FALSE(infos[0].can_compile);  // capabilities threw: no capability
    try {
      runtime.target_for(platform);
      FAIL("expected device_target to fail");
    } catch (const Error& e) {
      CHECK(contains(e.what(), "device_target threw " + thrown));
      CHECK(contains(e.what(), zoo(variant)));
    }
    const jw_platform_desc& desc = runtime.platform(platform);
    void* pointer = nullptr;
    int32_t count = 0;
    char byte = 0;
    CHECK(desc.device_count(desc.user_data, &count) == JW_ERROR_NO_DEVICE);
    CHECK(contains(jw_last_error(), "device_count threw " + thrown));
    CHECK(desc.allocate(desc.user_data, 0, 8, &pointer) ==
          JW_ERROR_LAUNCH_FAILED);
    CHECK(contains(jw_last_error(), "allocate threw " + thrown));
    CHECK(desc.free_memory(desc.user_data, 0, nullptr) ==
          JW_ERROR_LAUNCH_FAILED);
    CHECK(desc.copy(desc.user_data, 0, &byte, &byte, 1, JW_COPY_HOST_TO_DEVICE,
                    nullptr) == JW_ERROR_LAUNCH_FAILED);
    CHECK(desc.synchronize(desc.user_data, 0, nullptr) ==
          JW_ERROR_LAUNCH_FAILED);
    CHECK(contains(jw_last_error(), "synchronize threw " + thrown));

    // Compile, through warmup: the key fails with the plugin's throw.
    WarmupOptions options;
    options.platform = platform;
    options.target = platform + ":toy1";
    WarmupRequest request;
    request.kernel_name = kernel;
    TensorChoice f32;
    f32.dtype = JW_DTYPE_FLOAT32;
    WarmupAxis x, n;
    x.values = {f32};
    n.values = {__int128{16}};
    request.axes = {{"x", x}, {"n", n}};
    const WarmupResult warm = runtime.warmup({request}, options);
    REQUIRE(warm.keys.size() == 1);
    CHECK(warm.failed == 1);
    CHECK(contains(warm.keys[0].error, "compile threw " + thrown));
    CHECK(contains(warm.keys[0].error, "implementation 'fake-scale'"));

    // launch, describe and fingerprint, as the launch path and the cache
    // call them.
    const detail::ImplRecord& impl = winner(runtime, kernel, platform);
    jw_artifact_view artifact{};
    artifact.struct_size = sizeof(artifact);
    CHECK(impl.c.launch(impl.c.user_data, &artifact, nullptr, 0, nullptr) ==
          JW_ERROR_LAUNCH_FAILED);
    CHECK(contains(jw_last_error(), "launch threw " + thrown));
    jw_compile_key_view key{};
    key.struct_size = sizeof(key);
    CHECK(impl.c.describe(impl.c.user_data, &key, nullptr) ==
          JW_ERROR_UNSUPPORTED);
    CHECK(contains(jw_last_error(), "describe threw " + thrown));
    CHECK(impl.c.fingerprint(impl.c.user_data, &key, nullptr) ==
          JW_ERROR_UNSUPPORTED);
    CHECK(contains(jw_last_error(), "fingerprint threw " + thrown));

    // destroy throws when the runtime ends: logged, and the host goes on.
    auto lines = l.lines;
    l.runtime.reset();
    bool destroy_logged = false;
    for (const auto& line : *lines) {
      destroy_logged = destroy_logged || contains(line, "destroy threw");
    }
    CHECK(destroy_logged);
  }
}

TEST_CASE(
    "given a plugin whose shutdown throws, when its runtime ends, then the "
    "throw is logged as that plugin's and the host goes on") {
  for (const std::string variant : {"shutdown-throws", "shutdown-throws-int"}) {
    CAPTURE(variant);
    LoggedRuntime l;
    REQUIRE(l.runtime->load_plugin(zoo(variant)).loaded);
    auto lines = l.lines;
    l.runtime.reset();
    bool logged = false;
    for (const auto& line : *lines) {
      logged = logged || (contains(line, zoo(variant)) &&
                          contains(line, "shutdown threw"));
    }
    CHECK(logged);
  }
}

TEST_CASE(
    "given truncated copies of a plugin (every cut in 256-byte steps, and "
    "one without section headers cut inside a segment), then each is "
    "rejected before dlopen and the host does not fault") {
  const fs::path source = zoo("thread-left-running");
  std::ifstream in(source, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 13 * 1024);
  const fs::path dir = fresh_directory("truncated");
  std::size_t cuts = 0;
  for (std::size_t length = 256; length < bytes.size(); length += 256) {
    std::ofstream(dir / ("cut-" + std::to_string(length) + ".so"),
                  std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(length));
    ++cuts;
  }
  std::ofstream(dir / "cut-last-byte.so", std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 1));
  ++cuts;
  // Without section headers the loader would take it: only the program
  // headers can tell that a segment is cut.
  std::string no_sections = bytes;
  const uint64_t zero = 0;
  std::memcpy(&no_sections[offsetof(ElfW(Ehdr), e_shoff)], &zero, 8);
  std::memset(&no_sections[offsetof(ElfW(Ehdr), e_shnum)], 0, 2);
  std::ofstream(dir / "no-sections-cut.so", std::ios::binary)
      .write(no_sections.data(), 6 * 1024);
  ++cuts;
  MESSAGE(cuts << " truncated copies of a " << bytes.size() << "-byte plugin");

  Runtime runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
  const PluginLoadReport report = runtime.load_plugins({{dir.string()}});
  REQUIRE(report.records.size() == cuts);
  for (const PluginLoadRecord& r : report.records) {
    CAPTURE(r.path);
    CAPTURE(r.detail);
    CHECK(r.rejection == PluginRejection::not_a_shared_object);
    CHECK((contains(r.detail, "truncated") ||
           contains(r.detail, "not an ELF file")));
  }
  const PluginLoadRecord& stripped = report.records.back();
  CHECK(contains(stripped.path, "no-sections-cut.so"));
  CHECK(contains(stripped.detail, "segment"));
  fs::remove_all(dir);
}

namespace {

// The read end of a pipe the zoo's thread beats on.
int heartbeat_pipe() {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  setenv("JITWARM_FAKE_HEARTBEAT_FD", std::to_string(fds[1]).c_str(), 1);
  return fds[0];  // both ends stay open: the thread writes for ever
}

// Empties the pipe, then waits for two more beats: the thread has returned
// into the plugin's code since (each beat is followed by a return there).
void thread_still_runs_plugin_code(int read_fd) {
  const int flags = fcntl(read_fd, F_GETFL);
  fcntl(read_fd, F_SETFL, flags | O_NONBLOCK);
  char buffer[4096];
  while (read(read_fd, buffer, sizeof(buffer)) > 0) {
  }
  fcntl(read_fd, F_SETFL, flags);
  std::size_t beats = 0;
  while (beats < 2) {
    const ssize_t got = read(read_fd, buffer, 2 - beats);
    REQUIRE(got > 0);
    beats += static_cast<std::size_t>(got);
  }
}

}  // namespace

TEST_CASE(
    "given a plugin that leaves a thread running, when its runtime is "
    "destroyed, then the thread goes on running the plugin's code and the "
    "host does not crash (the library stays mapped)") {
  const int beats = heartbeat_pipe();
  {
    Runtime runtime{RuntimeOptions{
        {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
    REQUIRE(runtime.load_plugin(zoo("thread-left-running")).loaded);
  }
  thread_still_runs_plugin_code(beats);
  unsetenv("JITWARM_FAKE_HEARTBEAT_FD");
}

TEST_CASE(
    "given a plugin that starts a thread and is then rejected, then the "
    "thread goes on running the plugin's code and the host does not crash") {
  const int beats = heartbeat_pipe();
  {
    Runtime runtime{RuntimeOptions{
        {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
    const PluginLoadRecord r = runtime.load_plugin(zoo("thread-then-rejected"));
    REQUIRE(r.rejection == PluginRejection::registration_failed);
  }
  thread_still_runs_plugin_code(beats);
  unsetenv("JITWARM_FAKE_HEARTBEAT_FD");
}

TEST_CASE(
    "given an implementation with wrong parameter names loaded before its "
    "schema, then the plugin, left with nothing, is rejected with the "
    "reason, whatever the load order") {
  SUBCASE("implementation first, in one search") {
    Runtime runtime{RuntimeOptions{
        {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
    const PluginLoadReport report =
        runtime.load_plugins({{zoo("wrong-param-names"), REFERENCE_PLUGIN}});
    REQUIRE(report.records.size() == 2);
    const PluginLoadRecord& wrong = report.records[0];
    // Nothing of it was wrong when it loaded; once its one implementation
    // was dropped it served nothing, and says why.
    CHECK_FALSE(wrong.loaded);
    CHECK(wrong.rejection == PluginRejection::registration_failed);
    CHECK(wrong.kernels.empty());
    REQUIRE(wrong.dropped.size() == 1);
    CHECK(contains(wrong.dropped[0], std::string(kSilu) + " [cpu]"));
    CHECK(contains(wrong.dropped[0], "unexpected argument name(s) input"));
    CHECK(contains(wrong.detail, "none of its implementations fits"));
    CHECK(contains(wrong.detail, "unexpected argument name(s) input"));
    CHECK_FALSE(contains(report.to_text(), "implements 1 kernel"));
    CHECK(contains(report.to_text(), "rejected  " + zoo("wrong-param-names")));
    CHECK(report.rejected_count() == 1);
    CHECK(contains(report.to_json(), "\"dropped\""));
    // The history says the same, and the reference still serves the kernel.
    CHECK(runtime.load_history().front().dropped.size() == 1);
    CHECK_FALSE(runtime.load_history().front().loaded);
    CHECK(runtime.explain(kSilu).platforms.at(0).winner.impl_name ==
          "reference-cpu");
  }
  SUBCASE("implementation first, in two loads") {
    Runtime runtime{RuntimeOptions{
        {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
    const PluginLoadRecord pending =
        runtime.load_plugin(zoo("wrong-param-names"));
    CHECK(pending.kernels.size() == 1);  // waiting for its schema
    runtime.load_plugin(REFERENCE_PLUGIN);
    const std::vector<PluginLoadRecord> history = runtime.load_history();
    const PluginLoadRecord& now = history.front();
    CHECK(now.kernels.empty());
    CHECK(now.dropped.size() == 1);
    CHECK(now.rejection == PluginRejection::registration_failed);
  }
  SUBCASE("schema first") {
    Runtime runtime{RuntimeOptions{
        {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
    const PluginLoadReport report =
        runtime.load_plugins({{REFERENCE_PLUGIN, zoo("wrong-param-names")}});
    REQUIRE(report.records.size() == 2);
    CHECK(report.records[1].rejection == PluginRejection::registration_failed);
    CHECK(report.records[1].kernels.empty());
  }
}

TEST_CASE(
    "given a vet hook, then a candidate it refuses is rejected as crashed in "
    "probe and never loaded") {
  Runtime runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
  PluginLoadOptions options;
  options.search_path = {zoo("thread-left-running"), REFERENCE_PLUGIN};
  options.vet = [](const std::string& path) -> std::optional<std::string> {
    if (contains(path, "zoo")) return "killed by signal 11 in a child";
    return std::nullopt;
  };
  const PluginLoadReport report = runtime.load_plugins(options);
  REQUIRE(report.records.size() == 2);
  CHECK(report.records[0].rejection == PluginRejection::crashed_in_probe);
  CHECK(report.records[0].detail == "killed by signal 11 in a child");
  CHECK(report.records[1].loaded);
  CHECK(contains(report.to_text(), "crashed in probe"));
  for (const auto& name : runtime.kernel_names()) {
    CHECK(name.rfind("jitwarm.zoo.", 0) != 0);
  }
}
