// Tests for the CPU reference as a plugin: the handshake, register_all,
// the "cpu" platform, and compile / launch / describe / fingerprint through
// the C callbacks, with the "cpu-instantiation" artifact in between. Also
// loads the built libjitwarm-reference-cpu.so to check what it exports.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reference_test_support.hpp"

extern "C" jw_status jitwarm_plugin_negotiate(jw_plugin_negotiation*);
// c_abi_calls.c: calls that only C can make (enum arguments of any value).
extern "C" jw_status call_copy_with_direction(const jw_platform_desc* platform,
                                              void* dst, const void* src,
                                              size_t bytes, int direction);

namespace {

using namespace jitwarm::reference_test;
using jitwarm::numeric::BFloat16;
namespace ks = jitwarm::kernel_set;
namespace ref = jitwarm::reference_cpu;

// ---------------------------------------------------------------------------
// A fake core: records what the plugin registers and the errors it reports.
// ---------------------------------------------------------------------------
struct RecordedImpl {
  std::string kernel_name, platform, impl_name;
  jw_kernel_impl impl{};  // callbacks and user_data (strings not kept)
};

class FakeHost {
 public:
  FakeHost() {
    api_.struct_size = sizeof(jw_host_api);
    api_.abi_version = JITWARM_ABI_VERSION;
    api_.host_ctx = this;
    api_.log = [](void* ctx, jw_log_level, const char* message) {
      self(ctx).logs.emplace_back(message);
    };
    api_.set_error = [](void* ctx, const char* message) {
      self(ctx).last_error = message;
    };
    api_.define_schema = [](void* ctx, const jw_kernel_schema* schema) {
      FakeHost& host = self(ctx);
      if (host.define_schema_status != JW_OK) return host.define_schema_status;
      host.schemas.emplace_back(schema->name);
      return JW_OK;
    };
    api_.register_impl = [](void* ctx, const jw_kernel_impl* impl) {
      self(ctx).impls.push_back(RecordedImpl{impl->kernel_name, impl->platform,
                                             impl->impl_name, *impl});
      return JW_OK;
    };
    api_.register_platform = [](void* ctx, const jw_platform_desc* platform) {
      self(ctx).platform_names.emplace_back(platform->name);
      self(ctx).platforms.push_back(*platform);
      return JW_OK;
    };
  }
  // Unloading: the plugin forgets this host, which is about to go away.
  ~FakeHost() {
    if (plugin != nullptr && plugin->shutdown != nullptr) plugin->shutdown();
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  // Handshake and registration, as the core's loader does them.
  // `negotiate` defaults to the statically linked entry point.
  jw_status load(jw_plugin_negotiate_fn negotiate = &jitwarm_plugin_negotiate) {
    jw_plugin_negotiation negotiation{};
    negotiation.struct_size = sizeof(negotiation);
    negotiation.core_max_version = JITWARM_ABI_VERSION;
    negotiation.core_min_version = JITWARM_ABI_VERSION_MIN;
    const jw_status status = negotiate(&negotiation);
    if (status != JW_OK) return status;
    plugin = negotiation.plugin;
    return plugin->register_all(&api_);
  }

  const RecordedImpl& impl(std::string_view kernel) const {
    for (const RecordedImpl& i : impls) {
      if (i.kernel_name == kernel) return i;
    }
    FAIL("no implementation of ", std::string(kernel));
    return impls.front();
  }
  const jw_platform_desc& cpu() const {
    REQUIRE(platforms.size() == 1);
    return platforms.front();
  }

  jw_status define_schema_status = JW_OK;
  const jw_plugin_api* plugin = nullptr;
  std::vector<std::string> schemas;
  std::vector<RecordedImpl> impls;
  std::vector<std::string> platform_names;
  std::vector<jw_platform_desc> platforms;
  std::vector<std::string> logs;
  std::string last_error;

 private:
  static FakeHost& self(void* ctx) { return *static_cast<FakeHost*>(ctx); }
  jw_host_api api_{};
};

// Receives what compile emits.
struct CollectedArtifact {
  std::string binary, format, entry_point;
  int emits = 0;

