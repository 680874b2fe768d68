// Which device context a CUDA launch runs in (plugins/cuda/
// cuda_device_driver.cpp, through plugins/common/gpu_launcher.cpp), without a
// GPU: libcuda.so.1 is tests/gpu/model_libcuda, a model driver with two
// devices whose contexts, streams and modules behave as the real driver's
// do where the choice depends on them (a stream belongs to a context, a
// function runs only in its module's context, a new context may get a
// destroyed one's handle back), and which counts every call and records
// which context each launch ran in. The kernel is expand, compiled by the
// real NVRTC; nothing executes. test_cuda_launch.cpp is the same on a GPU
// (its driver::Api and ExpandOnDevice are the shape here).
//
// Each case has a runtime of its own (so its own modules and prepared
// launches) and sets the current context it needs; the model's state
// (contexts, counters) lives on across cases, so counts are compared with
// the case's own snapshots.
#include <jitwarm/jitwarm.hpp>

#include "expand_device_args.hpp"
#include "kernel_set.hpp"

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace ks = jitwarm::kernel_set;

namespace {

// The driver entry points this test calls itself, by their versioned ABI
// names (it has no CUDA headers), and the model's counters.
namespace driver {
using Result = int;
using Context = struct Opaque*;
using Stream = struct Opaque*;
using DevicePointer = unsigned long long;

// libcuda.so.1 as the process resolves it (the plugin opens the same), or
// a failed REQUIRE when it is not the model: first, before any of its
// functions is looked up or called.
void* open_the_model() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(library != nullptr,
                  "libcuda.so.1 does not open: " << dlerror());
  const bool is_the_model = dlsym(library, "model_libcuda_calls") != nullptr;
  REQUIRE_MESSAGE(is_the_model,
                  "libcuda.so.1 is not the model of tests/gpu/model_libcuda: "
                  "LD_LIBRARY_PATH must name its directory first");
  return library;
}

struct Api {
  void* library = open_the_model();
  template <typename Fn>
  Fn get(const char* name) const {
    void* symbol = library != nullptr ? dlsym(library, name) : nullptr;
    REQUIRE_MESSAGE(symbol != nullptr, "libcuda.so.1 lacks " << name);
    return reinterpret_cast<Fn>(symbol);
  }
  Result (*init)(unsigned) = get<decltype(init)>("cuInit");
  Result (*ctx_create)(Context*, unsigned,
                       int) = get<decltype(ctx_create)>("cuCtxCreate_v2");
  Result (*ctx_destroy)(Context) =
      get<decltype(ctx_destroy)>("cuCtxDestroy_v2");
  Result (*ctx_set_current)(Context) =
      get<decltype(ctx_set_current)>("cuCtxSetCurrent");
  Result (*ctx_get_current)(Context*) =
      get<decltype(ctx_get_current)>("cuCtxGetCurrent");
  Result (*ctx_pop_current)(Context*) =
      get<decltype(ctx_pop_current)>("cuCtxPopCurrent_v2");
  Result (*ctx_get_id)(Context, unsigned long long*) =
      get<decltype(ctx_get_id)>("cuCtxGetId");
  Result (*primary_ctx_retain)(Context*, int) =
      get<decltype(primary_ctx_retain)>("cuDevicePrimaryCtxRetain");
  Result (*primary_ctx_release)(int) =
      get<decltype(primary_ctx_release)>("cuDevicePrimaryCtxRelease_v2");
  Result (*stream_create)(Stream*, unsigned) =
      get<decltype(stream_create)>("cuStreamCreate");
  Result (*stream_destroy)(Stream) =
      get<decltype(stream_destroy)>("cuStreamDestroy_v2");
  Result (*mem_alloc)(DevicePointer*,
                      std::size_t) = get<decltype(mem_alloc)>("cuMemAlloc_v2");
  Result (*mem_free)(DevicePointer) = get<decltype(mem_free)>("cuMemFree_v2");
  // The model's counters (model_libcuda.cpp).
  long long (*calls)(const char*) = get<decltype(calls)>("model_libcuda_calls");
  long long (*refused_launches)() =
      get<decltype(refused_launches)>("model_libcuda_refused_launches");
  long long (*run_launches)() =
      get<decltype(run_launches)>("model_libcuda_run_launches");
  long long (*runs_in_context)(unsigned long long) =
      get<decltype(runs_in_context)>("model_libcuda_runs_in_context");
  unsigned long long (*last_run_context_id)() =
      get<decltype(last_run_context_id)>("model_libcuda_last_run_context_id");
  void* (*last_run_stream)() =
      get<decltype(last_run_stream)>("model_libcuda_last_run_stream");
};

// The model's counts at one moment; a case compares two.
struct Counts {
  explicit Counts(const Api& api)
      : runs(api.run_launches()),
        refused(api.refused_launches()),
        module_loads(api.calls("cuModuleLoadData")),
        stream_get_ctx(api.calls("cuStreamGetCtx")),
        ctx_get_id(api.calls("cuCtxGetId")),
        ctx_get_current(api.calls("cuCtxGetCurrent")),
        ctx_push_current(api.calls("cuCtxPushCurrent")) {}
  long long runs, refused, module_loads;
  // The queries a launch may make about contexts.
  long long stream_get_ctx, ctx_get_id, ctx_get_current, ctx_push_current;
};

// expand of three requests on int32 tensors of `device` (0 unless told),
// allocated by the model (so in whatever context is current when it is
// made).
struct ExpandOnDevice {
  ExpandOnDevice(const Api& driver_api, const jitwarm::Runtime& launcher,
                 int32_t tensors_device = 0)
      : api(driver_api), runtime(launcher), device(tensors_device) {
    REQUIRE(api.mem_alloc(&output, 24) == 0);
    REQUIRE(api.mem_alloc(&x, 12) == 0);
    REQUIRE(api.mem_alloc(&cu, 12) == 0);
  }
  ~ExpandOnDevice() {
    for (DevicePointer p : {output, x, cu}) CHECK(api.mem_free(p) == 0);
  }
  ExpandOnDevice(const ExpandOnDevice&) = delete;
  ExpandOnDevice& operator=(const ExpandOnDevice&) = delete;

