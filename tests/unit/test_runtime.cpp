// The runtime (core/src/runtime.cpp) end to end with the fake "good"
// plugin: launch path, warmup into the launch cache, the JIT monitor,
// register_kernels, handles that see overrides, the persistent cache, and
// the C API.
#include <doctest/doctest.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace jitwarm;
namespace fs = std::filesystem;

namespace {

constexpr const char* kScale = "jitwarm.test.scale";

struct Fixture {
  std::vector<std::pair<jw_log_level, std::string>> log;
  std::mutex log_mutex;
  Runtime runtime;
  explicit Fixture(RuntimeOptions options = {},
                   const char* plugin = FAKE_GOOD_PLUGIN)
      : runtime([&] {
          options.log = [this](jw_log_level l, const std::string& m) {
            std::lock_guard lock(log_mutex);
            log.emplace_back(l, m);
          };
          return options;
        }()) {
    const PluginLoadRecord r = runtime.load_plugin(plugin);
    REQUIRE_MESSAGE(r.loaded, r.detail);
  }
  // The sizes of the batches the fake-batches plugin compiled, in order.
  std::vector<int> batch_sizes() {
    std::lock_guard lock(log_mutex);
    std::vector<int> sizes;
    const std::string prefix = "fake compile_batch of ";
    for (const auto& entry : log) {
      const std::size_t at = entry.second.find(prefix);
      if (at != std::string::npos) {
        sizes.push_back(std::stoi(entry.second.substr(at + prefix.size())));
      }
    }
    return sizes;
  }
  int warnings_containing(const std::string& text) {
    std::lock_guard lock(log_mutex);
    int n = 0;
    for (const auto& [level, m] : log)
      n += level == JW_LOG_WARNING && m.find(text) != std::string::npos;
    return n;
  }
};

struct Buffers {
  std::vector<float> x, out;
  jw_tensor tx{}, tout{};
  explicit Buffers(int n) : x(n), out(n, -1.f) {
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i);
    const std::array<int64_t, 1> shape{n};
    tx = make_tensor(x.data(), JW_DTYPE_FLOAT32, shape);
    tout = make_tensor(out.data(), JW_DTYPE_FLOAT32, shape);
  }
  std::array<jw_arg_value, 4> args(int64_t n, double factor) const {
    return {arg(tout), arg(tx), arg_int(n), arg_float(factor)};
  }
};

LaunchOptions on_fake() {
  LaunchOptions o;
  o.platform = "fake";
  return o;
}

WarmupRequest scale_request(std::initializer_list<WarmupValue> n_values) {
  WarmupRequest r;
  r.kernel_name = kScale;
  r.axes = {{"x", WarmupAxis{{TensorChoice{JW_DTYPE_FLOAT32, true, {}}}, {}}},
            {"n", WarmupAxis{n_values, {}}}};
  return r;
}

// A C override of `kernel` on the fake platform: it compiles nothing and
// writes 42 into its first tensor's first element.
jw_kernel_override c_override(const char* kernel) {
  jw_kernel_override o{};
  o.struct_size = sizeof(o);
  o.kernel_name = kernel;
  o.impl.struct_size = sizeof(o.impl);
  o.impl.platform = "fake";
  o.impl.impl_name = "c-override";
  o.impl.compile = [](void*, const jw_compile_key_view*,
                      const jw_artifact_sink* out) {
    jw_artifact_desc a{};
    a.struct_size = sizeof(a);
    a.format = "none";
    a.entry_point = "c";
    return out->emit(out->ctx, &a);
  };
  o.impl.launch = [](void*, const jw_artifact_view*, const jw_arg_value* a,
                     uint32_t, void*) {
    static_cast<float*>(a[0].value.tensor->data)[0] = 42.f;
    return JW_OK;
  };
  return o;
}

}  // namespace

TEST_CASE(
    "given a loaded plugin, when a kernel is launched twice, then it compiles "
    "once") {
  Fixture f;
  CHECK(f.runtime.default_platform() == "fake");
  CHECK(f.runtime.target_for("fake") == "fake:toy1");
  Buffers b(8);
  const KernelHandle k = f.runtime.kernel(kScale);
  k.launch(b.args(8, 2.0), on_fake());
  CHECK(b.out[7] == 14.f);
  CacheStats s = f.runtime.cache_stats();
  CHECK(s.compiles == 1);
  CHECK(s.misses == 1);
  k.launch(b.args(8, 3.0), on_fake());
  CHECK(b.out[7] == 21.f);
  s = f.runtime.cache_stats();
  CHECK(s.compiles == 1);
  CHECK(s.hits == 1);
  // n = 1 is another class (n = 8 had none): another compile.
  k.launch(b.args(1, 1.0), on_fake());
  CHECK(f.runtime.cache_stats().compiles == 2);
}

