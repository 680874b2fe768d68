// The launch path (core/src/launcher.cpp, prepared_launch.cpp): a hit
// allocates nothing and takes no registry or platform mutex; prepared
// launches follow overrides; implementations that prepare get prepare once
// per artifact, every launch through launch_prepared, and release before
// destroy; bad arguments are refused on hits as on misses.
//
// Allocations are counted by tests/support/allocation_counter (a replaced
// global operator new, counting only while a thread asks).
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "allocation_counter.hpp"
#include "counted_mutex.hpp"
#include "prepared_launch.hpp"
#include "runtime_impl.hpp"

using namespace jitwarm;
using jitwarm::detail::CountedMutex;

namespace {

constexpr const char* kScale = "jitwarm.test.scale";
constexpr const char* kExpand = "vllm.v1.sample.rejection_sampler.expand";

// What `body` allocated and which counted mutexes it took, on this thread.
struct Footprint {
  uint64_t allocations = 0;
  uint64_t mutex_acquisitions = 0;
};
template <typename Body>
Footprint footprint_of(Body&& body) {
  const uint64_t locks = CountedMutex::acquisitions_on_this_thread();
  const uint64_t allocations = jitwarm::test::allocations_of(body);
  return {allocations, CountedMutex::acquisitions_on_this_thread() - locks};
}

struct ScaleBuffers {
  std::array<float, 16> x{}, out{};
  jw_tensor tx{}, tout{};
  ScaleBuffers() {
    for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
    const std::array<int64_t, 1> shape{16};
    tx = make_tensor(x.data(), JW_DTYPE_FLOAT32, shape);
    tout = make_tensor(out.data(), JW_DTYPE_FLOAT32, shape);
  }
  std::array<jw_arg_value, 4> args(int64_t n, double factor) const {
    return {arg(tout), arg(tx), arg_int(n), arg_float(factor)};
  }
};

LaunchOptions on(const char* platform) {
  LaunchOptions o;
  o.platform = platform;
  return o;
}

}  // namespace

TEST_CASE(
    "given a prepared launch, when the same specialization launches again, "
    "then it allocates nothing and takes no registry or platform mutex") {
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  ScaleBuffers b;
  const KernelHandle scale = runtime.kernel(kScale);
  const LaunchOptions fake = on("fake");
  const auto args = b.args(16, 2.0);
  scale.launch(args, fake);  // compiles and prepares
  const uint64_t compiles = runtime.cache_stats().compiles;

  const Footprint hit = footprint_of([&] {
    for (int i = 0; i < 100; ++i) scale.launch(args, fake);
  });
  CHECK(hit.allocations == 0);
  CHECK(hit.mutex_acquisitions == 0);
  CHECK(b.out[15] == 30.f);
  CHECK(runtime.cache_stats().compiles == compiles);
  CHECK(runtime.cache_stats().hits >= 100);

  // The counters do count: a new class compiles and prepares (allocating),
  // and a registration takes the registry's mutex.
  const auto other = b.args(3, 2.0);
  const Footprint miss = footprint_of([&] { scale.launch(other, fake); });
  CHECK(miss.allocations > 0);
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value>, void*) {};
  const Footprint registration = footprint_of([&] {
    RegistrationHandle h =
        runtime.register_kernels({{kScale, std::nullopt, host}}, "test");
  });
  CHECK(registration.mutex_acquisitions > 0);
}

TEST_CASE(
    "given two prepared specializations launched in turns, then each launch "
    "runs its own, compiling nothing more") {
  // A table compares its last hit first: here every launch misses it and
  // must find its own in the chains. The fake runs scale<f64> or
  // scale<f32> by its artifact, so running the other's would show.
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  ScaleBuffers f32;
  std::array<double, 16> x64{}, out64{};
  for (int i = 0; i < 16; ++i) x64[i] = i;
  const std::array<int64_t, 1> shape{16};
  const jw_tensor tx64 = make_tensor(x64.data(), JW_DTYPE_FLOAT64, shape);
  const jw_tensor tout64 = make_tensor(out64.data(), JW_DTYPE_FLOAT64, shape);
  const KernelHandle scale = runtime.kernel(kScale);
  const LaunchOptions fake = on("fake");
  const auto launch64 = [&](double factor) {
    scale.launch(
        std::array{arg(tout64), arg(tx64), arg_int(3), arg_float(factor)},
        fake);
  };
  scale.launch(f32.args(16, 1.0), fake);
  launch64(1.0);
  const uint64_t compiles = runtime.cache_stats().compiles;
  for (int turn = 0; turn < 6; ++turn) {
    const auto factor = static_cast<double>(turn + 2);
    if (turn % 2 == 0) {
      f32.out.fill(-1.f);
      scale.launch(f32.args(16, factor), fake);
      CHECK(f32.out[15] == static_cast<float>(15 * factor));
    } else {
      out64.fill(-1);
      launch64(factor);
      CHECK(out64[2] == 2 * factor);
      CHECK(out64[3] == -1);
    }
  }
  CHECK(runtime.cache_stats().compiles == compiles);
}