  void launch(void* stream) const {
    const jitwarm::gpu_test::ExpandDeviceArgs call(output, x, cu, 4, device);
    runtime.kernel(ks::kExpand)
        .launch(call.args(), jitwarm::LaunchOptions{"cuda", device, stream});
  }

  const Api& api;
  const jitwarm::Runtime& runtime;
  int32_t device = 0;
  DevicePointer output = 0, x = 0, cu = 0;
};
}  // namespace driver

jitwarm::RuntimeOptions without_cache_dir() {
  jitwarm::RuntimeOptions options;
  options.no_cache_dir = true;
  return options;
}

// One case's runtime and the driver objects it made, given back at its end
// (streams, then contexts, then its references to primary contexts).
class Fixture {
 public:
  Fixture() {
    REQUIRE(api.init(0) == 0);
    runtime.load_plugins();
  }
  ~Fixture() {
    for (driver::Stream s : streams_) CHECK(api.stream_destroy(s) == 0);
    for (driver::Context c : contexts_) CHECK(api.ctx_destroy(c) == 0);
    for (int device : primaries_) CHECK(api.primary_ctx_release(device) == 0);
  }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  driver::Context retain_primary(int device) {
    driver::Context primary = nullptr;
    REQUIRE(api.primary_ctx_retain(&primary, device) == 0);
    primaries_.push_back(device);
    return primary;
  }
  // Made current, as cuCtxCreate does.
  driver::Context create_context() {
    driver::Context context = nullptr;
    REQUIRE(api.ctx_create(&context, 0, 0) == 0);
    contexts_.push_back(context);
    return context;
  }
  void destroy_context(driver::Context context) {
    REQUIRE(api.ctx_destroy(context) == 0);
    contexts_.erase(std::find(contexts_.begin(), contexts_.end(), context));
  }
  // In the current context.
  driver::Stream create_stream() {
    driver::Stream stream = nullptr;
    REQUIRE(api.stream_create(&stream, 0) == 0);
    streams_.push_back(stream);
    return stream;
  }
  void destroy_stream(driver::Stream stream) {
    REQUIRE(api.stream_destroy(stream) == 0);
    streams_.erase(std::find(streams_.begin(), streams_.end(), stream));
  }
  // `context` alone on this thread's stack; nullptr: none current.
  void make_only_current(driver::Context context) {
    while (current() != nullptr) REQUIRE(api.ctx_pop_current(nullptr) == 0);
    if (context != nullptr) REQUIRE(api.ctx_set_current(context) == 0);
  }
  driver::Context current() const {
    driver::Context context = nullptr;
    REQUIRE(api.ctx_get_current(&context) == 0);
    return context;
  }
  unsigned long long id_of(driver::Context context) const {
    unsigned long long id = 0;
    REQUIRE(api.ctx_get_id(context, &id) == 0);
    return id;
  }

