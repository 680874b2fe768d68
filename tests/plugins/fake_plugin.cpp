// One source, many fake plugins: each build defines one FAKE_* macro and
// the loader tests check what the handshake decided for each (the Vulkan
// loader's habit). Without any FAKE_* macro this is a small working plugin
// ("jitwarm-fake-good") with a toy kernel and a host-memory platform,
// used by the runtime tests.
#include <jitwarm/jitwarm.h>

#include <cstring>
#include <string>

// Each variant uses a different subset of the helpers below.
#pragma GCC diagnostic ignored "-Wunused-function"

#ifndef FAKE_PLUGIN_NAME
#define FAKE_PLUGIN_NAME "jitwarm-fake-good"
#endif

namespace {

const jw_host_api* g_host = nullptr;

jw_status fail(jw_status status, const char* message) {
  if (g_host != nullptr) g_host->set_error(g_host->host_ctx, message);
  return status;
}

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
    "jitwarm.test.scale",
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
  if (num_args != 5) {
    return fail(JW_ERROR_INVALID_ARGUMENT, "fake: 5 arguments");
  }
  // The key view must stay valid for every launch of a cached artifact
  // (under ASan a dangling view is a use-after-free here).
  const jw_compile_key_view* key = artifact->key;
  if (key == nullptr || std::strcmp(key->kernel_name, kScaleSchema.name) != 0 ||
      key->num_params != 5 || std::strcmp(key->params[2].name, "n") != 0 ||
      std::strncmp(key->target, "fake:", 5) != 0) {
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
  const std::string text = std::string("fake scale for ") + key->text;
  out->append(out->ctx, text.data(), text.size());
  return JW_OK;
}

jw_status scale_fingerprint(void*, const jw_compile_key_view*,
                            const jw_text_sink* out) {
  const char* text = "fake-scale-v1";
  out->append(out->ctx, text, std::strlen(text));
  return JW_OK;
}

// --- the host-memory platform "fake" ----------------------------------------
jw_status platform_capabilities(void*, uint32_t* flags, const jw_text_sink*) {
  *flags = JW_PLATFORM_CAN_COMPILE | JW_PLATFORM_CAN_LAUNCH;
  return JW_OK;
}
jw_status platform_device_count(void*, int32_t* count) {
  *count = 1;
  return JW_OK;
}
jw_status platform_device_target(void*, int32_t device,
                                 const jw_text_sink* out) {
  if (device != 0) return fail(JW_ERROR_NO_DEVICE, "fake: only device 0");
  out->append(out->ctx, "fake:toy1", 9);
  return JW_OK;
}
jw_status platform_allocate(void*, int32_t, size_t bytes, void** out) {
  *out = ::operator new(bytes == 0 ? 1 : bytes);
  return JW_OK;
}
jw_status platform_free(void*, int32_t, void* ptr) {
  ::operator delete(ptr);
  return JW_OK;
}
jw_status platform_copy(void*, int32_t, void* dst, const void* src,
                        size_t bytes, jw_copy_direction, void*) {
  std::memmove(dst, src, bytes);
  return JW_OK;
}
jw_status platform_synchronize(void*, int32_t, void*) {
  return JW_OK;
}

jw_status register_all(const jw_host_api* host) {
  g_host = host;
#if defined(FAKE_REGISTRATION_FAILS)
  return fail(JW_ERROR_UNSUPPORTED,
              "fake: this build refuses to register (requires FakeGPU 9)");
#elif defined(FAKE_DUPLICATE_SCHEMA)
  // The reference plugin defines this kernel already.
  jw_kernel_schema schema = kScaleSchema;
  schema.name = "vllm.model_executor.layers.activation.silu_and_mul";
  return host->define_schema(host->host_ctx, &schema);
#elif defined(FAKE_OVERRIDE_REFERENCE)
  // A vendor's faster silu_and_mul for the cpu platform: registered over the
  // reference, by name (its parameter names are the schema's).
  static const char* const names[] = {"out", "x", "T", "H"};
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
#else
  jw_status s = host->define_schema(host->host_ctx, &kScaleSchema);
  if (s != JW_OK) return s;
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(impl);
  impl.kernel_name = kScaleSchema.name;
  impl.platform = "fake";
  impl.impl_name = "fake-scale";
  impl.compile = scale_compile;
  impl.launch = scale_launch;
  impl.describe = scale_describe;
  impl.fingerprint = scale_fingerprint;
  s = host->register_impl(host->host_ctx, &impl);
  if (s != JW_OK) return s;
  jw_platform_desc p{};
  p.struct_size = sizeof(p);
  p.name = "fake";
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

#if defined(FAKE_MISSING_VENDOR_LIBRARY)
extern "C" int fake_vendor_library_version(void);
int g_vendor = fake_vendor_library_version();
#endif

const jw_plugin_api kApi = {sizeof(jw_plugin_api), nullptr,
                            FAKE_PLUGIN_NAME,      "0.0.1",
                            register_all,          nullptr};

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
#else
  if (n->core_max_version < 1) return JW_ERROR_ABI_MISMATCH;
  n->plugin_version = 1;
  n->plugin = &kApi;
  return JW_OK;
#endif
}
#endif
