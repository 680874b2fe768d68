// One source, many fake plugins: each build defines one FAKE_* macro and
// the loader tests check what the handshake decided for each (the Vulkan
// loader's habit). Without any FAKE_* macro this is a small working plugin
// ("jitwarm-fake-good") with a toy kernel and a host-memory platform,
// used by the runtime tests.
//
// The bad-plugin zoo (tests/plugins/zoo, zoo-crash, wrong-results) is built
// from this source too, one macro per fault:
//   FAKE_NEGOTIATE_THROWS, FAKE_REGISTER_ALL_THROWS, FAKE_SHUTDOWN_THROWS,
//   FAKE_CALLBACKS_THROW     throw a std::runtime_error, or with
//                            FAKE_THROW_INT an int, from that call (the
//                            callbacks: compile, launch, describe,
//                            fingerprint, destroy and every platform one)
//   FAKE_THREAD_LEFT_RUNNING a thread that runs in the plugin's code for
//                            ever (heartbeats on the pipe whose write end is
//                            JITWARM_FAKE_HEARTBEAT_FD, when set)
//   FAKE_THREAD_THEN_REJECTED the same thread, then register_all fails
//   FAKE_SCHEMA_DTYPE_INVALID_BIT, FAKE_SCHEMA_DTYPE_HIGH_BITS,
//   FAKE_SCHEMA_DEFAULT_KIND_77, FAKE_SCHEMA_SAME_DTYPE_MISSING
//                            a malformed schema
//   FAKE_WRONG_PARAM_NAMES   a silu_and_mul implementation whose parameter
//                            names are not the schema's
//   FAKE_ENTRY_SEGFAULTS, FAKE_ENTRY_ABORTS, FAKE_ENTRY_EXITS
//                            the entry point kills the process (nothing can
//                            contain that in-process)
//   FAKE_RMS_NORM_OFF_BY_1_PERCENT
//                            a cpu rms_norm that is the reference's times
//                            1.01 (a wrong backend for conformance)
// And one macro for a feature (tests/plugins/batches):
//   FAKE_BATCHES             the toy kernel also compiles batches, logging
//                            "fake compile_batch of N keys", and prefers
//                            batches of JITWARM_FAKE_PREFERRED_BATCH_SIZE
//                            keys (3 when unset)
#include <jitwarm/jitwarm.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(FAKE_THREAD_LEFT_RUNNING) || defined(FAKE_THREAD_THEN_REJECTED)
#include <unistd.h>

#include <thread>
#endif
#include <csignal>
#include <thread>
#if defined(FAKE_RMS_NORM_OFF_BY_1_PERCENT)
#include <jitwarm/plugin/float16.hpp>

#include <span>

#include "reference_cpu.hpp"
#endif

// Each variant uses a different subset of the helpers below.
#pragma GCC diagnostic ignored "-Wunused-function"