TEST_CASE(
    "given an implementation that prefers a batch size, then a warmup that "
    "leaves the size to it compiles batches of that size, and an asked size "
    "wins") {
  // 12 keys: x float32 or float64, aligned or not, and three classes of n.
  WarmupRequest request =
      scale_request({__int128{1}, __int128{16}, __int128{7}});
  request.axes[0].second.values = {TensorChoice{JW_DTYPE_FLOAT32, true, {}},
                                   TensorChoice{JW_DTYPE_FLOAT32, false, {}},
                                   TensorChoice{JW_DTYPE_FLOAT64, true, {}},
                                   TensorChoice{JW_DTYPE_FLOAT64, false, {}}};
  const auto batches_of = [&](std::optional<unsigned> asked) {
    RuntimeOptions memory_only;
    memory_only.no_cache_dir = true;  // every key compiles
    Fixture f(memory_only, FAKE_BATCHES_PLUGIN);
    WarmupOptions options;
    options.platform = "fake";
    options.batch_size = asked;
    const WarmupResult w = f.runtime.warmup({request}, options);
    CHECK(w.keys.size() == 12);
    CHECK(w.compiled == 12);
    CHECK(w.failed == 0);
    return f.batch_sizes();
  };
  // The plugin prefers 3 (JITWARM_FAKE_PREFERRED_BATCH_SIZE unset).
  ::unsetenv("JITWARM_FAKE_PREFERRED_BATCH_SIZE");
  CHECK(batches_of(std::nullopt) == std::vector<int>{3, 3, 3, 3});
  CHECK(batches_of(2u) == std::vector<int>{2, 2, 2, 2, 2, 2});
  CHECK(batches_of(1u).empty());  // one by one: compile, never compile_batch
  // No preference: the default.
  ::setenv("JITWARM_FAKE_PREFERRED_BATCH_SIZE", "0", 1);
  static_assert(kDefaultWarmupBatchSize == 8);
  CHECK(batches_of(std::nullopt) == std::vector<int>{8, 4});
  ::unsetenv("JITWARM_FAKE_PREFERRED_BATCH_SIZE");
}

TEST_CASE(
    "given warmup of every class, then no launch of those classes compiles") {
  Fixture f;
  const WarmupResult w = f.runtime.warmup(
      {scale_request({__int128{1}, __int128{16}, __int128{7}})},
      {"fake", "", 2, {}});
  CHECK(w.keys.size() == 3);
  CHECK(w.compiled == 3);
  CHECK(w.failed == 0);
  const uint64_t compiles = f.runtime.cache_stats().compiles;
  Buffers b(64);
  const KernelHandle k = f.runtime.kernel(kScale);
  for (int64_t n : {1, 16, 32, 48, 3, 5, 63}) {
    // The launch computes the very key warmup compiled.
    CHECK(f.runtime.is_cached(k.key_for(b.args(n, 1.0), on_fake())));
    k.launch(b.args(n, 1.0), on_fake());
  }
  CHECK(f.runtime.cache_stats().compiles == compiles);
  // Warming again finds everything cached.
  const WarmupResult again =
      f.runtime.warmup({scale_request({__int128{1}})}, {"fake", "", 1, {}});
  CHECK(again.cached == 1);
  CHECK(again.compiled == 0);
}