TEST_CASE(
    "given the CPU reference and the C API, when a warmed key launches, then "
    "a hit allocates nothing and takes no mutex") {
  jw_runtime* rt = nullptr;
  REQUIRE(jw_runtime_create(&rt) == JW_OK);
  REQUIRE(jw_runtime_load_plugins(rt, nullptr, 0) == JW_OK);
  jw_kernel_handle* expand = nullptr;
  REQUIRE(jw_kernel_find(rt, kExpand, &expand) == JW_OK);
  alignas(16) int32_t x[1] = {5}, cu[1] = {1}, out[1] = {0};
  const int64_t one[] = {1};
  const jw_tensor tx = make_tensor(x, JW_DTYPE_INT32, one);
  const jw_tensor tcu = make_tensor(cu, JW_DTYPE_INT32, one);
  const jw_tensor tout = make_tensor(out, JW_DTYPE_INT32, one);
  const std::array args{arg(tout),  arg(tx),    arg(tcu),
                        arg_int(5), arg_int(0), arg_int(8)};
  REQUIRE(jw_kernel_launch(expand, "cpu", 0, args.data(), args.size(),
                           nullptr) == JW_OK);
  CHECK(out[0] == 0);  // 5 is replaced by 0
  x[0] = 7;
  const Footprint hit = footprint_of([&] {
    for (int i = 0; i < 100; ++i) {
      REQUIRE(jw_kernel_launch(expand, "cpu", 0, args.data(), args.size(),
                               nullptr) == JW_OK);
    }
  });
  CHECK(hit.allocations == 0);
  CHECK(hit.mutex_acquisitions == 0);
  CHECK(out[0] == 7);
  jw_kernel_release(expand);
  jw_runtime_destroy(rt);
}

TEST_CASE(
    "given prepared launches, when an override is registered and released, "
    "then the next launch runs the winner of the moment") {
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  ScaleBuffers b;
  const KernelHandle scale = runtime.kernel(kScale);
  const auto args = b.args(16, 2.0);
  scale.launch(args, on("fake"));
  scale.launch(args, on("fake"));
  CHECK(b.out[1] == 2.f);
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value> a, void*) {
    static_cast<float*>(a[0].value.tensor->data)[1] = -1.f;
  };
  {
    RegistrationHandle h =
        runtime.register_kernels({{kScale, std::nullopt, host}}, "test");
    scale.launch(args, on("fake"));
    CHECK(b.out[1] == -1.f);
  }
  scale.launch(args, on("fake"));
  CHECK(b.out[1] == 2.f);
}

namespace {

// A C implementation that prepares: counts what the core calls.
struct PreparingImpl {
  std::atomic<int> prepares{0}, prepared_launches{0}, plain_launches{0},
      releases{0}, destroys{0};
  std::atomic<bool> released_before_destroy{true};
  int token = 0;  // what prepare hands out
};

jw_kernel_impl preparing_impl(PreparingImpl* state) {
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(impl);
  impl.platform = "fake";
  impl.impl_name = "preparing";
  impl.user_data = state;
  impl.compile = [](void*, const jw_compile_key_view*,
                    const jw_artifact_sink* out) {
    jw_artifact_desc a{};
    a.struct_size = sizeof(a);
    a.binary = "prepared";
    a.binary_size = 8;
    a.format = "test";
    a.entry_point = "prepared";
    return out->emit(out->ctx, &a);
  };
  impl.launch = [](void* user, const jw_artifact_view*, const jw_arg_value*,
                   uint32_t, void*) {
    ++static_cast<PreparingImpl*>(user)->plain_launches;
    return JW_OK;
  };
  impl.prepare = [](void* user, const jw_artifact_view* artifact, void** out) {
    auto* s = static_cast<PreparingImpl*>(user);
    if (artifact == nullptr || artifact->key == nullptr ||
        artifact->binary_size != 8) {
      return JW_ERROR_INVALID_ARGUMENT;
    }
    ++s->prepares;
    *out = &s->token;
    return JW_OK;
  };
  impl.launch_prepared = [](void* user, void* prepared,
                            const jw_arg_value* args, uint32_t n, void*) {
    auto* s = static_cast<PreparingImpl*>(user);
    if (prepared != &s->token || n != 5) return JW_ERROR_INVALID_ARGUMENT;
    static_cast<float*>(args[0].value.tensor->data)[2] = 5.f;
    ++s->prepared_launches;
    return JW_OK;
  };
  impl.release_prepared = [](void* user, void*) {
    ++static_cast<PreparingImpl*>(user)->releases;
  };
  impl.destroy = [](void* user) {
    auto* s = static_cast<PreparingImpl*>(user);
    if (s->releases.load() == 0) s->released_before_destroy = false;
    ++s->destroys;
  };
  return impl;
}

}  // namespace