  jw_artifact_sink sink() {
    jw_artifact_sink s{};
    s.struct_size = sizeof(s);
    s.ctx = this;
    s.emit = [](void* ctx, const jw_artifact_desc* artifact) {
      auto& self = *static_cast<CollectedArtifact*>(ctx);
      self.binary.assign(static_cast<const char*>(artifact->binary),
                         artifact->binary_size);
      self.format = artifact->format;
      self.entry_point = artifact->entry_point;
      ++self.emits;
      return JW_OK;
    };
    return s;
  }
  jw_artifact_view view(const jw_compile_key_view* key) const {
    jw_artifact_view v{};
    v.struct_size = sizeof(v);
    v.key = key;
    v.binary = binary.data();
    v.binary_size = binary.size();
    v.format = format.c_str();
    v.entry_point = entry_point.c_str();
    v.artifact_id = 1;
    return v;
  }
};

struct CollectedText {
  std::string text;
  jw_text_sink sink() {
    jw_text_sink s{};
    s.struct_size = sizeof(s);
    s.ctx = this;
    s.append = [](void* ctx, const char* data, size_t length) {
      static_cast<CollectedText*>(ctx)->text.append(data, length);
    };
    return s;
  }
};

jw_status compile_with(const RecordedImpl& impl, TestKey& key,
                       CollectedArtifact* artifact) {
  const jw_artifact_sink sink = artifact->sink();
  return impl.impl.compile(impl.impl.user_data, &key.view(), &sink);
}

jw_status launch_with(const RecordedImpl& impl, const jw_artifact_view& view,
                      const std::vector<jw_arg_value>& args) {
  return impl.impl.launch(impl.impl.user_data, &view, args.data(),
                          static_cast<uint32_t>(args.size()), nullptr);
}

// An rms_norm launch in bfloat16 (2 rows of 4), for the compile/launch
// round trips.
struct RmsNormLaunch {
  HostBuffer<BFloat16> out{{2, 4}, std::vector<BFloat16>(8)};
  HostBuffer<BFloat16> x{{2, 4},
                         {BFloat16::from_float(1), BFloat16::from_float(-2),
                          BFloat16::from_float(3), BFloat16::from_float(0.5),
                          BFloat16::from_float(4), BFloat16::from_float(4),
                          BFloat16::from_float(-4), BFloat16::from_float(1)}};
  HostBuffer<BFloat16> weight{
      {4}, std::vector<BFloat16>(4, BFloat16::from_float(2))};
  std::vector<jw_arg_value> args() const {
    return {out.arg(),       x.arg(),    int_arg(4), weight.arg(),
            float_arg(1e-6), int_arg(2), int_arg(4)};
  }
};

// ---------------------------------------------------------------------------
// Handshake and registration
// ---------------------------------------------------------------------------
TEST_CASE(
    "given a core that speaks ABI 1 (or up to 3), when the plugin "
    "negotiates, then it answers version 1 and its static function table") {
  for (uint32_t core_max : {1u, 3u}) {
    jw_plugin_negotiation negotiation{};
    negotiation.struct_size = sizeof(negotiation);
    negotiation.core_max_version = core_max;
    negotiation.core_min_version = 1;
    REQUIRE(jitwarm_plugin_negotiate(&negotiation) == JW_OK);
    CHECK(negotiation.plugin_version == 1);
    REQUIRE(negotiation.plugin != nullptr);
    CHECK(negotiation.plugin->struct_size == sizeof(jw_plugin_api));
    CHECK(std::string(negotiation.plugin->name) == "jitwarm-reference-cpu");
    CHECK(std::string(negotiation.plugin->version) == ref::plugin_version());
    CHECK((negotiation.plugin->register_all != nullptr));
  }
  CHECK(ref::plugin_version() == "0.1.0");
}

TEST_CASE(
    "given a core whose newest ABI is 0 or whose oldest is 2, when the "
    "plugin negotiates, then it fails with ABI_MISMATCH, answers no table "
    "and names the version it would need, 1 (plugin-abi.md P4)") {
  for (auto [core_min, core_max] : {std::pair{0u, 0u}, std::pair{2u, 2u}}) {
    jw_plugin_negotiation negotiation{};
    negotiation.struct_size = sizeof(negotiation);
    negotiation.core_max_version = core_max;
    negotiation.core_min_version = core_min;
    CHECK(jitwarm_plugin_negotiate(&negotiation) == JW_ERROR_ABI_MISMATCH);
    CHECK(negotiation.plugin == nullptr);
    CHECK(negotiation.plugin_version == 1);
  }
  CHECK(jitwarm_plugin_negotiate(nullptr) == JW_ERROR_INVALID_ARGUMENT);
}

TEST_CASE(
    "given a fake core, when the plugin registers, then it defines the ten "
    "schemas in order, one positional cpu implementation per kernel and the "
    "cpu platform") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  std::vector<std::string> expected;
  for (const jw_kernel_schema& schema : ks::schemas()) {
    expected.emplace_back(schema.name);
  }
  CHECK(expected.size() == 10);
  CHECK(host.schemas == expected);
  REQUIRE(host.impls.size() == 10);
  for (std::size_t i = 0; i < host.impls.size(); ++i) {
    const RecordedImpl& impl = host.impls[i];
    INFO("implementation ", impl.kernel_name);
    CHECK(impl.kernel_name == expected[i]);
    CHECK(impl.platform == "cpu");
    CHECK(impl.impl_name == "reference-cpu");
    CHECK(impl.impl.struct_size == sizeof(jw_kernel_impl));
    CHECK(impl.impl.param_names == nullptr);
    CHECK(impl.impl.user_data != nullptr);
    CHECK((impl.impl.compile != nullptr));
    CHECK((impl.impl.launch != nullptr));
    CHECK((impl.impl.describe != nullptr));
    CHECK((impl.impl.fingerprint != nullptr));
  }
  CHECK(host.platform_names == std::vector<std::string>{"cpu"});
  CHECK(host.logs.empty());
}

TEST_CASE(
    "given a core that refuses the first schema, when the plugin registers, "
    "then it stops with the core's status, keeps the core's error detail "
    "and logs which schema failed") {
  FakeHost host;
  host.define_schema_status = JW_ERROR_ALREADY_EXISTS;
  CHECK(host.load() == JW_ERROR_ALREADY_EXISTS);
  CHECK(host.impls.empty());
  CHECK(host.platforms.empty());
  CHECK(host.last_error.empty());
  REQUIRE(host.logs.size() == 1);
  CHECK(contains(host.logs[0], std::string(ks::kComputeSlotMapping)));
  CHECK(contains(host.logs[0], "define_schema"));
}

// ---------------------------------------------------------------------------
// The cpu platform
// ---------------------------------------------------------------------------
TEST_CASE(
    "given the cpu platform, when asked for capabilities, devices and its "
    "target, then it can compile and launch on one device named cpu:<arch>") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  const jw_platform_desc& cpu = host.cpu();
  uint32_t flags = 0;
  CollectedText detail;
  const jw_text_sink detail_sink = detail.sink();
  REQUIRE(cpu.capabilities(cpu.user_data, &flags, &detail_sink) == JW_OK);
  CHECK(flags == (JW_PLATFORM_CAN_COMPILE | JW_PLATFORM_CAN_LAUNCH));
  CHECK(contains(detail.text, "host memory"));
  int32_t count = 0;
  REQUIRE(cpu.device_count(cpu.user_data, &count) == JW_OK);
  CHECK(count == 1);
  CollectedText target;
  const jw_text_sink target_sink = target.sink();
  REQUIRE(cpu.device_target(cpu.user_data, 0, &target_sink) == JW_OK);
#if defined(__x86_64__)
  CHECK(target.text == "cpu:x86_64");
#elif defined(__aarch64__)
  CHECK(target.text == "cpu:aarch64");
#endif
  CHECK(target.text == ref::host_target());
  CHECK(cpu.device_target(cpu.user_data, 1, &target_sink) ==
        JW_ERROR_INVALID_ARGUMENT);
  CHECK(contains(host.last_error, "device 1"));
}