namespace {

// What the crashing variants do where they crash (FAKE_<WHERE>_SEGFAULTS,
// _ABORTS, _EXITS, _SPINS for WHERE = ENTRY, REGISTER): the process dies
// by a signal, by abort(), by exit(3), or never comes back.
[[maybe_unused]] void segfault() {
  std::raise(SIGSEGV);
}
[[maybe_unused]] [[noreturn]] void spin() {
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace

#ifndef FAKE_PLUGIN_NAME
#define FAKE_PLUGIN_NAME "jitwarm-fake-good"
#endif
// The toy kernel's schema and platform (zoo builds name their own, so one
// directory of them loads side by side).
#ifndef FAKE_SCHEMA_NAME
#define FAKE_SCHEMA_NAME "jitwarm.test.scale"
#endif
#ifndef FAKE_PLATFORM_NAME
#define FAKE_PLATFORM_NAME "fake"
#endif

namespace {

const jw_host_api* g_host = nullptr;

jw_status fail(jw_status status, const char* message) {
  if (g_host != nullptr) g_host->set_error(g_host->host_ctx, message);
  return status;
}

// The fault of FAKE_*_THROWS: what a careless C++ plugin lets escape.
[[noreturn]] void throw_fault(const char* where) {
#if defined(FAKE_THROW_INT)
  (void)where;
  throw 42;
#else
  throw std::runtime_error(std::string("fake: ") + where + " throws");
#endif
}

#if defined(FAKE_CALLBACKS_THROW)
#define FAKE_CALLBACK_FAULT(where) throw_fault(where)
#else
#define FAKE_CALLBACK_FAULT(where) static_cast<void>(0)
#endif

#if defined(FAKE_THREAD_LEFT_RUNNING) || defined(FAKE_THREAD_THEN_REJECTED)
// Runs in this library's code for ever: after each heartbeat it returns
// here, so it crashes the host the first time it does so after the
// library was unmapped. The host's test reads heartbeats to know that the
// thread ran this code after the plugin was let go.
void start_thread_left_running(const jw_host_api* host) {
  const char* fd_text =
      host->get_config != nullptr
          ? host->get_config(host->host_ctx, "fake.heartbeat_fd")
          : nullptr;
  const int fd = fd_text != nullptr ? std::atoi(fd_text) : -1;
  std::thread([fd] {
    for (;;) {
      if (fd >= 0) {
        const char beat = 'b';
        if (::write(fd, &beat, 1) != 1) ::usleep(1000);
      } else {
        ::usleep(1000);
      }
    }
  }).detach();
}
#endif

// --- the toy kernel: out[i] = x[i] * factor for i < n -----------------------
const jw_param_desc kScaleParams[] = {
    {sizeof(jw_param_desc),
     nullptr,
     "out",
     JW_PARAM_TENSOR,
     JW_PARAM_OUTPUT | JW_PARAM_CONTIGUOUS,
     JW_DTYPE_BIT(JW_DTYPE_FLOAT32) | JW_DTYPE_BIT(JW_DTYPE_FLOAT64),
     1,
     {JW_SCALAR_NONE, {0}},
     "x"},
    {sizeof(jw_param_desc),
     nullptr,
     "x",
     JW_PARAM_TENSOR,
     JW_PARAM_CONTIGUOUS,
     JW_DTYPE_BIT(JW_DTYPE_FLOAT32) | JW_DTYPE_BIT(JW_DTYPE_FLOAT64),
     1,
     {JW_SCALAR_NONE, {0}},
     nullptr},
    {sizeof(jw_param_desc),
     nullptr,
     "n",
     JW_PARAM_INT,
     0,
     0,
     -1,
     {JW_SCALAR_NONE, {0}},
     nullptr},
    {sizeof(jw_param_desc),
     nullptr,
     "factor",
     JW_PARAM_FLOAT,
     0,
     0,
     -1,
     {JW_SCALAR_NONE, {0}},
     nullptr},
    {sizeof(jw_param_desc),
     nullptr,
     "BLOCK",
     JW_PARAM_CONSTEXPR,
     JW_PARAM_HAS_DEFAULT,
     0,
     -1,
     {JW_SCALAR_INT, {4}},
     nullptr},
};

const jw_kernel_schema kScaleSchema = {
    sizeof(jw_kernel_schema),
    nullptr,
    FAKE_SCHEMA_NAME,
    "out[i] = x[i] * factor for i < n",
    kScaleParams,
    sizeof(kScaleParams) / sizeof(kScaleParams[0]),
    "host loop"};

template <typename T>
void scale(const jw_arg_value* args) {
  auto* out = static_cast<T*>(args[0].value.tensor->data);
  const auto* x = static_cast<const T*>(args[1].value.tensor->data);
  const int64_t n = args[2].value.scalar.value.i;
  const double factor = args[3].value.scalar.kind == JW_SCALAR_FLOAT
                            ? args[3].value.scalar.value.f
                            : static_cast<double>(args[3].value.scalar.value.i);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(x[i] * factor);
}

jw_status scale_compile(void*, const jw_compile_key_view* key,
                        const jw_artifact_sink* out) {
  FAKE_CALLBACK_FAULT("compile");
  if (key->num_params != 5 || key->params[0].kind != JW_PARAM_TENSOR) {
    return fail(JW_ERROR_INVALID_ARGUMENT, "fake: unexpected key shape");
  }
  // The "binary" names the instantiation, as a real backend's would.
  const char* entry =
      key->params[0].dtype == JW_DTYPE_FLOAT64 ? "scale<f64>" : "scale<f32>";
  jw_artifact_desc a{};
  a.struct_size = sizeof(a);
  a.binary = entry;
  a.binary_size = std::strlen(entry);
  a.format = "fake";
  a.entry_point = entry;
  return out->emit(out->ctx, &a);
}

jw_status scale_launch(void*, const jw_artifact_view* artifact,
                       const jw_arg_value* args, uint32_t num_args, void*) {
  FAKE_CALLBACK_FAULT("launch");
  if (num_args != 5) {
    return fail(JW_ERROR_INVALID_ARGUMENT, "fake: 5 arguments");
  }
  // The key view must stay valid for every launch of a cached artifact
  // (under ASan a dangling view is a use-after-free here).
  const jw_compile_key_view* key = artifact->key;
  if (key == nullptr || std::strcmp(key->kernel_name, kScaleSchema.name) != 0 ||
      key->num_params != 5 || std::strcmp(key->params[2].name, "n") != 0 ||
      std::strncmp(key->target, FAKE_PLATFORM_NAME ":",
                   std::strlen(FAKE_PLATFORM_NAME ":")) != 0) {
    return fail(JW_ERROR_INVALID_ARGUMENT,
                "fake: launched with a bad key view");
  }
  if (args[2].value.scalar.value.i > args[0].value.tensor->meta.shape[0]) {
    return fail(JW_ERROR_INVALID_ARGUMENT, "fake: n exceeds out");
  }
  if (std::strcmp(artifact->entry_point, "scale<f64>") == 0) {
    scale<double>(args);
  } else {
    scale<float>(args);
  }
  return JW_OK;
}

jw_status scale_describe(void*, const jw_compile_key_view* key,
                         const jw_text_sink* out) {
  FAKE_CALLBACK_FAULT("describe");
  const std::string text = std::string("fake scale for ") + key->text;
  out->append(out->ctx, text.data(), text.size());
  return JW_OK;
}

jw_status scale_fingerprint(void*, const jw_compile_key_view*,
                            const jw_text_sink* out) {
  FAKE_CALLBACK_FAULT("fingerprint");
  const char* text = "fake-scale-v1";
  out->append(out->ctx, text, std::strlen(text));
  return JW_OK;
}

#if defined(FAKE_BATCHES)
// Each key's artifact as scale_compile makes it, answered by index.
jw_status scale_compile_batch(void*, const jw_compile_key_view* const* keys,
                              uint32_t num_keys,
                              const jw_batch_artifact_sink* out) {
  const std::string note =
      "fake compile_batch of " + std::to_string(num_keys) + " keys";
  g_host->log(g_host->host_ctx, JW_LOG_INFO, note.c_str());
  for (uint32_t i = 0; i < num_keys; ++i) {
    struct Forward {
      const jw_batch_artifact_sink* batch;
      uint32_t index;
    } forward{out, i};
    jw_artifact_sink one{};
    one.struct_size = sizeof(one);
    one.ctx = &forward;
    one.emit = [](void* ctx, const jw_artifact_desc* artifact) {
      const auto& f = *static_cast<const Forward*>(ctx);
      return f.batch->emit(f.batch->ctx, f.index, artifact);
    };
    const jw_status s = scale_compile(nullptr, keys[i], &one);
    if (s != JW_OK) return s;
  }
  return JW_OK;
}

jw_status scale_preferred_batch_size(void*, const char* target,
                                     uint32_t* out_size) {
  if (std::strcmp(target, FAKE_PLATFORM_NAME ":toy1") != 0) {
    return fail(JW_ERROR_INVALID_ARGUMENT, "fake: unknown target");
  }
  const char* asked =
      g_host->get_config(g_host->host_ctx, "fake.preferred_batch_size");
  *out_size = asked != nullptr
                  ? static_cast<uint32_t>(std::strtoul(asked, nullptr, 10))
                  : 3;
  return JW_OK;
}
#endif

void scale_destroy(void*) {
  FAKE_CALLBACK_FAULT("destroy");
}

// --- the host-memory platform FAKE_PLATFORM_NAME ----------------------------
jw_status platform_capabilities(void*, uint32_t* flags, const jw_text_sink*) {
  FAKE_CALLBACK_FAULT("capabilities");
  *flags = JW_PLATFORM_CAN_COMPILE | JW_PLATFORM_CAN_LAUNCH;
  return JW_OK;
}
jw_status platform_device_count(void*, int32_t* count) {
  FAKE_CALLBACK_FAULT("device_count");
  *count = 1;
  return JW_OK;
}
jw_status platform_device_target(void*, int32_t device,
                                 const jw_text_sink* out) {
  FAKE_CALLBACK_FAULT("device_target");
  if (device != 0) return fail(JW_ERROR_NO_DEVICE, "fake: only device 0");
  const char* target = FAKE_PLATFORM_NAME ":toy1";
  out->append(out->ctx, target, std::strlen(target));
  return JW_OK;
}
jw_status platform_allocate(void*, int32_t, size_t bytes, void** out) {
  FAKE_CALLBACK_FAULT("allocate");
  *out = ::operator new(bytes == 0 ? 1 : bytes);
  return JW_OK;
}
jw_status platform_free(void*, int32_t, void* ptr) {
  FAKE_CALLBACK_FAULT("free_memory");
  ::operator delete(ptr);
  return JW_OK;
}
jw_status platform_copy(void*, int32_t, void* dst, const void* src,
                        size_t bytes, jw_copy_direction, void*) {
  FAKE_CALLBACK_FAULT("copy");
  std::memmove(dst, src, bytes);
  return JW_OK;
}
jw_status platform_synchronize(void*, int32_t, void*) {
  FAKE_CALLBACK_FAULT("synchronize");
  return JW_OK;
}

#if defined(FAKE_RMS_NORM_OFF_BY_1_PERCENT)
// rms_norm as the reference computes it, then every output element times
// 1.01, rounded back to its dtype: wrong by 1% everywhere.
constexpr const char* kRmsNorm =
    "vllm.model_executor.layers.layernorm.rms_norm";

jw_status off_by_one_percent_compile(void*, const jw_compile_key_view*,
                                     const jw_artifact_sink* out) {
  const char* entry = "rms_norm-times-1.01";
  jw_artifact_desc a{};
  a.struct_size = sizeof(a);
  a.binary = entry;
  a.binary_size = std::strlen(entry);
  a.format = "fake";
  a.entry_point = entry;
  return out->emit(out->ctx, &a);
}

jw_status off_by_one_percent_launch(void*, const jw_artifact_view*,
                                    const jw_arg_value* args, uint32_t num_args,
                                    void*) {
  try {
    jitwarm::reference_cpu::run_kernel(
        kRmsNorm, std::span<const jw_arg_value>(args, num_args));
  } catch (const std::exception& e) {
    return fail(JW_ERROR_INVALID_ARGUMENT, e.what());
  }
  const jw_tensor& out = *args[0].value.tensor;
  int64_t count = 1;
  for (uint32_t d = 0; d < out.meta.rank; ++d) count *= out.meta.shape[d];
  for (int64_t i = 0; i < count; ++i) {
    switch (out.meta.dtype) {
      case JW_DTYPE_FLOAT32: static_cast<float*>(out.data)[i] *= 1.01f; break;
      case JW_DTYPE_FLOAT16: {
        uint16_t& bits = static_cast<uint16_t*>(out.data)[i];
        bits = jitwarm::numeric::float16_bits_from_double(
            jitwarm::numeric::float16_bits_to_double(bits) * 1.01);
        break;
      }
      case JW_DTYPE_BFLOAT16: {
        uint16_t& bits = static_cast<uint16_t*>(out.data)[i];
        bits = jitwarm::numeric::bfloat16_bits_from_double(
            jitwarm::numeric::bfloat16_bits_to_double(bits) * 1.01);
        break;
      }
      default: return fail(JW_ERROR_INVALID_ARGUMENT, "fake: dtype");
    }
  }
  return JW_OK;
}
#endif

#if defined(FAKE_SCHEMA_DTYPE_INVALID_BIT) || \
    defined(FAKE_SCHEMA_DTYPE_HIGH_BITS) ||   \
    defined(FAKE_SCHEMA_DEFAULT_KIND_77) ||   \
    defined(FAKE_SCHEMA_SAME_DTYPE_MISSING)
// The toy schema with one field broken.
jw_kernel_schema malformed_schema(jw_param_desc* params) {
  std::memcpy(params, kScaleParams, sizeof(kScaleParams));
#if defined(FAKE_SCHEMA_DTYPE_INVALID_BIT)
  params[1].allowed_dtypes = 0x1;  // only JW_DTYPE_INVALID
#elif defined(FAKE_SCHEMA_DTYPE_HIGH_BITS)
  params[1].allowed_dtypes = 0xFFFF0000u;  // no dtype has these bits
#elif defined(FAKE_SCHEMA_DEFAULT_KIND_77)
  // As a C plugin could pass it; written as bytes, since even loading a
  // jw_scalar_kind of 77 is undefined in C++ (UBSan).
  const int raw = 77;
  static_assert(sizeof(raw) == sizeof(jw_scalar_kind));
  std::memcpy(&params[4].default_value.kind, &raw, sizeof(raw));
#else
  params[0].same_dtype_as = "no_such_param";
#endif
  jw_kernel_schema schema = kScaleSchema;
  schema.params = params;
  return schema;
}
#endif

jw_status register_all(const jw_host_api* host) {
  g_host = host;
#if defined(FAKE_REGISTER_SEGFAULTS)
  segfault();
#elif defined(FAKE_REGISTER_ABORTS)
  std::abort();
#elif defined(FAKE_REGISTER_EXITS)
  std::exit(3);
#elif defined(FAKE_REGISTER_SPINS)
  spin();
#endif
#if defined(FAKE_REGISTER_ALL_THROWS)
  throw_fault("register_all");
#elif defined(FAKE_THREAD_THEN_REJECTED)
  start_thread_left_running(host);
  return fail(JW_ERROR_UNSUPPORTED,
              "fake: started a thread, then refused to register");
#elif defined(FAKE_REGISTRATION_FAILS)
  return fail(JW_ERROR_UNSUPPORTED,
              "fake: this build refuses to register (requires FakeGPU 9)");
#elif defined(FAKE_DUPLICATE_SCHEMA)
  // The reference plugin defines this kernel already.
  jw_kernel_schema schema = kScaleSchema;
  schema.name = "vllm.model_executor.layers.activation.silu_and_mul";
  return host->define_schema(host->host_ctx, &schema);
#elif defined(FAKE_SCHEMA_DTYPE_INVALID_BIT) || \
    defined(FAKE_SCHEMA_DTYPE_HIGH_BITS) ||     \
    defined(FAKE_SCHEMA_DEFAULT_KIND_77) ||     \
    defined(FAKE_SCHEMA_SAME_DTYPE_MISSING)
  jw_param_desc params[sizeof(kScaleParams) / sizeof(kScaleParams[0])];
  const jw_kernel_schema schema = malformed_schema(params);
  return host->define_schema(host->host_ctx, &schema);
#elif defined(FAKE_OVERRIDE_REFERENCE) || defined(FAKE_WRONG_PARAM_NAMES)
  // A vendor's faster silu_and_mul for the cpu platform: registered over the
  // reference, by name (its parameter names are the schema's)...
#if defined(FAKE_WRONG_PARAM_NAMES)
  // ...or, here, by names the schema does not have ("input" is "x").
  static const char* const names[] = {"out", "input", "T", "H"};
#else
  static const char* const names[] = {"out", "x", "T", "H"};
#endif
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(impl);
  impl.kernel_name = "vllm.model_executor.layers.activation.silu_and_mul";
  impl.platform = "cpu";
  impl.impl_name = "fake-vendor-silu";
  impl.param_names = names;
  impl.num_param_names = 4;
  impl.compile = scale_compile;
  impl.launch = scale_launch;
  return host->register_impl(host->host_ctx, &impl);
#elif defined(FAKE_RMS_NORM_OFF_BY_1_PERCENT)
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(impl);
  impl.kernel_name = kRmsNorm;
  impl.platform = "cpu";
  impl.impl_name = "fake-rms-norm-off-by-1-percent";
  impl.compile = off_by_one_percent_compile;
  impl.launch = off_by_one_percent_launch;
  return host->register_impl(host->host_ctx, &impl);
#else
#if defined(FAKE_THREAD_LEFT_RUNNING)
  start_thread_left_running(host);
#endif
  jw_status s = host->define_schema(host->host_ctx, &kScaleSchema);
  if (s != JW_OK) return s;
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(impl);
  impl.kernel_name = kScaleSchema.name;
  impl.platform = FAKE_PLATFORM_NAME;
  impl.impl_name = "fake-scale";
  impl.compile = scale_compile;
  impl.launch = scale_launch;
  impl.describe = scale_describe;
  impl.fingerprint = scale_fingerprint;
#if defined(FAKE_CALLBACKS_THROW)
  impl.destroy = scale_destroy;
#endif
#if defined(FAKE_BATCHES)
  impl.compile_batch = scale_compile_batch;
  impl.preferred_batch_size = scale_preferred_batch_size;
#endif
  s = host->register_impl(host->host_ctx, &impl);
  if (s != JW_OK) return s;
  jw_platform_desc p{};
  p.struct_size = sizeof(p);
  p.name = FAKE_PLATFORM_NAME;
  p.capabilities = platform_capabilities;
  p.device_count = platform_device_count;
  p.device_target = platform_device_target;
  p.allocate = platform_allocate;
  p.free_memory = platform_free;
  p.copy = platform_copy;
  p.synchronize = platform_synchronize;
  return host->register_platform(host->host_ctx, &p);
#endif
}

#if defined(FAKE_SHUTDOWN_THROWS)
void shutdown() {
  throw_fault("shutdown");
}
constexpr void (*kShutdown)(void) = shutdown;
#else
constexpr void (*kShutdown)(void) = nullptr;
#endif

#if defined(FAKE_MISSING_VENDOR_LIBRARY)
extern "C" int fake_vendor_library_version(void);
int g_vendor = fake_vendor_library_version();
#endif

// Zero first, then the fields this plugin sets: fields appended to the ABI
// later stay zero (and compilers do not warn about missing initializers).
// Unused by the variant without an entry symbol (FAKE_NO_ENTRY_SYMBOL).
[[maybe_unused]] const jw_plugin_api kApi = [] {
  jw_plugin_api api{};
  api.struct_size = sizeof(jw_plugin_api);
  api.name = FAKE_PLUGIN_NAME;
  api.version = "0.0.1";
  api.register_all = register_all;
  api.shutdown = kShutdown;
  return api;
}();

}  // namespace

#if defined(FAKE_NO_ENTRY_SYMBOL)
// Exports something, but not the entry point.
extern "C" JITWARM_EXPORT int jitwarm_plugin_negotiate_typo(void) {
  return 0;
}
#else
extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* n) {
#if defined(FAKE_ABI_TOO_OLD)
  n->plugin_version = 0;  // a plugin from before version 1
  n->plugin = &kApi;
  return JW_OK;
#elif defined(FAKE_ABI_TOO_NEW)
  // Needs a newer core: answers its own minimum and refuses.
  n->plugin_version = n->core_max_version + 1;
  return JW_ERROR_ABI_MISMATCH;
#elif defined(FAKE_NEGOTIATE_THROWS)
  (void)n;
  throw_fault("negotiate");
#elif defined(FAKE_ENTRY_SEGFAULTS)
  (void)n;
  segfault();
  return JW_OK;
#elif defined(FAKE_ENTRY_ABORTS)
  (void)n;
  std::abort();
#elif defined(FAKE_ENTRY_EXITS)
  (void)n;
  std::exit(3);
#elif defined(FAKE_ENTRY_SPINS)
  (void)n;
  spin();
#else
  if (n->core_max_version < 1) return JW_ERROR_ABI_MISMATCH;
  n->plugin_version = 1;
  n->plugin = &kApi;
  return JW_OK;
#endif
}
#endif