TEST_CASE(
    "given a sealed runtime in error mode, when an unwarmed key launches, then "
    "it is refused "
    "and names the key") {
  Fixture f;
  f.runtime.warmup({scale_request({__int128{16}})}, {"fake", "", 1, {}});
  f.runtime.set_jit_monitor(JitMonitorMode::error);
  f.runtime.seal();
  Buffers b(32);
  const KernelHandle k = f.runtime.kernel(kScale);
  CHECK_NOTHROW(k.launch(b.args(32, 1.0), on_fake()));
  const uint64_t compiles = f.runtime.cache_stats().compiles;
  const CompileKey cold = k.key_for(b.args(3, 1.0), on_fake());
  try {
    k.launch(b.args(3, 1.0), on_fake());
    FAIL("expected a refusal");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_JIT_REFUSED);
    CHECK(std::string(e.what()).find(cold.text()) != std::string::npos);
  }
  CHECK_FALSE(f.runtime.is_cached(cold));
  CHECK(f.runtime.cache_stats().compiles ==
        compiles);  // a refusal compiles nothing
  const JitMonitorStats monitor = f.runtime.jit_monitor_stats();
  CHECK(monitor.refusals == 1);
  CHECK(monitor.compiles_after_seal == 0);
  CHECK(monitor.warnings == 0);
}

TEST_CASE(
    "given a sealed runtime in error mode, when a host-function override is "
    "registered and launched with an unwarmed key, then it runs: it compiles "
    "nothing") {
  Fixture f;
  f.runtime.set_jit_monitor(JitMonitorMode::error);
  f.runtime.seal();
  Buffers b(4);
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value> args, void*) {
    static_cast<float*>(args[0].value.tensor->data)[0] = 99.f;
  };
  RegistrationHandle handle =
      f.runtime.register_kernels({{kScale, std::nullopt, host}}, "server");
  CHECK_NOTHROW(f.runtime.kernel(kScale).launch(b.args(3, 1.0), on_fake()));
  CHECK(b.out[0] == 99.f);
  CHECK(f.runtime.cache_stats().compiles == 0);
  CHECK(f.runtime.jit_monitor_stats().refusals == 0);
  CHECK(f.runtime.jit_monitor_stats().compiles_after_seal == 0);
  handle.release();
  // The plugin's own implementation compiles: still refused.
  CHECK_THROWS_AS(f.runtime.kernel(kScale).launch(b.args(3, 1.0), on_fake()),
                  Error);
  CHECK(f.runtime.jit_monitor_stats().refusals == 1);
}

TEST_CASE(
    "given register_kernels origins however the host spells them, then the "
    "origin says host once") {
  Fixture f;
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value>, void*) {};
  const auto origin_of = [&](const std::string& said) {
    RegistrationHandle h =
        f.runtime.register_kernels({{kScale, std::nullopt, host}}, said);
    return f.runtime.explain(kScale).platforms.at(0).winner;
  };
  CHECK(origin_of("server").origin == "host: server");
  CHECK(origin_of("host: server").origin == "host: server");
  CHECK(origin_of("host:server").origin == "host: server");
  CHECK(origin_of("host").origin == "host");
  CHECK(origin_of("host").impl_name == "host");
  CHECK(origin_of("host: server").impl_name == "host:server");
  RegistrationHandle h =
      f.runtime.register_kernels({{kScale, std::nullopt, host}});
  CHECK(f.runtime.explain(kScale).platforms.at(0).winner.origin == "host");
}

TEST_CASE(
    "given exact keys from key_for, when warmed with warmup_keys, then they "
    "are cached; a key "
    "for a replaced implementation is refused") {
  Fixture f;
  Buffers b(8);
  const KernelHandle k = f.runtime.kernel(kScale);
  const CompileKey key = k.key_for(b.args(8, 1.0), on_fake());
  CHECK_FALSE(f.runtime.is_cached(key));
  const WarmupResult w = f.runtime.warmup_keys({key});
  CHECK(w.compiled == 1);
  CHECK(f.runtime.is_cached(key));
  const std::vector<CompileKey> plan =
      f.runtime.warmup_plan({scale_request({__int128{8}})}, {});
  REQUIRE(plan.size() == 1);
  CHECK(plan[0] == key);
  HostKernel host;
  host.platform = "fake";
  host.impl_name = "other";
  host.launch = [](std::span<const jw_arg_value>, void*) {};
  RegistrationHandle h =
      f.runtime.register_kernels({{kScale, std::nullopt, host}});
  CHECK_THROWS_WITH(f.runtime.warmup_keys({key}),
                    doctest::Contains("was made for 'fake-scale'"));
}