TEST_CASE(
    "given the cpu platform, when memory is allocated (0 and 100 bytes), "
    "copied in every direction and freed, then pointers are 64-byte aligned "
    "and copies move the bytes") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  const jw_platform_desc& cpu = host.cpu();
  void* empty = nullptr;
  REQUIRE(cpu.allocate(cpu.user_data, 0, 0, &empty) == JW_OK);
  CHECK(empty != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(empty) % 64 == 0);
  void* a = nullptr;
  void* b = nullptr;
  REQUIRE(cpu.allocate(cpu.user_data, 0, 100, &a) == JW_OK);
  REQUIRE(cpu.allocate(cpu.user_data, 0, 100, &b) == JW_OK);
  CHECK(a != empty);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(b) % 64 == 0);

  const std::vector<uint8_t> source = [] {
    std::vector<uint8_t> bytes(100);
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<uint8_t>(3 * i);
    return bytes;
  }();
  std::vector<uint8_t> back(100, 0);
  CHECK(cpu.copy(cpu.user_data, 0, a, source.data(), 100,
                 JW_COPY_HOST_TO_DEVICE, nullptr) == JW_OK);
  CHECK(cpu.copy(cpu.user_data, 0, b, a, 100, JW_COPY_DEVICE_TO_DEVICE,
                 nullptr) == JW_OK);
  CHECK(cpu.copy(cpu.user_data, 0, back.data(), b, 100, JW_COPY_DEVICE_TO_HOST,
                 nullptr) == JW_OK);
  CHECK(back == source);
  CHECK(cpu.copy(cpu.user_data, 0, b, a, 0, JW_COPY_DEVICE_TO_DEVICE,
                 nullptr) == JW_OK);
  CHECK(cpu.synchronize(cpu.user_data, 0, nullptr) == JW_OK);

  CHECK(call_copy_with_direction(&cpu, b, a, 4, 9) ==
        JW_ERROR_INVALID_ARGUMENT);
  CHECK(contains(host.last_error, "unknown direction 9"));
  CHECK(cpu.copy(cpu.user_data, 0, nullptr, a, 4, JW_COPY_DEVICE_TO_DEVICE,
                 nullptr) == JW_ERROR_INVALID_ARGUMENT);
  CHECK(contains(host.last_error, "null destination"));
  CHECK(cpu.allocate(cpu.user_data, 2, 8, &a) == JW_ERROR_INVALID_ARGUMENT);

  for (void* p : {empty, a, b}) {
    CHECK(cpu.free_memory(cpu.user_data, 0, p) == JW_OK);
  }
  CHECK(cpu.free_memory(cpu.user_data, 0, nullptr) == JW_OK);
}

// ---------------------------------------------------------------------------
// compile / launch through the C callbacks
// ---------------------------------------------------------------------------
TEST_CASE(
    "given a bfloat16 rms_norm key, when compiled, then the artifact is a "
    "cpu-instantiation record naming rms_norm<bf16> and compile ran "
    "nothing") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  RmsNormLaunch launch;
  TestKey key(ks::kRmsNorm, launch.args());
  CollectedArtifact artifact;
  REQUIRE(compile_with(host.impl(ks::kRmsNorm), key, &artifact) == JW_OK);
  CHECK(artifact.emits == 1);
  CHECK(artifact.format == "cpu-instantiation");
  CHECK(artifact.entry_point == "rms_norm<bf16>");
  const ref::InstantiationRecord record = ref::parse_record(artifact.binary);
  CHECK(record.kernel_name == ks::kRmsNorm);
  CHECK(record.instantiation == "rms_norm<bf16>");
  CHECK(record.target == ref::host_target());
  CHECK(artifact.binary == ref::encode_record(record));
  for (const BFloat16 v : launch.out.values) CHECK(v.bits == 0);
}