  const driver::Api api;  // first: it checks the model before the plugin
  jitwarm::Runtime runtime{without_cache_dir()};

 private:
  std::vector<driver::Stream> streams_;
  std::vector<driver::Context> contexts_;
  std::vector<int> primaries_;
};

}  // namespace

TEST_CASE(
    "given device 0's primary context current and a stream of it, when the "
    "kernel is launched 101 times, then the first loads its module, all run "
    "in the primary context, and the last 100 ask the driver nothing about "
    "contexts") {
  Fixture f;
  const driver::Context primary = f.retain_primary(0);
  const unsigned long long primary_id = f.id_of(primary);
  f.make_only_current(primary);
  const driver::Stream stream = f.create_stream();
  const driver::ExpandOnDevice expand(f.api, f.runtime);

  const driver::Counts before(f.api);
  expand.launch(stream);
  const driver::Counts first(f.api);
  CHECK(first.module_loads - before.module_loads == 1);
  CHECK(first.runs - before.runs == 1);
  CHECK(first.refused == before.refused);
  CHECK(f.api.last_run_context_id() == primary_id);
  CHECK(f.api.last_run_stream() == stream);

  for (int i = 0; i < 100; ++i) expand.launch(stream);
  const driver::Counts after(f.api);
  CHECK(after.runs - first.runs == 100);
  CHECK(after.refused == first.refused);
  CHECK(after.module_loads == first.module_loads);
  CHECK(f.api.last_run_context_id() == primary_id);
  CHECK(f.api.last_run_stream() == stream);
  // A repeated launch where the last one ran needs no query: the driver
  // refuses a function of another context, and that is when to ask.
  CHECK(after.stream_get_ctx - first.stream_get_ctx == 0);
  CHECK(after.ctx_get_id - first.ctx_get_id == 0);
  CHECK(after.ctx_get_current - first.ctx_get_current == 0);
  CHECK(after.ctx_push_current - first.ctx_push_current == 0);
}

TEST_CASE(
    "given the kernel last ran in the primary context, when it is launched "
    "on a stream of a context the host created, then it runs in that "
    "context, and on the primary context's stream again afterwards in the "
    "primary context") {
  Fixture f;
  const driver::Context primary = f.retain_primary(0);
  const unsigned long long primary_id = f.id_of(primary);
  f.make_only_current(primary);
  const driver::Stream primary_stream = f.create_stream();
  const driver::ExpandOnDevice expand(f.api, f.runtime);
  expand.launch(primary_stream);
  REQUIRE(f.api.last_run_context_id() == primary_id);

  const driver::Context own = f.create_context();  // and current
  const unsigned long long own_id = f.id_of(own);
  const driver::Stream own_stream = f.create_stream();
  const driver::Counts before(f.api);
  expand.launch(own_stream);
  const driver::Counts in_own(f.api);
  // The plugin may try the function it ran last and be refused; the launch
  // still runs once, in the stream's context, with a module loaded there.
  CHECK(in_own.runs - before.runs == 1);
  CHECK(in_own.module_loads - before.module_loads == 1);
  CHECK(f.api.last_run_context_id() == own_id);
  CHECK(f.api.last_run_stream() == own_stream);

  expand.launch(primary_stream);
  const driver::Counts back(f.api);
  CHECK(back.runs - in_own.runs == 1);
  CHECK(back.module_loads == in_own.module_loads);
  CHECK(f.api.last_run_context_id() == primary_id);
  CHECK(f.api.last_run_stream() == primary_stream);
}