TEST_CASE(
    "given warn mode, then each cold key is logged once; record mode writes a "
    "manifest that "
    "warms it next time") {
  const fs::path record =
      fs::temp_directory_path() /
      ("jitwarm-record-" + std::to_string(getpid()) + ".toml");
  fs::remove(record);
  CompileKey cold = [&] {
    RuntimeOptions options;
    options.jit_monitor = JitMonitorMode::warn;
    options.jit_record_path = record.string();
    Fixture f(options);
    f.runtime.seal();
    Buffers b(32);
    const KernelHandle k = f.runtime.kernel(kScale);
    k.launch(b.args(3, 1.0), on_fake());
    k.launch(b.args(5, 1.0), on_fake());  // same class: no second warning
    const CompileKey key = k.key_for(b.args(3, 1.0), on_fake());
    CHECK(f.warnings_containing(key.text()) == 1);
    const JitMonitorStats monitor = f.runtime.jit_monitor_stats();
    CHECK(monitor.compiles_after_seal == 1);
    CHECK(monitor.warnings == 1);
    CHECK(monitor.recorded == 1);
    CHECK(monitor.refusals == 0);
    return key;
  }();
  const WarmupManifest m = load_warmup_manifest(record.string());
  REQUIRE(m.requests.size() == 1);
  Fixture next;
  const WarmupResult w = next.runtime.warmup(m.requests, {});
  REQUIRE(w.keys.size() == 1);
  CHECK(w.keys[0].key_hash == cold.hash());
  fs::remove(record);
}

TEST_CASE(
    "given a host override by name, then every handle runs it at once, with "
    "arguments in its "
    "order, and releasing restores the plugin's") {
  Fixture f;
  const KernelHandle early =
      f.runtime.kernel(kScale);  // taken before the override
  Buffers b(4);
  std::vector<std::string> order;
  HostKernel host;
  host.platform = "fake";
  host.impl_name = "host-scale";
  host.param_names = {"factor", "n", "x", "out",
                      "BLOCK"};  // the schema's, reordered
  host.launch = [&](std::span<const jw_arg_value> args, void*) {
    order.clear();
    for (const auto& a : args)
      order.push_back(a.kind == JW_VALUE_TENSOR ? "tensor" : "scalar");
    auto* out = static_cast<float*>(args[3].value.tensor->data);
    out[0] = static_cast<float>(args[0].value.scalar.value.f * 100);
  };
  {
    RegistrationHandle handle =
        f.runtime.register_kernels({{kScale, std::nullopt, host}}, "test");
    CHECK(f.warnings_containing("overrides 'fake-scale'") == 1);
    early.launch(b.args(4, 2.0), on_fake());
    CHECK(b.out[0] == 200.f);
    CHECK(order == std::vector<std::string>{"scalar", "scalar", "tensor",
                                            "tensor", "scalar"});
    const KernelExplanation e = f.runtime.explain(kScale);
    REQUIRE(e.platforms.size() == 1);
    CHECK(e.platforms[0].winner.impl_name == "host-scale");
    CHECK(e.platforms[0].winner.origin == "host: test");
    CHECK(e.platforms[0].replaced.at(0).impl_name == "fake-scale");
  }
  early.launch(b.args(4, 2.0), on_fake());
  CHECK(b.out[0] == 0.f);  // x[0] * 2 from the plugin again
  CHECK(b.out[3] == 6.f);
}

TEST_CASE(
    "given a host override that was launched, when released, then what its "
    "launch function holds is freed") {
  Fixture f;
  const KernelHandle k = f.runtime.kernel(kScale);
  Buffers b(4);
  auto held = std::make_shared<int>(7);  // stands for a host's buffers
  HostKernel host;
  host.platform = "fake";
  host.impl_name = "host-scale";
  host.param_names = {"factor", "n", "x", "out", "BLOCK"};
  host.launch = [held](std::span<const jw_arg_value> args, void*) {
    static_cast<float*>(args[3].value.tensor->data)[0] =
        static_cast<float>(*held);
  };
  {
    RegistrationHandle handle =
        f.runtime.register_kernels({{kScale, std::nullopt, host}}, "test");
    host = HostKernel{};
    k.launch(b.args(4, 2.0), on_fake());
    CHECK(b.out[0] == 7.f);
    CHECK(held.use_count() > 1);
  }
  // Nothing launches now: the override is gone with its handle, not kept
  // for as long as the runtime lives.
  CHECK(held.use_count() == 1);
  k.launch(b.args(4, 2.0), on_fake());
  CHECK(b.out[0] == 0.f);
}