TEST_CASE(
    "given a compiled artifact, when launched through the callback, then the "
    "output equals the direct path's and the result is the rms_norm "
    "formula") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  RmsNormLaunch launch;
  TestKey key(ks::kRmsNorm, launch.args());
  CollectedArtifact artifact;
  REQUIRE(compile_with(host.impl(ks::kRmsNorm), key, &artifact) == JW_OK);
  REQUIRE(launch_with(host.impl(ks::kRmsNorm), artifact.view(&key.view()),
                      launch.args()) == JW_OK);
  // Row 1 is [4, 4, -4, 1]: mean square 12.25, rms 3.5, weight 2.
  CHECK(launch.out.values[4].to_float() ==
        BFloat16::from_float(8 / 3.5f).to_float());
  CHECK(launch.out.values[7].to_float() ==
        BFloat16::from_float(2 / 3.5f).to_float());
  const std::vector<BFloat16> launched = launch.out.values;
  std::fill(launch.out.values.begin(), launch.out.values.end(), BFloat16{});
  CHECK(run(ks::kRmsNorm, launch.args()) == "rms_norm<bf16>");
  for (std::size_t i = 0; i < launched.size(); ++i) {
    CHECK(launch.out.values[i].bits == launched[i].bits);
  }
}

TEST_CASE(
    "given a context-parallel slot mapping key, when compiled and launched "
    "through the callbacks, then constexprs from the key and arguments "
    "agree and the slots are the hand-derived ones") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  HostBuffer<int32_t> qsl({2}, {0, 4});
  HostBuffer<int64_t> positions({4}, {1, 2, 3, 9});
  HostBuffer<int32_t> table({1, 2}, {10, 20});
  HostBuffer<int64_t> slots({5}, std::vector<int64_t>(5, 0));
  const std::vector<jw_arg_value> args{qsl.arg(),  positions.arg(), table.arg(),
                                       int_arg(2), slots.arg(),     int_arg(1),
                                       int_arg(5), int_arg(4),      int_arg(1),
                                       int_arg(2), int_arg(1),      int_arg(1)};
  TestKey key(ks::kComputeSlotMapping, args);
  CollectedArtifact artifact;
  const RecordedImpl& impl = host.impl(ks::kComputeSlotMapping);
  REQUIRE(compile_with(impl, key, &artifact) == JW_OK);
  CHECK(artifact.entry_point == "compute_slot_mapping");
  REQUIRE(launch_with(impl, artifact.view(&key.view()), args) == JW_OK);
  CHECK(slots.values == std::vector<int64_t>{40, -1, 41, 80, -1});
}

// One bad key: what to break, the status and a fragment of the message.
struct BadKeyCase {
  const char* scenario;
  std::string_view kernel;
  jw_status status;
  const char* fragment;
};