TEST_CASE(
    "given an implementation that prepares, then prepare runs once per "
    "specialization, every launch goes to launch_prepared with defaults "
    "filled in, and release comes before destroy") {
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  PreparingImpl state;
  ScaleBuffers b;
  const KernelHandle scale = runtime.kernel(kScale);
  {
    KernelOverride o;
    o.kernel_name = kScale;
    o.impl = preparing_impl(&state);
    RegistrationHandle h = runtime.register_kernels({o}, "test");
    for (int i = 0; i < 10; ++i) scale.launch(b.args(16, 1.0), on("fake"));
    CHECK(state.prepares == 1);
    CHECK(state.prepared_launches == 10);
    CHECK(state.plain_launches == 0);
    CHECK(b.out[2] == 5.f);
    scale.launch(b.args(3, 1.0), on("fake"));  // another class
    CHECK(state.prepares == 2);
    CHECK(state.releases == 0);
  }
  CHECK(state.releases == 2);
  CHECK(state.destroys == 1);
  CHECK(state.released_before_destroy);
}

TEST_CASE(
    "given an implementation that sets only some of the prepare callbacks, "
    "then register_kernels refuses it") {
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  PreparingImpl state;
  KernelOverride o;
  o.kernel_name = kScale;
  o.impl = preparing_impl(&state);
  o.impl->release_prepared = nullptr;
  CHECK_THROWS_WITH(runtime.register_kernels({o}, "test"),
                    doctest::Contains("needs all three or none"));
  o.impl = preparing_impl(&state);
  o.impl->flags = 0x80;
  CHECK_THROWS_WITH(runtime.register_kernels({o}, "test"),
                    doctest::Contains("unknown flags 0x80"));
}

TEST_CASE(
    "given a prepared specialization, when later launches pass bad arguments, "
    "then they are refused with the same messages as a first launch") {
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  ScaleBuffers b;
  const KernelHandle scale = runtime.kernel(kScale);
  scale.launch(b.args(16, 1.0), on("fake"));
  // A warmup tensor has no storage.
  const std::array<int64_t, 1> shape{16};
  const jw_tensor_meta meta = make_tensor_meta(JW_DTYPE_FLOAT32, shape);
  const std::array warm{arg(b.tout), warmup_arg(meta), arg_int(16),
                        arg_float(1.0)};
  CHECK_THROWS_WITH(scale.launch(warm, on("fake")),
                    doctest::Contains("warmup tensors (metadata without "
                                      "storage) cannot be launched"));
  // Tensors on two devices.
  jw_tensor elsewhere = b.tx;
  elsewhere.device_index = 1;
  jw_tensor here = b.tout;
  here.device_index = 0;
  const std::array split{arg(here), arg(elsewhere), arg_int(16),
                         arg_float(1.0)};
  CHECK_THROWS_WITH(scale.launch(split, on("fake")),
                    doctest::Contains("parameter 'x' is on device 1; earlier "
                                      "tensors are on device 0"));
  // A wrong dtype, a null pointer with elements, a missing argument.
  jw_tensor wrong = b.tx;
  wrong.meta.dtype = JW_DTYPE_INT32;
  const std::array typed{arg(b.tout), arg(wrong), arg_int(16), arg_float(1.0)};
  CHECK_THROWS_AS(scale.launch(typed, on("fake")), Error);
  jw_tensor null_data = b.tx;
  null_data.data = nullptr;
  const std::array null_args{arg(b.tout), arg(null_data), arg_int(16),
                             arg_float(1.0)};
  CHECK_THROWS_WITH(scale.launch(null_args, on("fake")),
                    doctest::Contains("null data for a tensor of 16 elements"));
  const std::array short_args{arg(b.tout), arg(b.tx)};
  CHECK_THROWS_WITH(scale.launch(short_args, on("fake")),
                    doctest::Contains("missing argument 'n'"));
}