TEST_CASE(
    "given a context the host destroyed and another created with the same "
    "handle, when the kernel is launched on the new context's stream, then "
    "it runs in the new context with a module of its own, never with the "
    "dead one's function") {
  Fixture f;
  const driver::Context primary = f.retain_primary(0);
  f.make_only_current(primary);
  const driver::ExpandOnDevice expand(f.api, f.runtime);

  const driver::Context old_context = f.create_context();  // and current
  const unsigned long long old_id = f.id_of(old_context);
  const driver::Stream old_stream = f.create_stream();
  expand.launch(old_stream);
  REQUIRE(f.api.last_run_context_id() == old_id);
  f.destroy_stream(old_stream);
  f.destroy_context(old_context);

  const driver::Context new_context = f.create_context();  // and current
  REQUIRE_MESSAGE(new_context == old_context,
                  "the model gives a destroyed context's handle back");
  const unsigned long long new_id = f.id_of(new_context);
  REQUIRE(new_id != old_id);
  const driver::Stream new_stream = f.create_stream();
  const driver::Counts before(f.api);
  expand.launch(new_stream);
  const driver::Counts after(f.api);
  CHECK(after.runs - before.runs == 1);
  CHECK(after.refused == before.refused);
  CHECK(after.module_loads - before.module_loads == 1);
  CHECK(f.api.last_run_context_id() == new_id);
  CHECK(f.api.last_run_stream() == new_stream);
}

TEST_CASE(
    "given launches in the primary context and a context of the host's own "
    "current, when the kernel is launched on the default stream, then it "
    "runs in device 0's primary context and the host's context is current "
    "again afterwards") {
  Fixture f;
  const driver::Context primary = f.retain_primary(0);
  const unsigned long long primary_id = f.id_of(primary);
  f.make_only_current(primary);
  const driver::ExpandOnDevice expand(f.api, f.runtime);
  expand.launch(nullptr);
  expand.launch(nullptr);
  REQUIRE(f.api.last_run_context_id() == primary_id);

  const driver::Context own = f.create_context();  // and current
  const unsigned long long own_id = f.id_of(own);
  const driver::Counts before(f.api);
  expand.launch(nullptr);
  const driver::Counts after(f.api);
  CHECK(after.runs - before.runs == 1);
  CHECK(after.module_loads == before.module_loads);
  CHECK(f.api.last_run_context_id() == primary_id);
  CHECK(f.api.last_run_context_id() != own_id);
  CHECK(f.api.last_run_stream() == nullptr);
  CHECK(f.current() == own);
}

TEST_CASE(
    "given tensors on device 0, when the kernel is launched on a stream of "
    "device 1's primary context, then the launch fails saying the stream "
    "belongs to another device, and nothing runs") {
  Fixture f;
  const driver::Context device0 = f.retain_primary(0);
  const driver::Context device1 = f.retain_primary(1);
  f.make_only_current(device1);
  const driver::Stream device1_stream = f.create_stream();
  f.make_only_current(device0);
  const driver::ExpandOnDevice expand(f.api, f.runtime);

  const driver::Counts before(f.api);
  std::string error;
  try {
    expand.launch(device1_stream);
  } catch (const jitwarm::Error& e) {
    error = e.what();
  }
  const driver::Counts after(f.api);
  CHECK_MESSAGE(error.find("the stream belongs to another device than the "
                           "tensors") != std::string::npos,
                "the launch's error: " << error);
  CHECK(after.runs == before.runs);
  CHECK(after.refused == before.refused);
  CHECK(f.current() == device0);
}

TEST_CASE(
    "given no current context, when the kernel is launched on a stream of "
    "device 0's primary context, then it runs in the primary context and "
    "none is current afterwards") {
  Fixture f;
  const driver::Context primary = f.retain_primary(0);
  const unsigned long long primary_id = f.id_of(primary);
  f.make_only_current(primary);
  const driver::Stream stream = f.create_stream();
  const driver::ExpandOnDevice expand(f.api, f.runtime);
  f.make_only_current(nullptr);

  const driver::Counts before(f.api);
  expand.launch(stream);
  const driver::Counts after(f.api);
  CHECK(after.runs - before.runs == 1);
  CHECK(f.api.last_run_context_id() == primary_id);
  CHECK(f.api.last_run_stream() == stream);
  CHECK(f.current() == nullptr);
}