TEST_CASE(
    "given keys the reference cannot compile, when compiled through the "
    "callback, then each is refused with a status and a message naming the "
    "problem") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  RmsNormLaunch rms;
  HostBuffer<int32_t> qsl({2}, {0, 1});
  HostBuffer<int64_t> positions({1}, {0});
  HostBuffer<int32_t> table({1, 1}, {1});
  HostBuffer<int64_t> slots({1}, {0});
  const std::vector<jw_arg_value> slot_args{
      qsl.arg(),   positions.arg(), table.arg(), int_arg(1),
      slots.arg(), int_arg(1),      int_arg(1),  int_arg(16)};
  HostBuffer<int32_t> expand_out({1}, {0});
  HostBuffer<int32_t> expand_x({1}, {0});
  HostBuffer<int32_t> expand_cu({1}, {1});
  const std::vector<jw_arg_value> expand_args{expand_out.arg(), expand_x.arg(),
                                              expand_cu.arg(),  float_arg(1.5),
                                              int_arg(0),       int_arg(4)};

  auto check_refused_key = [&](std::string_view kernel, TestKey& key,
                               jw_status status, const char* fragment) {
    CollectedArtifact artifact;
    host.last_error.clear();
    CHECK(compile_with(host.impl(kernel), key, &artifact) == status);
    CHECK(artifact.emits == 0);
    INFO("message: ", host.last_error);
    CHECK(contains(host.last_error, fragment));
  };

  SUBCASE("cp_world_size 0") {
    TestKey key(ks::kComputeSlotMapping, slot_args);
    key.set_constexpr("cp_world_size", 0);
    check_refused_key(ks::kComputeSlotMapping, key, JW_ERROR_INVALID_ARGUMENT,
                      "cp_world_size = 0");
  }
  SUBCASE("cp_rank equal to cp_world_size") {
    TestKey key(ks::kComputeSlotMapping, slot_args);
    key.set_constexpr("cp_world_size", 4);
    key.set_constexpr("cp_rank", 4);
    check_refused_key(ks::kComputeSlotMapping, key, JW_ERROR_INVALID_ARGUMENT,
                      "cp_rank = 4 must be in [0, cp_world_size = 4)");
  }
  SUBCASE("a negative cp_rank") {
    TestKey key(ks::kComputeSlotMapping, slot_args);
    key.set_constexpr("cp_rank", -1);
    check_refused_key(ks::kComputeSlotMapping, key, JW_ERROR_INVALID_ARGUMENT,
                      "cp_rank = -1");
  }
  SUBCASE("blocks_per_kv_block 0") {
    TestKey key(ks::kComputeSlotMapping, slot_args);
    key.set_constexpr("blocks_per_kv_block", 0);
    check_refused_key(ks::kComputeSlotMapping, key, JW_ERROR_INVALID_ARGUMENT,
                      "blocks_per_kv_block = 0");
  }
  SUBCASE("a float constexpr") {
    TestKey key(ks::kComputeSlotMapping, slot_args);
    jw_scalar half{JW_SCALAR_FLOAT, {0}};
    half.value.f = 0.5;
    key.spec("cp_interleave").constexpr_value = half;
    check_refused_key(ks::kComputeSlotMapping, key, JW_ERROR_INVALID_ARGUMENT,
                      "constexpr 'cp_interleave' must be an integer");
  }
  SUBCASE("a cuda target") {
    TestKey key(ks::kRmsNorm, rms.args());
    key.set_target("cuda:sm_90");
    check_refused_key(ks::kRmsNorm, key, JW_ERROR_UNSUPPORTED,
                      "'cuda:sm_90' is not a cpu target");
  }
  SUBCASE("an unknown cpu architecture") {
    TestKey key(ks::kRmsNorm, rms.args());
    key.set_target("cpu:riscv128");
    check_refused_key(ks::kRmsNorm, key, JW_ERROR_UNSUPPORTED, "cpu:riscv128");
  }
  SUBCASE("a key for another kernel") {
    TestKey key(ks::kRmsNorm, rms.args());
    check_refused_key(ks::kSiluAndMul, key, JW_ERROR_INVALID_ARGUMENT,
                      "the key is for kernel");
  }
  SUBCASE("parameters out of schema order") {
    TestKey key(ks::kRmsNorm, rms.args());
    std::swap(key.specs()[0], key.specs()[1]);
    check_refused_key(ks::kRmsNorm, key, JW_ERROR_INVALID_ARGUMENT,
                      "parameter 0 is 'x'");
  }
  SUBCASE("a missing parameter") {
    TestKey key(ks::kRmsNorm, rms.args());
    key.specs().pop_back();
    check_refused_key(ks::kRmsNorm, key, JW_ERROR_INVALID_ARGUMENT,
                      "the key has 6 parameters, the schema 7");
  }
  SUBCASE("a dtype the kernel does not take") {
    TestKey key(ks::kRmsNorm, rms.args());
    for (const char* name : {"out", "x", "weight"}) {
      key.spec(name).dtype = JW_DTYPE_FLOAT64;
    }
    check_refused_key(ks::kRmsNorm, key, JW_ERROR_INVALID_ARGUMENT,
                      "'out' does not take float64");
  }
  SUBCASE("a dtype number outside jw_dtype") {
    TestKey key(ks::kRmsNorm, rms.args());
    const uint32_t bogus = 42;  // stored as a C caller could
    std::memcpy(&key.spec("x").dtype, &bogus, sizeof bogus);
    check_refused_key(ks::kRmsNorm, key, JW_ERROR_INVALID_ARGUMENT,
                      "'x' has an invalid dtype (42)");
  }
  SUBCASE("tensors that must share a dtype but do not") {
    TestKey key(ks::kRmsNorm, rms.args());
    key.spec("weight").dtype = JW_DTYPE_FLOAT32;
    check_refused_key(ks::kRmsNorm, key, JW_ERROR_INVALID_ARGUMENT,
                      "'weight' must have the dtype of 'x' (bfloat16)");
  }
  SUBCASE("a float replace scalar for integer x") {
    TestKey key(ks::kExpand, expand_args);
    check_refused_key(ks::kExpand, key, JW_ERROR_INVALID_ARGUMENT,
                      "replace_from is a float");
  }
  SUBCASE("MAX_NUM_TOKENS 0") {
    TestKey key(ks::kExpand, expand_args);
    key.spec("replace_from").scalar_kind = JW_SCALAR_INT;
    key.set_constexpr("MAX_NUM_TOKENS", 0);
    check_refused_key(ks::kExpand, key, JW_ERROR_INVALID_ARGUMENT,
                      "MAX_NUM_TOKENS = 0");
  }
}