TEST_CASE(
    "given threads launching prepared specializations, when the state is "
    "replaced under them, then every launch completes with a whole "
    "implementation") {
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  const KernelHandle scale = runtime.kernel(kScale);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, launches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      ScaleBuffers b;
      const int64_t n = t == 0 ? 16 : (t == 1 ? 3 : 1);
      while (!stop.load()) {
        scale.launch(b.args(n, 2.0), on("fake"));
        if (b.out[0] != 0.f && b.out[0] != -7.f) bad.fetch_add(1);
        launches.fetch_add(1);
      }
    });
  }
  HostKernel host;
  host.platform = "fake";
  host.launch = [](std::span<const jw_arg_value> a, void*) {
    static_cast<float*>(a[0].value.tensor->data)[0] = -7.f;
  };
  for (int i = 0; i < 50 || launches.load() < 300; ++i) {
    RegistrationHandle h =
        runtime.register_kernels({{kScale, std::nullopt, host}}, "racer");
  }
  stop = true;
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
}

namespace {

// One launch of the scale kernel whose parts a test may change: its own
// copies of the tensors, so the arguments can point into it.
struct ScaleCall {
  explicit ScaleCall(ScaleBuffers& b) : out(b.tout), x(b.tx) {
    args = {arg(out), arg(x), arg_int(16), arg_float(2.0)};
  }
  ScaleCall(const ScaleCall& other) : out(other.out), x(other.x) {
    args = other.args;
    args[0].value.tensor = &out;
    if (args.size() > 1 && args[1].kind == JW_VALUE_TENSOR &&
        args[1].value.tensor == &other.x) {
      args[1].value.tensor = &x;
    }
  }
  ScaleCall& operator=(const ScaleCall&) = delete;
  jw_tensor out, x;
  jw_tensor_meta x_meta{};  // for a warmup tensor in x's place
  std::vector<jw_arg_value> args;
};

// What a launch of `call` does: the error it is refused with, or the key it
// launched (read back from the launch it found).
struct Outcome {
  std::string error;
  std::string key;
  bool operator==(const Outcome&) const = default;
};
Outcome launch_outcome(Runtime& runtime, const ScaleCall& call) {
  const KernelHandle scale = runtime.kernel(kScale);
  Outcome o;
  try {
    scale.launch(call.args, on("fake"));
  } catch (const Error& e) {
    o.error = e.what();
    return o;
  }
  const detail::PreparedLaunch* found =
      detail::RuntimeImpl::find_prepared(scale, call.args, "fake", 0);
  o.key = found != nullptr ? found->key->text() : "(no prepared launch)";
  return o;
}

}  // namespace