TEST_CASE(
    "given bad overrides, then register_kernels fails and registers nothing") {
  Fixture f;
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value>, void*) {};
  CHECK_THROWS_WITH(
      f.runtime.register_kernels({{"ns.unknown", std::nullopt, host}}),
      doctest::Contains("unknown kernel 'ns.unknown'"));
  HostKernel wrong = host;
  wrong.param_names = {"out", "x", "count", "factor", "BLOCK"};
  CHECK_THROWS_WITH(
      f.runtime.register_kernels(
          {{kScale, std::nullopt, host}, {kScale, std::nullopt, wrong}}),
      doctest::Contains(
          "unexpected argument name(s) count; the schema's parameters "
          "are: out, x, n, factor, BLOCK"));
  CHECK(f.runtime.explain(kScale).platforms.at(0).winner.impl_name ==
        "fake-scale");
}

TEST_CASE(
    "given threads launching through one handle, when another thread overrides "
    "and restores, "
    "then every launch runs one whole implementation") {
  Fixture f;
  const KernelHandle k = f.runtime.kernel(kScale);
  f.runtime.warmup({scale_request({__int128{16}})}, {"fake", "", 1, {}});
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, launches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      Buffers b(16);
      while (!stop.load()) {
        k.launch(b.args(16, 2.0), on_fake());
        // Plugin: out[1] = 2; override: out[1] = -7.
        if (b.out[1] != 2.f && b.out[1] != -7.f) bad.fetch_add(1);
        launches.fetch_add(1);
      }
    });
  }
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value> args, void*) {
    auto* out = static_cast<float*>(args[0].value.tensor->data);
    for (int i = 0; i < 16; ++i) out[i] = -7.f;
  };
  // Keep overriding until the launchers have really raced with it.
  for (int i = 0; i < 100 || launches.load() < 300; ++i) {
    RegistrationHandle h =
        f.runtime.register_kernels({{kScale, std::nullopt, host}}, "racer");
  }
  stop = true;
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  CHECK(launches.load() > 0);
}