TEST_CASE(
    "given artifacts the reference did not produce or that do not fit the "
    "arguments, when launched, then each is refused and nothing is "
    "written") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  const RecordedImpl& impl = host.impl(ks::kRmsNorm);
  RmsNormLaunch launch;
  TestKey key(ks::kRmsNorm, launch.args());
  CollectedArtifact good;
  REQUIRE(compile_with(impl, key, &good) == JW_OK);

  auto check_launch_refused = [&](const CollectedArtifact& artifact,
                                  const std::vector<jw_arg_value>& args,
                                  jw_status status, const char* fragment) {
    host.last_error.clear();
    CHECK(launch_with(impl, artifact.view(&key.view()), args) == status);
    INFO("message: ", host.last_error);
    CHECK(contains(host.last_error, fragment));
  };

  SUBCASE("another format") {
    CollectedArtifact bad = good;
    bad.format = "cubin";
    check_launch_refused(bad, launch.args(), JW_ERROR_INVALID_ARGUMENT,
                         "format 'cubin' is not 'cpu-instantiation'");
  }
  SUBCASE("an unknown instantiation") {
    CollectedArtifact bad = good;
    bad.binary = ref::encode_record(
        {std::string(ks::kRmsNorm), "rms_norm<fp64>", "cpu:x86_64"});
    bad.entry_point = "rms_norm<fp64>";
    check_launch_refused(bad, launch.args(), JW_ERROR_NOT_FOUND,
                         "unknown instantiation 'rms_norm<fp64>'");
  }
  SUBCASE("a record for another kernel") {
    CollectedArtifact bad = good;
    bad.binary = ref::encode_record(
        {std::string(ks::kSiluAndMul), "rms_norm<bf16>", "cpu:x86_64"});
    check_launch_refused(bad, launch.args(), JW_ERROR_INVALID_ARGUMENT,
                         "the record is for kernel");
  }
  SUBCASE("an entry point that disagrees with the record") {
    CollectedArtifact bad = good;
    bad.entry_point = "rms_norm<fp16>";
    check_launch_refused(bad, launch.args(), JW_ERROR_INVALID_ARGUMENT,
                         "entry point 'rms_norm<fp16>' differs");
  }
  SUBCASE("a malformed record") {
    CollectedArtifact bad = good;
    bad.binary = "not a record\n";
    check_launch_refused(bad, launch.args(), JW_ERROR_INVALID_ARGUMENT,
                         "malformed instantiation record");
  }
  SUBCASE("arguments of another dtype") {
    HostBuffer<float> out({2, 4}, std::vector<float>(8, 0.0f));
    HostBuffer<float> x({2, 4}, std::vector<float>(8, 1.0f));
    HostBuffer<float> weight({4}, std::vector<float>(4, 1.0f));
    check_launch_refused(good,
                         {out.arg(), x.arg(), int_arg(4), weight.arg(),
                          float_arg(1e-6), int_arg(2), int_arg(4)},
                         JW_ERROR_INVALID_ARGUMENT,
                         "the arguments select 'rms_norm<fp32>', but the "
                         "artifact is 'rms_norm<bf16>'");
    CHECK(out.values == std::vector<float>(8, 0.0f));
  }
  for (const BFloat16 v : launch.out.values) CHECK(v.bits == 0);
}

TEST_CASE(
    "given keys of two dtypes, when described and fingerprinted, then the "
    "text names the instantiation and the constexprs, and fingerprints "
    "differ by instantiation and carry the plugin version") {
  FakeHost host;
  REQUIRE(host.load() == JW_OK);
  HostBuffer<int32_t> qsl({2}, {0, 1});
  HostBuffer<int64_t> positions({1}, {0});
  HostBuffer<int32_t> table({1, 1}, {1});
  HostBuffer<int64_t> slots({1}, {0});
  TestKey slot_key(ks::kComputeSlotMapping,
                   {qsl.arg(), positions.arg(), table.arg(), int_arg(1),
                    slots.arg(), int_arg(1), int_arg(1), int_arg(16),
                    int_arg(1), int_arg(8), int_arg(3)});
  const RecordedImpl& slot_impl = host.impl(ks::kComputeSlotMapping);
  CollectedText description;
  const jw_text_sink description_sink = description.sink();
  REQUIRE(slot_impl.impl.describe(slot_impl.impl.user_data, &slot_key.view(),
                                  &description_sink) == JW_OK);
  CHECK(contains(description.text, "instantiation: compute_slot_mapping"));
  CHECK(contains(description.text, "cp_world_size: constexpr = 8"));
  CHECK(contains(description.text, "cp_rank: constexpr = 3"));
  CHECK(contains(description.text, "cp_interleave: constexpr = 1"));
  CHECK(contains(description.text, "block_size: int i32 (divisible by 16)"));
  CHECK(contains(description.text, std::string(ref::host_target())));

  RmsNormLaunch rms;
  TestKey bf16_key(ks::kRmsNorm, rms.args());
  HostBuffer<float> out({2, 4}, std::vector<float>(8, 0.0f));
  HostBuffer<float> x({2, 4}, std::vector<float>(8, 1.0f));
  HostBuffer<float> weight({4}, std::vector<float>(4, 1.0f));
  TestKey fp32_key(ks::kRmsNorm, {out.arg(), x.arg(), int_arg(4), weight.arg(),
                                  float_arg(1e-6), int_arg(2), int_arg(4)});
  const RecordedImpl& rms_impl = host.impl(ks::kRmsNorm);
  auto fingerprint_of = [&](TestKey& key) {
    CollectedText text;
    const jw_text_sink sink = text.sink();
    CHECK(rms_impl.impl.fingerprint(rms_impl.impl.user_data, &key.view(),
                                    &sink) == JW_OK);
    return text.text;
  };
  const std::string bf16_fingerprint = fingerprint_of(bf16_key);
  const std::string fp32_fingerprint = fingerprint_of(fp32_key);
  CHECK(bf16_fingerprint != fp32_fingerprint);
  CHECK(contains(bf16_fingerprint, "rms_norm<bf16>"));
  CHECK(contains(fp32_fingerprint, "rms_norm<fp32>"));
  CHECK(contains(bf16_fingerprint, "jitwarm-reference-cpu 0.1.0"));
  CHECK(fingerprint_of(bf16_key) == bf16_fingerprint);  // deterministic
}