// ---------------------------------------------------------------------------
// Several devices (the model has two sm_90s): one compile per key for the
// target, a module and a context per device, concurrent launches.
// ---------------------------------------------------------------------------
TEST_CASE(
    "given one compile-only warmup for cuda:sm_90, when expand is launched on "
    "each device's primary context and stream, then each device loads a "
    "module of its own, each launch runs in its device's context, and the "
    "key was compiled once") {
  Fixture f;
  // The key of these arguments (storage is never read), warmed compile-only
  // for the target both devices are.
  const jitwarm::gpu_test::ExpandDeviceArgs sample(0x1000, 0x2000, 0x3000, 4);
  const jitwarm::CompileKey key =
      f.runtime.kernel(ks::kExpand).key_for(sample.args(), {"cuda", 0});
  REQUIRE(key.target() == "cuda:sm_90");
  const jitwarm::WarmupResult warmed = f.runtime.warmup_keys({key});
  REQUIRE(warmed.compiled == 1);
  const uint64_t compiles = f.runtime.cache_stats().compiles;

  struct OnDevice {
    driver::Context primary;
    unsigned long long id;
    driver::Stream stream;
  };
  std::vector<OnDevice> devices;
  for (int device = 0; device < 2; ++device) {
    const driver::Context primary = f.retain_primary(device);
    f.make_only_current(primary);
    devices.push_back({primary, f.id_of(primary), f.create_stream()});
  }
  for (int device = 0; device < 2; ++device) {
    f.make_only_current(devices[device].primary);
    const driver::ExpandOnDevice expand(f.api, f.runtime, device);
    const driver::Counts before(f.api);
    const long long ran_before = f.api.runs_in_context(devices[device].id);
    expand.launch(devices[device].stream);
    expand.launch(devices[device].stream);
    const driver::Counts after(f.api);
    CHECK(after.module_loads - before.module_loads == 1);
    CHECK(after.refused == before.refused);
    CHECK(f.api.runs_in_context(devices[device].id) - ran_before == 2);
    CHECK(f.api.last_run_stream() == devices[device].stream);
  }
  CHECK(f.runtime.cache_stats().compiles == compiles);
  CHECK(compiles == 1);
}

TEST_CASE(
    "given another device's context current, when expand is launched on a "
    "stream of device 0, then it runs in device 0's context and device 1's "
    "context stays current") {
  Fixture f;
  const driver::Context device0 = f.retain_primary(0);
  const driver::Context device1 = f.retain_primary(1);
  f.make_only_current(device0);
  const driver::Stream stream0 = f.create_stream();
  const driver::ExpandOnDevice expand(f.api, f.runtime, 0);
  f.make_only_current(device1);

  const driver::Counts before(f.api);
  const long long ran_before = f.api.runs_in_context(f.id_of(device0));
  expand.launch(stream0);
  const driver::Counts after(f.api);
  CHECK(after.runs - before.runs == 1);
  CHECK(after.refused == before.refused);
  CHECK(f.api.runs_in_context(f.id_of(device0)) - ran_before == 1);
  CHECK(f.current() == device1);
}

TEST_CASE(
    "given a thread per device, each with its device's primary context and "
    "a stream of its own, when both launch expand 200 times at the same "
    "time, then every launch runs in its own device's context and none is "
    "refused") {
  Fixture f;
  constexpr int kLaunches = 200;
  driver::Context primaries[2];
  unsigned long long ids[2];
  driver::Stream streams[2];
  for (int device = 0; device < 2; ++device) {
    primaries[device] = f.retain_primary(device);
    ids[device] = f.id_of(primaries[device]);
    f.make_only_current(primaries[device]);
    streams[device] = f.create_stream();
  }
  const driver::Counts before(f.api);
  const long long ran_before[2] = {f.api.runs_in_context(ids[0]),
                                   f.api.runs_in_context(ids[1])};
  std::string errors[2];
  {
    std::vector<std::jthread> threads;
    for (int device = 0; device < 2; ++device) {
      threads.emplace_back([&, device] {
        try {
          if (f.api.ctx_set_current(primaries[device]) != 0) {
            errors[device] = "cuCtxSetCurrent failed";
            return;
          }
          const driver::ExpandOnDevice expand(f.api, f.runtime, device);
          for (int i = 0; i < kLaunches; ++i) expand.launch(streams[device]);
          driver::Context none = nullptr;
          f.api.ctx_pop_current(&none);
        } catch (const std::exception& e) {
          errors[device] = e.what();
        }
      });
    }
  }
  const driver::Counts after(f.api);
  CHECK_MESSAGE(errors[0].empty(), errors[0]);
  CHECK_MESSAGE(errors[1].empty(), errors[1]);
  CHECK(after.refused == before.refused);
  CHECK(after.runs - before.runs == 2 * kLaunches);
  CHECK(f.api.runs_in_context(ids[0]) - ran_before[0] == kLaunches);
  CHECK(f.api.runs_in_context(ids[1]) - ran_before[1] == kLaunches);
  CHECK(after.module_loads - before.module_loads == 2);
}