TEST_CASE(
    "given a persistent cache, when a second runtime launches a warmed key, "
    "then it reads the "
    "disk and compiles nothing") {
  const fs::path dir = fs::temp_directory_path() /
                       ("jitwarm-rt-cache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  RuntimeOptions options;
  options.cache_dir = dir.string();
  {
    Fixture warm(options);
    const WarmupResult w = warm.runtime.warmup({scale_request({__int128{16}})},
                                               {"fake", "", 1, {}});
    CHECK(w.compiled == 1);
    CHECK(warm.runtime.cache_stats().disk_writes == 1);
  }
  Fixture cold(options);
  Buffers b(16);
  cold.runtime.kernel(kScale).launch(b.args(16, 1.0), on_fake());
  CHECK(b.out[15] == 15.f);
  const CacheStats s = cold.runtime.cache_stats();
  CHECK(s.compiles == 0);
  CHECK(s.disk_hits == 1);
  fs::remove_all(dir);
}

TEST_CASE("given warmup mistakes, then they fail clearly") {
  Fixture f;
  CHECK_THROWS_WITH(f.runtime.warmup({scale_request({__int128{1}})},
                                     {"fake", "cuda:sm_90", 1, {}}),
                    doctest::Contains("is not a fake target"));
  WarmupRequest unknown;
  unknown.kernel_name = "ns.nope";
  CHECK_THROWS_WITH(f.runtime.warmup({unknown}, {"fake", "", 1, {}}),
                    doctest::Contains("unknown kernel 'ns.nope'"));
  CHECK_THROWS_WITH(
      f.runtime.warmup({scale_request({__int128{1}})}, {"cuda", "", 1, {}}),
      doctest::Contains("unknown platform 'cuda'"));
}

TEST_CASE(
    "given the C API, then a host can load, launch, override and read errors") {
  jw_runtime* rt = nullptr;
  REQUIRE(jw_runtime_create(&rt) == JW_OK);
  REQUIRE(jw_runtime_load_plugin(rt, FAKE_GOOD_PLUGIN) == JW_OK);
  CHECK(jw_runtime_load_plugin(rt, "/nonexistent.so") != JW_OK);
  CHECK(std::string(jw_last_error()).find("/nonexistent.so") !=
        std::string::npos);
  jw_kernel_handle* k = nullptr;
  CHECK(jw_kernel_find(rt, "ns.missing", &k) == JW_ERROR_NOT_FOUND);
  CHECK(std::string(jw_last_error()).find("unknown kernel 'ns.missing'") !=
        std::string::npos);
  REQUIRE(jw_kernel_find(rt, kScale, &k) == JW_OK);
  Buffers b(4);
  auto args = b.args(4, 5.0);
  REQUIRE(jw_kernel_launch(k, "fake", 0, args.data(), 4, nullptr) == JW_OK);
  CHECK(b.out[3] == 15.f);
  CHECK(jw_kernel_launch(k, "fake", 0, args.data(), 2, nullptr) ==
        JW_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(jw_last_error()).find("missing argument 'n'") !=
        std::string::npos);

  jw_kernel_override o = c_override(kScale);
  jw_registration* reg = nullptr;
  REQUIRE(jw_register_kernels(rt, &o, 1, &reg) == JW_OK);
  REQUIRE(jw_kernel_launch(k, "fake", 0, args.data(), 4, nullptr) == JW_OK);
  CHECK(b.out[0] == 42.f);
  jw_registration_release(reg);
  REQUIRE(jw_kernel_launch(k, "fake", 0, args.data(), 4, nullptr) == JW_OK);
  CHECK(b.out[0] == 0.f);
  jw_kernel_release(k);
  jw_runtime_destroy(rt);
  CHECK(std::string(jw_status_name(JW_ERROR_JIT_REFUSED)) ==
        "JIT compile refused");
  CHECK(jw_abi_version() == JITWARM_ABI_VERSION);
}

TEST_CASE(
    "given JITWARM_JIT_MONITOR and JITWARM_JIT_RECORD, then the runtime takes "
    "its monitor "
    "from the environment") {
  const fs::path record =
      fs::temp_directory_path() /
      ("jitwarm-env-record-" + std::to_string(getpid()) + ".toml");
  fs::remove(record);
  setenv("JITWARM_JIT_MONITOR", "error", 1);
  setenv("JITWARM_JIT_RECORD", record.c_str(), 1);
  {
    Fixture f;
    CHECK(f.runtime.jit_monitor() == JitMonitorMode::error);
    f.runtime.seal();
    Buffers b(8);
    CHECK_THROWS_AS(f.runtime.kernel(kScale).launch(b.args(8, 1.0), on_fake()),
                    Error);
    // Refused, so not compiled and not recorded: nothing was missed at run
    // time that the next start would need.
    CHECK_FALSE(fs::exists(record));
    CHECK(f.runtime.jit_monitor_stats().refusals == 1);
    CHECK(f.runtime.jit_monitor_stats().recorded == 0);
  }
  setenv("JITWARM_JIT_MONITOR", "loud", 1);
  CHECK_THROWS_WITH(Runtime{}, doctest::Contains("JITWARM_JIT_MONITOR='loud'"));
  unsetenv("JITWARM_JIT_MONITOR");
  unsetenv("JITWARM_JIT_RECORD");
  fs::remove(record);
}

TEST_CASE(
    "given a kernel's short name, then requests, manifests, overrides and "
    "the C API take it as launch does, and a mistyped one gets the same "
    "error everywhere: the closest name, and file:line from a manifest") {
  Fixture f;
  WarmupOptions on_fake_platform;
  on_fake_platform.platform = "fake";
  WarmupRequest by_short_name = scale_request({__int128{1}, __int128{16}});
  by_short_name.kernel_name = "scale";
  const std::vector<CompileKey> plan =
      f.runtime.warmup_plan({by_short_name}, on_fake_platform);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].kernel_name() == kScale);
  CHECK(plan ==
        f.runtime.warmup_plan({scale_request({__int128{1}, __int128{16}})},
                              on_fake_platform));
  const std::string did_you_mean = "did you mean 'jitwarm.test.scale'?";
  WarmupRequest mistyped = by_short_name;
  mistyped.kernel_name = "scael";
  CHECK_THROWS_WITH(
      f.runtime.warmup_plan({mistyped}, on_fake_platform),
      doctest::Contains(("unknown kernel 'scael'; " + did_you_mean).c_str()));
  const WarmupManifest manifest = parse_warmup_manifest(
      "version = 1\n\n[[kernel]]\nname = \"scael\"\n", "m.toml");
  CHECK_THROWS_WITH(
      f.runtime.warmup_plan(manifest.requests, on_fake_platform),
      doctest::Contains(
          ("m.toml:3: unknown kernel 'scael'; " + did_you_mean).c_str()));
  CHECK_FALSE(f.runtime.implementations("scale").empty());
  CHECK_THROWS_WITH(f.runtime.implementations("scael"),
                    doctest::Contains(did_you_mean.c_str()));
  CHECK(f.runtime.explain("scale").kernel_name == kScale);

  Buffers b(4);
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value> args, void*) {
    static_cast<float*>(args[0].value.tensor->data)[0] = 7.f;
  };
  {
    const RegistrationHandle handle =
        f.runtime.register_kernels({{"scale", std::nullopt, host}});
    f.runtime.kernel(kScale).launch(b.args(4, 1.0), on_fake());
    CHECK(b.out[0] == 7.f);
  }
  CHECK_THROWS_WITH(
      f.runtime.register_kernels({{"scael", std::nullopt, host}}),
      doctest::Contains(
          ("register_kernels: unknown kernel 'scael'; " + did_you_mean)
              .c_str()));
  // A key holds the full name: a key made with the short one names it.
  const CompileKey short_key("scale", plan[0].impl_name(), plan[0].target(),
                             plan[0].params());
  CHECK_THROWS_WITH(f.runtime.warmup_keys({short_key}),
                    doctest::Contains("a key holds the full name "
                                      "'jitwarm.test.scale'"));

  // The C API: overrides and manifests by short name, and the same errors.
  jw_runtime* rt = nullptr;
  REQUIRE(jw_runtime_create(&rt) == JW_OK);
  REQUIRE(jw_runtime_load_plugin(rt, FAKE_GOOD_PLUGIN) == JW_OK);
  jw_kernel_override o = c_override("scale");
  jw_registration* reg = nullptr;
  CHECK(jw_register_kernels(rt, &o, 1, &reg) == JW_OK);
  jw_registration_release(reg);
  o.kernel_name = "scael";
  CHECK(jw_register_kernels(rt, &o, 1, &reg) == JW_ERROR_NOT_FOUND);
  CHECK(std::string(jw_last_error()).find(did_you_mean) != std::string::npos);
  const std::string text =
      "version = 1\n[[kernel]]\nname = \"scael\"\n"
      "[[kernel]]\nname = \"scale\"\n[kernel.params]\nn = 16\n";
  jw_warmup_manifest* m = nullptr;
  REQUIRE(jw_warmup_manifest_parse(text.c_str(), text.size(), "c.toml", &m) ==
          JW_OK);
  jw_warmup_options options{};
  options.struct_size = sizeof(options);
  options.platform = "fake";
  jw_compile_key_list* keys = nullptr;
  CHECK(jw_runtime_warmup_plan(rt, m, &options, &keys) == JW_ERROR_NOT_FOUND);
  CHECK(std::string(jw_last_error())
            .find("c.toml:2: unknown kernel 'scael'; " + did_you_mean) !=
        std::string::npos);
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
}

TEST_CASE(
    "given a target as a person types it, then parse_target reads the "
    "shorthand, and a warmup's target is read so") {
  CHECK(parse_target("sm_90") == "cuda:sm_90");
  CHECK(parse_target("compute_90a") == "cuda:compute_90a");
  CHECK(parse_target("gfx942:sramecc+") == "hip:gfx942:sramecc+");
  CHECK(parse_target("cpu:x86_64") == "cpu:x86_64");
  for (const char* bad : {"", "sm_", "x86_64", ":sm_90", "cuda:"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(parse_target(bad),
                      doctest::Contains("give PLATFORM:ARCH"));
  }
  Fixture f;
  WarmupOptions shorthand;
  shorthand.target = "sm_90";
  // Read as cuda:sm_90 (the fake plugin has no cuda implementation), never
  // as a platform named "sm_90".
  CHECK_THROWS_WITH(
      f.runtime.warmup_plan({scale_request({__int128{1}})}, shorthand),
      doctest::Contains("no implementation for platform cuda"));
  shorthand.target = "x86_64";
  CHECK_THROWS_WITH(
      f.runtime.warmup_plan({scale_request({__int128{1}})}, shorthand),
      doctest::Contains("unknown target 'x86_64'"));
}