// A key for `schema` built from dtypes alone: tensors take `chosen` when it
// names them, else their first allowed dtype (or follow same_dtype_as);
// integers i32, floats fp32, scalars integers, constexprs their default or
// 1.
std::vector<jw_param_spec> specs_for(
    const jw_kernel_schema& schema,
    const std::map<std::string, jw_dtype>& chosen) {
  std::vector<jw_param_spec> specs(schema.num_params);
  for (uint32_t i = 0; i < schema.num_params; ++i) {
    const jw_param_desc& desc = schema.params[i];
    jw_param_spec& spec = specs[i];
    spec.struct_size = sizeof(jw_param_spec);
    spec.name = desc.name;
    spec.kind = desc.kind;
    spec.int_spec = {JW_INT_I32, JW_INT_CLASS_NONE};
    spec.float_type = JW_FLOAT_F32;
    if (desc.kind == JW_PARAM_SCALAR) spec.scalar_kind = JW_SCALAR_INT;
    if (desc.kind == JW_PARAM_CONSTEXPR) {
      spec.constexpr_value = (desc.flags & JW_PARAM_HAS_DEFAULT) != 0
                                 ? desc.default_value
                                 : jw_scalar{JW_SCALAR_INT, {1}};
    }
    if (desc.kind == JW_PARAM_TENSOR) {
      const auto found = chosen.find(desc.name);
      if (found != chosen.end()) {
        spec.dtype = found->second;
      } else {
        const jw_dtype_set allowed = desc.allowed_dtypes != 0
                                         ? desc.allowed_dtypes
                                         : JW_DTYPE_BIT(JW_DTYPE_FLOAT32);
        spec.dtype = static_cast<jw_dtype>(std::countr_zero(allowed));
      }
      spec.alignment = JW_ALIGN_16;
    }
  }
  for (uint32_t i = 0; i < schema.num_params; ++i) {
    const char* other = schema.params[i].same_dtype_as;
    if (schema.params[i].kind != JW_PARAM_TENSOR || other == nullptr) continue;
    for (uint32_t j = 0; j < schema.num_params; ++j) {
      if (std::string_view(schema.params[j].name) == other) {
        specs[i].dtype = specs[j].dtype;
      }
    }
  }
  return specs;
}

// Every dtype a tensor parameter allows (all of them when it says "any").
std::vector<jw_dtype> allowed_dtypes(const jw_param_desc& desc) {
  std::vector<jw_dtype> dtypes;
  for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
    if (desc.allowed_dtypes == 0 || (desc.allowed_dtypes & JW_DTYPE_BIT(d))) {
      dtypes.push_back(static_cast<jw_dtype>(d));
    }
  }
  return dtypes;
}

// Calls `visit` with every combination of dtypes for the tensors that
// choose their own (the others follow same_dtype_as).
template <typename Visit>
void for_each_dtype_combination(const jw_kernel_schema& schema,
                                std::map<std::string, jw_dtype>& chosen,
                                uint32_t from, Visit&& visit) {
  for (uint32_t p = from; p < schema.num_params; ++p) {
    const jw_param_desc& desc = schema.params[p];
    if (desc.kind != JW_PARAM_TENSOR || desc.same_dtype_as != nullptr) {
      continue;
    }
    for (jw_dtype dtype : allowed_dtypes(desc)) {
      chosen[desc.name] = dtype;
      for_each_dtype_combination(schema, chosen, p + 1, visit);
    }
    chosen.erase(desc.name);
    return;
  }
  visit(chosen);
}

TEST_CASE(
    "given every kernel and every combination of dtypes its tensors allow, "
    "when keys are compiled, then each compiles to a listed instantiation "
    "and together they reach every instantiation listed") {
  for (const jw_kernel_schema& schema : ks::schemas()) {
    INFO("kernel ", std::string(schema.name));
    const std::vector<std::string_view> names =
        ref::instantiation_names(schema.name);
    const std::set<std::string_view> listed(names.begin(), names.end());
    CHECK(listed.size() == names.size());  // no duplicates
    std::set<std::string> reached;
    std::size_t combinations = 0;
    std::map<std::string, jw_dtype> chosen;
    for_each_dtype_combination(
        schema, chosen, 0, [&](const std::map<std::string, jw_dtype>& dtypes) {
          std::vector<jw_param_spec> specs = specs_for(schema, dtypes);
          jw_compile_key_view key{};
          key.struct_size = sizeof(key);
          key.kernel_name = schema.name;
          const std::string target(ref::host_target());
          key.target = target.c_str();
          key.params = specs.data();
          key.num_params = static_cast<uint32_t>(specs.size());
          const ref::CompiledInstantiation compiled =
              ref::compile_instantiation(schema.name, key);
          CHECK(listed.count(compiled.entry_point) == 1);
          reached.insert(compiled.entry_point);
          ++combinations;
        });
    CHECK(combinations >= names.size());
    CHECK(reached == std::set<std::string>(names.begin(), names.end()));
  }
}