TEST_CASE(
    "given a remembered launch, when any field validation or the key reads "
    "differs, then the launch is judged again: a bad value is refused with "
    "a first launch's message, and another specialization launches its own "
    "key") {
  // The launch path keeps the last launch's argument image and skips
  // validation and the signature for the same image
  // (core/src/argument_image.hpp): every field they read must be in it.
  ScaleBuffers b;
  const ScaleCall base(b);
  using Change = std::function<void(ScaleCall&)>;
  const std::vector<std::pair<const char*, Change>> changes{
      {"x as a warmup tensor",
       [](ScaleCall& c) {
         c.x_meta = c.x.meta;
         c.args[1] = warmup_arg(c.x_meta);
       }},
      {"x null", [](ScaleCall& c) { c.args[1].value.tensor = nullptr; }},
      {"x's struct too small", [](ScaleCall& c) { c.x.struct_size = 8; }},
      {"x's metadata struct too small",
       [](ScaleCall& c) { c.x.meta.struct_size = 8; }},
      {"x float64, out float32",
       [](ScaleCall& c) { c.x.meta.dtype = JW_DTYPE_FLOAT64; }},
      {"both float64",
       [](ScaleCall& c) {
         c.x.meta.dtype = JW_DTYPE_FLOAT64;
         c.out.meta.dtype = JW_DTYPE_FLOAT64;
       }},
      {"x's dtype invalid",
       [](ScaleCall& c) { c.x.meta.dtype = static_cast<jw_dtype>(99); }},
      {"x of rank 2",
       [](ScaleCall& c) {
         c.x.meta.rank = 2;
         c.x.meta.shape[1] = 1;
       }},
      {"x of rank 9", [](ScaleCall& c) { c.x.meta.rank = 9; }},
      {"x's extent negative", [](ScaleCall& c) { c.x.meta.shape[0] = -1; }},
      {"x's extent another", [](ScaleCall& c) { c.x.meta.shape[0] = 8; }},
      {"x with a negative stride",
       [](ScaleCall& c) {
         c.x.meta.flags |= JW_TENSOR_HAS_STRIDES;
         c.x.meta.strides[0] = -1;
       }},
      {"x with a stride of 2 (not contiguous)",
       [](ScaleCall& c) {
         c.x.meta.flags |= JW_TENSOR_HAS_STRIDES;
         c.x.meta.strides[0] = 2;
       }},
      {"x with its compact stride given",
       [](ScaleCall& c) {
         c.x.meta.flags |= JW_TENSOR_HAS_STRIDES;
         c.x.meta.strides[0] = 1;
       }},
      {"x's data null", [](ScaleCall& c) { c.x.data = nullptr; }},
      {"x's data off 16-byte alignment",
       [](ScaleCall& c) { c.x.data = static_cast<float*>(c.x.data) + 1; }},
      {"x's data another aligned address",
       [](ScaleCall& c) { c.x.data = static_cast<float*>(c.x.data) + 4; }},
      {"x on device 1", [](ScaleCall& c) { c.x.device_index = 1; }},
      {"x's argument struct too small",
       [](ScaleCall& c) { c.args[1].struct_size = 4; }},
      {"x of an unknown value kind",
       [](ScaleCall& c) { c.args[1].kind = static_cast<jw_value_kind>(7); }},
      {"n of another class", [](ScaleCall& c) { c.args[2] = arg_int(3); }},
      {"n one", [](ScaleCall& c) { c.args[2] = arg_int(1); }},
      {"n divisible by 16 again",
       [](ScaleCall& c) { c.args[2] = arg_int(32); }},
      {"n a 64-bit value",
       [](ScaleCall& c) { c.args[2] = arg_int(int64_t{1} << 40); }},
      {"n a float", [](ScaleCall& c) { c.args[2] = arg_float(16.0); }},
      {"n of an unknown scalar kind",
       [](ScaleCall& c) {
         c.args[2].value.scalar.kind = static_cast<jw_scalar_kind>(42);
       }},
      {"factor another value",
       [](ScaleCall& c) { c.args[3] = arg_float(3.0); }},
      {"factor an integer", [](ScaleCall& c) { c.args[3] = arg_int(2); }},
      {"n and factor missing", [](ScaleCall& c) { c.args.resize(2); }},
      {"BLOCK given, the default",
       [](ScaleCall& c) { c.args.push_back(arg_int(4)); }},
      {"BLOCK given, another",
       [](ScaleCall& c) { c.args.push_back(arg_int(8)); }},
      {"one argument too many",
       [](ScaleCall& c) {
         c.args.push_back(arg_int(4));
         c.args.push_back(arg_int(4));
       }},
  };
  Runtime remembered;
  REQUIRE(remembered.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  int refused = 0, launched_another = 0;
  for (const auto& [what, change] : changes) {
    const std::string change_made = what;
    CAPTURE(change_made);
    ScaleCall changed(base);
    change(changed);
    // A runtime that has launched nothing judges the changed call alone.
    Runtime first;
    REQUIRE(first.load_plugin(FAKE_GOOD_PLUGIN).loaded);
    const Outcome expected = launch_outcome(first, changed);
    // The same call right after the base call was remembered.
    const Outcome base_outcome = launch_outcome(remembered, base);
    REQUIRE(base_outcome.error.empty());
    const Outcome got = launch_outcome(remembered, changed);
    CHECK(got == expected);
    if (!expected.error.empty()) ++refused;
    if (expected.error.empty() && expected.key != base_outcome.key) {
      ++launched_another;
    }
  }
  // The list covers both kinds of change (n = 2^40 is refused by the
  // plugin: n exceeds out).
  CHECK(refused >= 15);
  CHECK(launched_another >= 5);
}

TEST_CASE(
    "given a prepared launch, when it is only looked up (find_prepared), "
    "then nothing is counted as a hit, with or without the last arguments "
    "remembered") {
  Runtime runtime;
  REQUIRE(runtime.load_plugin(FAKE_GOOD_PLUGIN).loaded);
  ScaleBuffers b;
  const KernelHandle scale = runtime.kernel(kScale);
  const auto args = b.args(16, 2.0);
  const auto other = b.args(3, 2.0);  // another key, to forget `args`
  scale.launch(args, on("fake"));
  scale.launch(other, on("fake"));
  const uint64_t hits = runtime.cache_stats().hits;
  // Found by signature (the last arguments are `other`'s), then through
  // the remembered image.
  for (int i = 0; i < 2; ++i) {
    CHECK(detail::RuntimeImpl::find_prepared(scale, args, "fake", 0) !=
          nullptr);
  }
  CHECK(runtime.cache_stats().hits == hits);
  scale.launch(args, on("fake"));  // a launch counts
  CHECK(runtime.cache_stats().hits == hits + 1);
}