TEST_CASE(
    "given arguments for each kernel, when run directly and compiled from "
    "the key derived from them, then both pick the same instantiation") {
  HostBuffer<uint8_t> state({2, 3}, std::vector<uint8_t>(12, 0),
                            JW_DTYPE_INT16);
  HostBuffer<uint8_t> src({1, 3}, std::vector<uint8_t>(6, 1), JW_DTYPE_INT16);
  HostBuffer<int64_t> indices({1}, {1});
  const std::vector<jw_arg_value> args{state.arg(),   int_arg(3), src.arg(),
                                       indices.arg(), int_arg(1), int_arg(3),
                                       int_arg(4)};
  TestKey key(ks::kScatterStates, args);
  const ref::CompiledInstantiation compiled =
      ref::compile_instantiation(ks::kScatterStates, key.view());
  CHECK(compiled.entry_point == "scatter_states<bytes2,i64>");
  CHECK(run(ks::kScatterStates, args) == compiled.entry_point);
  CHECK(state.values ==
        std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
}

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------
TEST_CASE(
    "given damaged instantiation records, when parsed, then each is refused "
    "with what is wrong") {
  const std::string good =
      ref::encode_record({"vllm.model_executor.layers.layernorm.rms_norm",
                          "rms_norm<fp32>", "cpu:x86_64"});
  const ref::InstantiationRecord parsed = ref::parse_record(good);
  CHECK(parsed.instantiation == "rms_norm<fp32>");
  const std::pair<std::string, const char*> damaged[] = {
      {"", "empty"},
      {good.substr(0, good.size() - 1), "no newline"},
      {"jitwarm-reference-cpu instantiation record 2\n", "first line"},
      {good + "target cpu:x86_64\n", "appears twice"},
      {good + "colour blue\n", "unknown field 'colour'"},
      {std::string(ref::kRecordHeader) + "\nkernel x\n", "needs the fields"},
      {std::string(ref::kRecordHeader) + "\nkernel\n", "has no value"},
  };
  for (const auto& [bytes, fragment] : damaged) {
    INFO("record: ", bytes);
    try {
      ref::parse_record(bytes);
      FAIL("a damaged record was accepted");
    } catch (const jitwarm::plugin::PluginError& e) {
      CHECK(e.status() == JW_ERROR_INVALID_ARGUMENT);
      CHECK(contains(e.what(), fragment));
    }
  }
}

// ---------------------------------------------------------------------------
// The built shared library
// ---------------------------------------------------------------------------
TEST_CASE(
    "given the built libjitwarm-reference-cpu.so, when it is opened, then it "
    "resolves without the core, exports jitwarm_plugin_negotiate, hides its "
    "internals, and registers and runs kernels like the static library") {
  // Opened as the core opens plugins: never unloaded (docs/plugin-abi.md
  // P15), so what the SDK keeps for the process stays reachable.
  void* library =
      dlopen(REFERENCE_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  INFO("dlerror: ", library == nullptr ? dlerror() : "");
  REQUIRE(library != nullptr);
  auto* negotiate = reinterpret_cast<jw_plugin_negotiate_fn>(
      dlsym(library, JITWARM_PLUGIN_ENTRY_SYMBOL));
  REQUIRE((negotiate != nullptr));
  // jitwarm::plugin::host_api() and jitwarm::kernel_set::schemas(): defined
  // in the library, but local to it.
  CHECK(dlsym(library, "_ZN7jitwarm6plugin8host_apiEv") == nullptr);
  CHECK(dlsym(library, "_ZN7jitwarm10kernel_set7schemasEv") == nullptr);
  {
    FakeHost host;
    REQUIRE(host.load(negotiate) == JW_OK);
    CHECK(host.schemas.size() == 10);
    CHECK(host.impls.size() == 10);
    CHECK(host.platform_names == std::vector<std::string>{"cpu"});
    // The library's own callbacks compile and launch.
    const RecordedImpl& impl = host.impl(ks::kExpand);
    HostBuffer<int32_t> output({6}, std::vector<int32_t>(6, -1));
    HostBuffer<int32_t> x({3}, {5, 9, 5});
    HostBuffer<int32_t> cu({3}, {2, 5, 6});
    const std::vector<jw_arg_value> args{output.arg(), x.arg(),    cu.arg(),
                                         int_arg(5),   int_arg(0), int_arg(4)};
    TestKey key(ks::kExpand, args);
    CollectedArtifact artifact;
    REQUIRE(compile_with(impl, key, &artifact) == JW_OK);
    CHECK(artifact.entry_point == "expand<i32>");
    REQUIRE(launch_with(impl, artifact.view(&key.view()), args) == JW_OK);
    CHECK(output.values == std::vector<int32_t>{0, 0, 9, 9, 9, 0});
    // Errors reach this host through the library's own host_api().
    CollectedArtifact unused;
    key.set_target("hip:gfx942");
    CHECK(compile_with(impl, key, &unused) == JW_ERROR_UNSUPPORTED);
    CHECK(contains(host.last_error, "hip:gfx942"));
  }  // the host says shutdown before the library goes
  CHECK(dlclose(library) == 0);  // drops the reference; the mapping stays
}

}  // namespace
