/* c_api_scenarios.c — the host half of jitwarm.h, called from C: options,
 * reports, platforms, compile keys, specialization, warmup, seal and the JIT
 * monitor, counters. Compiled as C so the header is proven to be C. Each
 * scenario returns NULL when it passes, or what failed (file:line, the
 * condition and jw_last_error()); test_c_api.cpp runs each as a test case.
 *
 * The runtime loads the bundled plugins (JITWARM_PLUGIN_PATH, set by the
 * test environment), so the CPU reference is there, and the CUDA plugin when
 * it was built. */
#define _XOPEN_SOURCE 700
#include <jitwarm/jitwarm.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SILU "vllm.model_executor.layers.activation.silu_and_mul"

static char failure[2048];

#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      snprintf(failure, sizeof failure, "%s:%d: %s (last error: %s)", \
               __FILE__, __LINE__, #cond, jw_last_error());           \
      goto done;                                                      \
    }                                                                 \
  } while (0)

#define PASSED() (failure[0] = '\0')
#define RESULT() (failure[0] != '\0' ? (const char*)failure : NULL)

static int contains(const char* text, const char* part) {
  return text != NULL && strstr(text, part) != NULL;
}

/* A runtime with the bundled plugins; NULL (and `failure` set) on error. */
static jw_runtime* loaded_runtime(const jw_runtime_options* options) {
  jw_runtime* rt = NULL;
  if (jw_runtime_create_with_options(options, &rt) != JW_OK ||
      jw_runtime_load_plugins(rt, NULL, 0) != JW_OK) {
    snprintf(failure, sizeof failure, "cannot make a runtime: %s",
             jw_last_error());
    jw_runtime_destroy(rt);
    return NULL;
  }
  return rt;
}

/* Warms `m` on `rt` for `target`; 0 (and `failure` set) on error. */
static int warm_for(jw_runtime* rt, const jw_warmup_manifest* m,
                    const char* target) {
  jw_warmup_options w;
  memset(&w, 0, sizeof w);
  w.struct_size = sizeof w;
  w.target = target;
  if (jw_runtime_warmup(rt, m, &w, NULL) != JW_OK) {
    snprintf(failure, sizeof failure, "warmup for %s: %s", target,
             jw_last_error());
    return 0;
  }
  return 1;
}

static jw_warmup_manifest* parse(const char* text) {
  jw_warmup_manifest* m = NULL;
  if (jw_warmup_manifest_parse(text, strlen(text), "test.toml", &m) != JW_OK) {
    snprintf(failure, sizeof failure, "manifest: %s", jw_last_error());
    return NULL;
  }
  return m;
}

static uint64_t compiles_of(jw_runtime* rt) {
  jw_runtime_counters c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  if (jw_runtime_get_counters(rt, &c) != JW_OK) return UINT64_MAX;
  return c.compiles;
}

/* silu_and_mul's four arguments on host memory: out [T, H], x [T, 2H]. */
/* 16-byte aligned data, as warmup assumes by default. */
typedef struct silu_args {
  _Alignas(16) float out[2 * 17];
  _Alignas(16) float x[2 * 2 * 17];
  jw_tensor out_t, x_t;
  jw_arg_value args[4];
} silu_args;

static void make_silu_args(silu_args* s, int64_t H) {
  const int64_t T = 2;
  memset(s, 0, sizeof *s);
  for (int i = 0; i < 2 * 2 * 17; ++i) s->x[i] = (float)(i % 7) - 3.0f;
  jw_tensor* ts[2] = {&s->out_t, &s->x_t};
  void* data[2] = {s->out, s->x};
  const int64_t cols[2] = {H, 2 * H};
  for (int i = 0; i < 2; ++i) {
    ts[i]->struct_size = sizeof(jw_tensor);
    ts[i]->meta.struct_size = sizeof(jw_tensor_meta);
    ts[i]->meta.dtype = JW_DTYPE_FLOAT32;
    ts[i]->meta.rank = 2;
    ts[i]->meta.shape[0] = T;
    ts[i]->meta.shape[1] = cols[i];
    ts[i]->data = data[i];
    ts[i]->device_index = -1;
    s->args[i].struct_size = sizeof(jw_arg_value);
    s->args[i].kind = JW_VALUE_TENSOR;
    s->args[i].value.tensor = ts[i];
  }
  for (int i = 2; i < 4; ++i) {
    s->args[i].struct_size = sizeof(jw_arg_value);
    s->args[i].kind = JW_VALUE_SCALAR;
    s->args[i].value.scalar.kind = JW_SCALAR_INT;
  }
  s->args[2].value.scalar.value.i = T;
  s->args[3].value.scalar.value.i = H;
}

/* ------------------------------------------------------------------------ */

/* The monitor's lines (loading the GPU plugins may log others). */
typedef struct log_capture {
  int lines;
  char last[512];
} log_capture;

static void capture_log(void* ctx, jw_log_level level, const char* message) {
  log_capture* c = (log_capture*)ctx;
  if (level != JW_LOG_WARNING || !contains(message, "JIT monitor")) return;
  ++c->lines;
  snprintf(c->last, sizeof c->last, "%s", message);
}

const char* scenario_options_and_monitor(void) {
  jw_runtime* rt = NULL;
  jw_kernel_handle* k = NULL;
  char record[] = "/tmp/jitwarm-capi-record-XXXXXX";
  int fd = mkstemp(record);
  log_capture log = {0, ""};
  silu_args s;
  PASSED();
  EXPECT(fd >= 0);
  close(fd);
  /* The logger reads its level when the runtime is made. */
  setenv("JITWARM_LOG_LEVEL", "warning", 1);
  jw_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.jit_monitor = JW_JIT_MONITOR_WARN;
  o.jit_record_path = record;
  o.log = capture_log;
  o.log_ctx = &log;
  rt = loaded_runtime(&o);
  setenv("JITWARM_LOG_LEVEL", "error", 1);
  EXPECT(rt != NULL);

  jw_jit_monitor_mode mode = JW_JIT_MONITOR_DEFAULT;
  EXPECT(jw_runtime_get_jit_monitor(rt, &mode) == JW_OK);
  EXPECT(mode == JW_JIT_MONITOR_WARN);
  int32_t sealed = -1;
  EXPECT(jw_runtime_is_sealed(rt, &sealed) == JW_OK && sealed == 0);
  EXPECT(jw_runtime_seal(rt) == JW_OK);
  EXPECT(jw_runtime_is_sealed(rt, &sealed) == JW_OK && sealed == 1);

  /* warn: a launch that compiles after seal compiles and logs its key once. */
  EXPECT(jw_kernel_find(rt, SILU, &k) == JW_OK);
  make_silu_args(&s, 16);
  const uint64_t before = compiles_of(rt);
  EXPECT(jw_kernel_launch(k, "cpu", 0, s.args, 4, NULL) == JW_OK);
  EXPECT(compiles_of(rt) == before + 1);
  EXPECT(log.lines == 1);
  EXPECT(contains(log.last, "silu_and_mul[cpu:"));
  EXPECT(jw_kernel_launch(k, "cpu", 0, s.args, 4, NULL) == JW_OK);
  EXPECT(log.lines == 1);

  /* error: a new key is refused, nothing is compiled. */
  EXPECT(jw_runtime_set_jit_monitor(rt, JW_JIT_MONITOR_ERROR) == JW_OK);
  EXPECT(jw_runtime_get_jit_monitor(rt, &mode) == JW_OK);
  EXPECT(mode == JW_JIT_MONITOR_ERROR);
  make_silu_args(&s, 17);
  EXPECT(jw_kernel_launch(k, "cpu", 0, s.args, 4, NULL) ==
         JW_ERROR_JIT_REFUSED);
  EXPECT(contains(jw_last_error(), "refusing to compile"));
  EXPECT(compiles_of(rt) == before + 1);

  /* off: it compiles. Record mode wrote both post-seal keys. */
  EXPECT(jw_runtime_set_jit_monitor(rt, JW_JIT_MONITOR_OFF) == JW_OK);
  EXPECT(jw_kernel_launch(k, "cpu", 0, s.args, 4, NULL) == JW_OK);
  EXPECT(compiles_of(rt) == before + 2);
  jw_warmup_manifest* recorded = NULL;
  EXPECT(jw_warmup_manifest_load(record, &recorded) == JW_OK);
  jw_compile_key_list* plan = NULL;
  jw_warmup_options on_cpu;
  memset(&on_cpu, 0, sizeof on_cpu);
  on_cpu.struct_size = sizeof on_cpu;
  on_cpu.platform = "cpu";
  EXPECT(jw_runtime_warmup_plan(rt, recorded, &on_cpu, &plan) == JW_OK);
  EXPECT(plan->count == 2);
  jw_compile_key_list_free(plan);
  jw_warmup_manifest_free(recorded);

  /* Recording stops with a NULL path. */
  EXPECT(jw_runtime_set_jit_record_path(rt, NULL) == JW_OK);

  /* Bad modes and bad structs are refused, not guessed. */
  EXPECT(jw_runtime_set_jit_monitor(rt, JW_JIT_MONITOR_DEFAULT) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(jw_runtime_set_jit_monitor(rt, (jw_jit_monitor_mode)7) ==
         JW_ERROR_INVALID_ARGUMENT);
  jw_runtime* bad = NULL;
  o.jit_monitor = (jw_jit_monitor_mode)9;
  EXPECT(jw_runtime_create_with_options(&o, &bad) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "unknown JIT monitor mode 9"));
  o.struct_size = 4;
  EXPECT(jw_runtime_create_with_options(&o, &bad) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "struct_size 4 is too small"));
  EXPECT(bad == NULL);
  /* An older caller's shorter options: the fields it lacks read as zero. */
  o.struct_size = (uint32_t)offsetof(jw_runtime_options, jit_record_path);
  o.jit_monitor = JW_JIT_MONITOR_ERROR;
  EXPECT(jw_runtime_create_with_options(&o, &bad) == JW_OK);
  EXPECT(jw_runtime_get_jit_monitor(bad, &mode) == JW_OK);
  EXPECT(mode == JW_JIT_MONITOR_ERROR);
  jw_runtime_destroy(bad);
done:
  jw_kernel_release(k);
  jw_runtime_destroy(rt);
  unlink(record);
  return RESULT();
}

const char* scenario_reports_and_platforms(void) {
  jw_runtime* rt = NULL;
  char* text = NULL;
  jw_string_list* names = NULL;
  jw_platform_list* platforms = NULL;
  PASSED();
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);

  EXPECT(jw_runtime_load_report(rt, JW_FORMAT_TEXT, &text) == JW_OK);
  EXPECT(contains(text, "loaded    ") &&
         contains(text, "libjitwarm-reference-cpu.so") &&
         contains(text, "searched "));
  jw_string_free(text);
  text = NULL;
  EXPECT(jw_runtime_load_report(rt, JW_FORMAT_JSON, &text) == JW_OK);
  EXPECT(contains(text, "\"searched\"") &&
         contains(text, "\"status\": \"loaded\""));
  jw_string_free(text);
  text = NULL;
  EXPECT(jw_runtime_load_report(rt, (jw_text_format)5, &text) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(text == NULL);

  EXPECT(jw_runtime_kernel_names(rt, &names) == JW_OK);
  EXPECT(names->struct_size == sizeof(jw_string_list));
  EXPECT(names->count == 10);
  int found = 0;
  for (uint32_t i = 0; i < names->count; ++i) {
    if (strcmp(names->items[i], SILU) == 0) found = 1;
    if (i > 0) EXPECT(strcmp(names->items[i - 1], names->items[i]) < 0);
  }
  EXPECT(found);

  EXPECT(jw_runtime_explain(rt, SILU, JW_FORMAT_TEXT, &text) == JW_OK);
  EXPECT(contains(text, "cpu: 'reference-cpu'"));
  jw_string_free(text);
  text = NULL;
  EXPECT(jw_runtime_explain(rt, SILU, JW_FORMAT_JSON, &text) == JW_OK);
  EXPECT(contains(text, "\"platform\": \"cpu\"") &&
         contains(text, "\"implementation\": \"reference-cpu\"") &&
         contains(text, "\"replaces\": []"));
  jw_string_free(text);
  text = NULL;
  EXPECT(jw_runtime_explain(rt, "vllm.nope", JW_FORMAT_TEXT, &text) ==
         JW_ERROR_NOT_FOUND);

  EXPECT(jw_runtime_platforms(rt, &platforms) == JW_OK);
  const jw_platform_info* cpu = NULL;
  int launchable = 0;
  for (uint32_t i = 0; i < platforms->count; ++i) {
    const jw_platform_info* p = platforms->items[i];
    EXPECT(p->struct_size == sizeof(jw_platform_info));
    if (strcmp(p->name, "cpu") == 0) cpu = p;
    if (p->can_launch && p->device_count > 0) ++launchable;
  }
  EXPECT(cpu != NULL && cpu->can_compile && cpu->can_launch &&
         cpu->device_count == 1 && contains(cpu->origin, "reference-cpu"));

  /* The default platform is one that can launch (cuda on a GPU machine). */
  EXPECT(jw_runtime_default_platform(rt, &text) == JW_OK);
  int is_launchable = 0;
  for (uint32_t i = 0; i < platforms->count; ++i) {
    const jw_platform_info* p = platforms->items[i];
    if (strcmp(p->name, text) == 0 && p->can_launch) is_launchable = 1;
  }
  EXPECT(is_launchable && launchable >= 1);
  jw_string_free(text);
  text = NULL;
  EXPECT(jw_runtime_target_for(rt, "cpu", 0, &text) == JW_OK);
  EXPECT(strncmp(text, "cpu:", 4) == 0);
  jw_string_free(text);
  text = NULL;
  EXPECT(jw_runtime_target_for(rt, "nope", 0, &text) == JW_ERROR_NOT_FOUND);
done:
  jw_string_free(text);
  jw_string_list_free(names);
  jw_platform_list_free(platforms);
  jw_runtime_destroy(rt);
  return RESULT();
}

const char* scenario_keys(void) {
  jw_runtime* rt = NULL;
  jw_kernel_handle* k = NULL;
  jw_compile_key *key = NULL, *launch_key = NULL, *decoded = NULL;
  PASSED();
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);
  EXPECT(jw_kernel_find(rt, SILU, &k) == JW_OK);

  /* Warmup tensors (metadata, no storage) give the key a launch would use. */
  jw_tensor_meta out_m, x_m;
  memset(&out_m, 0, sizeof out_m);
  out_m.struct_size = sizeof out_m;
  out_m.dtype = JW_DTYPE_FLOAT32;
  out_m.rank = 2;
  out_m.flags = JW_TENSOR_ALIGNED_16;
  out_m.shape[0] = 2;
  out_m.shape[1] = 16;
  x_m = out_m;
  x_m.shape[1] = 32;
  silu_args s;
  make_silu_args(&s, 16);
  jw_arg_value warm[4];
  memcpy(warm, s.args, sizeof warm);
  warm[0].kind = JW_VALUE_WARMUP_TENSOR;
  warm[0].value.meta = &out_m;
  warm[1].kind = JW_VALUE_WARMUP_TENSOR;
  warm[1].value.meta = &x_m;
  EXPECT(jw_kernel_key_for(k, "cpu", 0, warm, 4, &key) == JW_OK);
  jw_compile_key_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT(jw_compile_key_get_info(key, &info) == JW_OK);
  EXPECT(info.struct_size == sizeof info);
  EXPECT(strncmp(info.text, "silu_and_mul[cpu:", 17) == 0);
  EXPECT(contains(info.text, "H:i32:D"));
  EXPECT(strcmp(info.kernel_name, SILU) == 0);
  EXPECT(strcmp(info.impl_name, "reference-cpu") == 0);
  EXPECT(strncmp(info.target, "cpu:", 4) == 0);
  EXPECT(info.encoding_size > 0 && (info.hash_lo | info.hash_hi) != 0);

  /* The real tensors (host memory, 16-byte aligned arrays or not) give the
   * same key when their data is aligned; is_cached follows the launch. */
  EXPECT(jw_kernel_key_for(k, "cpu", 0, s.args, 4, &launch_key) == JW_OK);
  jw_compile_key_info launch_info;
  memset(&launch_info, 0, sizeof launch_info);
  launch_info.struct_size = sizeof launch_info;
  EXPECT(jw_compile_key_get_info(launch_key, &launch_info) == JW_OK);
  const int aligned =
      ((uintptr_t)s.out % 16 == 0) && ((uintptr_t)s.x % 16 == 0);
  EXPECT(!aligned || (launch_info.hash_lo == info.hash_lo &&
                      launch_info.hash_hi == info.hash_hi));
  int32_t cached = -1;
  EXPECT(jw_runtime_is_cached(rt, launch_key, &cached) == JW_OK && cached == 0);
  EXPECT(jw_kernel_launch(k, "cpu", 0, s.args, 4, NULL) == JW_OK);
  EXPECT(jw_runtime_is_cached(rt, launch_key, &cached) == JW_OK && cached == 1);
  /* A key in memory would hit; explain_miss says so, and checks its
   * arguments. */
  char* why = NULL;
  EXPECT(jw_runtime_explain_miss(rt, launch_key, &why) == JW_OK);
  EXPECT(contains(why, "would hit"));
  jw_string_free(why);
  EXPECT(jw_runtime_explain_miss(rt, NULL, &why) == JW_ERROR_INVALID_ARGUMENT);

  /* The encoding decodes to the same key. */
  EXPECT(jw_compile_key_decode(info.encoding, info.encoding_size, &decoded) ==
         JW_OK);
  jw_compile_key_info decoded_info;
  memset(&decoded_info, 0, sizeof decoded_info);
  decoded_info.struct_size = sizeof decoded_info;
  EXPECT(jw_compile_key_get_info(decoded, &decoded_info) == JW_OK);
  EXPECT(decoded_info.hash_lo == info.hash_lo &&
         decoded_info.hash_hi == info.hash_hi &&
         strcmp(decoded_info.text, info.text) == 0);
  jw_compile_key* garbage = NULL;
  EXPECT(jw_compile_key_decode("nonsense", 8, &garbage) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(jw_compile_key_decode(info.encoding, info.encoding_size - 1,
                               &garbage) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(garbage == NULL);

  /* An older caller's shorter info struct: only its fields are written. */
  struct {
    jw_compile_key_info head;
    char canary[64];
  } old;
  memset(&old, 0x5a, sizeof old);
  old.head.struct_size = (uint32_t)offsetof(jw_compile_key_info, kernel_name);
  EXPECT(jw_compile_key_get_info(key, &old.head) == JW_OK);
  EXPECT(old.head.struct_size == offsetof(jw_compile_key_info, kernel_name));
  EXPECT(strcmp(old.head.text, info.text) == 0);
  EXPECT((unsigned char)((char*)&old.head)[offsetof(jw_compile_key_info,
                                                    kernel_name)] == 0x5a);
  old.head.struct_size = 2;
  EXPECT(jw_compile_key_get_info(key, &old.head) == JW_ERROR_INVALID_ARGUMENT);

  /* A launch's mistakes are key_for's too. */
  jw_compile_key* bad = NULL;
  EXPECT(jw_kernel_key_for(k, "cpu", 0, warm, 1, &bad) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(jw_kernel_key_for(k, "vendorx", 0, warm, 4, &bad) ==
         JW_ERROR_NOT_FOUND);
  EXPECT(bad == NULL);
done:
  jw_compile_key_free(key);
  jw_compile_key_free(launch_key);
  jw_compile_key_free(decoded);
  jw_kernel_release(k);
  jw_runtime_destroy(rt);
  return RESULT();
}

const char* scenario_specialization(void) {
  jw_int_spec spec;
  jw_scalar v;
  PASSED();
  v.kind = JW_SCALAR_INT;
  v.value.i = 1;
  EXPECT(jw_specialize_integer(v, 0, &spec) == JW_OK);
  EXPECT(spec.type == JW_INT_I32 && spec.value_class == JW_INT_CLASS_ONE);
  EXPECT(jw_specialize_integer(v, 1, &spec) == JW_OK);
  EXPECT(spec.type == JW_INT_I32 && spec.value_class == JW_INT_CLASS_NONE);
  v.value.i = 0;
  EXPECT(jw_specialize_integer(v, 0, &spec) == JW_OK);
  EXPECT(spec.value_class == JW_INT_CLASS_DIV16);
  v.value.i = 2147483647;
  EXPECT(jw_specialize_integer(v, 0, &spec) == JW_OK);
  EXPECT(spec.type == JW_INT_I32 && spec.value_class == JW_INT_CLASS_NONE);
  v.value.i = -2147483647LL - 2;
  EXPECT(jw_specialize_integer(v, 0, &spec) == JW_OK);
  EXPECT(spec.type == JW_INT_I64);
  v.kind = JW_SCALAR_UINT;
  v.value.u = UINT64_MAX;
  EXPECT(jw_specialize_integer(v, 0, &spec) == JW_OK);
  EXPECT(spec.type == JW_INT_U64 && spec.value_class == JW_INT_CLASS_NONE);
  v.kind = JW_SCALAR_FLOAT;
  v.value.f = 1.0;
  EXPECT(jw_specialize_integer(v, 0, &spec) == JW_ERROR_INVALID_ARGUMENT);

  jw_int_spec u64_none = {JW_INT_U64, JW_INT_CLASS_NONE};
  EXPECT(jw_scalar_specialization_rep(u64_none, &v) == JW_OK);
  EXPECT(v.kind == JW_SCALAR_UINT && v.value.u == (1ull << 63) + 1);
  jw_int_spec i64_div = {JW_INT_I64, JW_INT_CLASS_DIV16};
  EXPECT(jw_scalar_specialization_rep(i64_div, &v) == JW_OK);
  EXPECT(v.kind == JW_SCALAR_INT && v.value.i == (1ll << 31));
  jw_int_spec i32_div = {JW_INT_I32, JW_INT_CLASS_DIV16};
  EXPECT(jw_scalar_specialization_rep(i32_div, &v) == JW_OK);
  EXPECT(v.kind == JW_SCALAR_INT && v.value.i == 16);
  /* A representative specializes back to its class. */
  EXPECT(jw_specialize_integer(v, 0, &spec) == JW_OK);
  EXPECT(spec.type == i32_div.type && spec.value_class == i32_div.value_class);
  jw_int_spec bad = {(jw_int_type)9, JW_INT_CLASS_NONE};
  EXPECT(jw_scalar_specialization_rep(bad, &v) == JW_ERROR_INVALID_ARGUMENT);
  bad.type = JW_INT_I32;
  bad.value_class = (jw_int_class)4;
  EXPECT(jw_scalar_specialization_rep(bad, &v) == JW_ERROR_INVALID_ARGUMENT);
done:
  return RESULT();
}

typedef struct progress_log {
  uint64_t calls, last_done, total;
  int ordered;
} progress_log;

static void on_progress(void* ctx, uint64_t done, uint64_t total,
                        const char* key_text) {
  progress_log* p = (progress_log*)ctx;
  if (done != p->last_done + 1 || !contains(key_text, "silu_and_mul["))
    p->ordered = 0;
  ++p->calls;
  p->last_done = done;
  p->total = total;
}

static const char kSiluManifest[] =
    "version = 1\n"
    "[[kernel]]\n"
    "name = \"" SILU
    "\"\n"
    "[kernel.params]\n"
    "x = { dtype = [\"float32\", \"float16\"] }\n"
    "H = [16, 17]\n";

const char* scenario_warmup(void) {
  jw_runtime* rt = NULL;
  jw_warmup_manifest *m = NULL, *from_file = NULL;
  jw_warmup_result* result = NULL;
  jw_compile_key_list* plan = NULL;
  jw_kernel_handle* k = NULL;
  char path[] = "/tmp/jitwarm-capi-manifest-XXXXXX";
  int fd = -1;
  PASSED();
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);
  m = parse(kSiluManifest);
  EXPECT(m != NULL);

  jw_warmup_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.platform = "cpu";
  progress_log progress = {0, 0, 0, 1};
  o.progress = on_progress;
  o.progress_ctx = &progress;
  EXPECT(jw_runtime_warmup_plan(rt, m, &o, &plan) == JW_OK);
  EXPECT(plan->count == 4);

  const uint64_t before = compiles_of(rt);
  EXPECT(jw_runtime_warmup(rt, m, &o, &result) == JW_OK);
  EXPECT(result->struct_size == sizeof(jw_warmup_result));
  EXPECT(result->num_keys == 4 && result->compiled == 4 &&
         result->cached == 0 && result->failed == 0);
  EXPECT(compiles_of(rt) == before + 4);
  EXPECT(progress.calls == 4 && progress.total == 4 && progress.ordered);
  for (uint64_t i = 0; i < result->num_keys; ++i) {
    const jw_warmup_key_result* r = result->keys[i];
    jw_compile_key_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT(jw_compile_key_get_info(plan->keys[i], &info) == JW_OK);
    /* The plan is the warmup's order, key for key. */
    EXPECT(strcmp(r->key_text, info.text) == 0 && r->hash_lo == info.hash_lo &&
           r->compiled == 1 && r->failed == 0 && r->error[0] == '\0');
    int32_t cached = 0;
    EXPECT(jw_runtime_is_cached(rt, plan->keys[i], &cached) == JW_OK && cached);
  }
  jw_warmup_result_free(result);
  result = NULL;

  /* A warmed key's first launch compiles nothing. */
  EXPECT(jw_kernel_find(rt, SILU, &k) == JW_OK);
  silu_args s;
  make_silu_args(&s, 17);
  EXPECT(jw_kernel_launch(k, "cpu", 0, s.args, 4, NULL) == JW_OK);
  EXPECT(compiles_of(rt) == before + 4);
  /* out[0][1] = silu(x[0][1]) * x[0][17 + 1] = silu(-2) * 1 = -0.2384 */
  EXPECT(s.out[1] < -0.238f && s.out[1] > -0.239f);

  /* Again, from a file, with no result wanted: everything is cached. */
  fd = mkstemp(path);
  EXPECT(fd >= 0);
  EXPECT(write(fd, kSiluManifest, sizeof kSiluManifest - 1) ==
         (ssize_t)(sizeof kSiluManifest - 1));
  close(fd);
  fd = -1;
  EXPECT(jw_warmup_manifest_load(path, &from_file) == JW_OK);
  o.progress = NULL;
  EXPECT(jw_runtime_warmup(rt, from_file, &o, NULL) == JW_OK);
  EXPECT(jw_runtime_warmup(rt, from_file, &o, &result) == JW_OK);
  EXPECT(result->cached == 4 && result->compiled == 0);
  EXPECT(compiles_of(rt) == before + 4);
  jw_warmup_result_free(result);
  result = NULL;

  /* Exact keys: the plan's, through warmup_keys. */
  EXPECT(jw_runtime_warmup_keys(rt, (const jw_compile_key* const*)plan->keys,
                                plan->count, NULL, &result) == JW_OK);
  EXPECT(result->num_keys == 4 && result->cached == 4);
  jw_warmup_result_free(result);
  result = NULL;
  const jw_compile_key* null_key = NULL;
  EXPECT(jw_runtime_warmup_keys(rt, &null_key, 1, NULL, NULL) ==
         JW_ERROR_INVALID_ARGUMENT);

  /* Manifest mistakes. */
  jw_warmup_manifest* bad = NULL;
  EXPECT(jw_warmup_manifest_load("/nonexistent/warm.toml", &bad) ==
         JW_ERROR_IO);
  const char broken[] = "version = 1\n[[kernel]]\nname = 5\n";
  EXPECT(jw_warmup_manifest_parse(broken, strlen(broken), "broken.toml",
                                  &bad) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "broken.toml"));
  EXPECT(bad == NULL);
  jw_warmup_options too_small = o;
  too_small.struct_size = 3;
  EXPECT(jw_runtime_warmup(rt, m, &too_small, NULL) ==
         JW_ERROR_INVALID_ARGUMENT);
done:
  if (fd >= 0) close(fd);
  unlink(path);
  jw_kernel_release(k);
  jw_warmup_result_free(result);
  jw_compile_key_list_free(plan);
  jw_warmup_manifest_free(m);
  jw_warmup_manifest_free(from_file);
  jw_runtime_destroy(rt);
  return RESULT();
}

/* Keys that fail to compile: the status says so, and the result still
 * comes back with every key's outcome. */
const char* scenario_warmup_failures(void) {
  jw_runtime* rt = NULL;
  jw_warmup_manifest* m = NULL;
  jw_warmup_result* result = NULL;
  PASSED();
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);
  /* batch_memcpy refuses BLOCK_SIZE = 0 when it compiles. */
  m = parse(
      "version = 1\n[[kernel]]\n"
      "name = \"vllm.v1.worker.mamba_utils.batch_memcpy\"\n"
      "[kernel.params]\nBLOCK_SIZE = [0, 256]\n");
  EXPECT(m != NULL);
  jw_warmup_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.platform = "cpu";
  EXPECT(jw_runtime_warmup(rt, m, &o, &result) == JW_ERROR_COMPILE_FAILED);
  EXPECT(contains(jw_last_error(), "1 of 2 keys failed"));
  EXPECT(result != NULL && result->num_keys == 2 && result->failed == 1 &&
         result->compiled == 1);
  EXPECT(result->keys[0]->failed && result->keys[0]->error[0] != '\0');
  EXPECT(!result->keys[1]->failed && result->keys[1]->compiled);
done:
  jw_warmup_result_free(result);
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
  return RESULT();
}

/* Compile-only warmup for a GPU target on a machine without the GPU. */
const char* scenario_cuda_compile_only_warmup(void) {
  jw_runtime* rt = NULL;
  jw_warmup_manifest* m = NULL;
  jw_warmup_result* result = NULL;
  PASSED();
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);
  m = parse(
      "version = 1\n[[kernel]]\n"
      "name = \"" SILU
      "\"\n"
      "[kernel.params]\nx = { dtype = [\"bfloat16\"] }\nH = [4096]\n");
  EXPECT(m != NULL);
  jw_warmup_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.target = "cuda:sm_90";
  EXPECT(jw_runtime_warmup(rt, m, &o, &result) == JW_OK);
  EXPECT(result->num_keys == 1 && result->compiled == 1);
  EXPECT(contains(result->keys[0]->key_text, "[cuda:sm_90]"));
done:
  jw_warmup_result_free(result);
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
  return RESULT();
}

/* Several keys in batches, in worker processes, and a bad parallel mode. */
const char* scenario_parallel_batched_warmup(void) {
  jw_runtime* rt = NULL;
  jw_warmup_manifest* m = NULL;
  jw_warmup_result* result = NULL;
  PASSED();
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);
  m = parse(
      "version = 1\n[[kernel]]\n"
      "name = \"" SILU
      "\"\n"
      "[kernel.params]\nx = { dtype = [\"bfloat16\", \"float32\"] }\n"
      "H = [1, 4096, 4097]\n");
  EXPECT(m != NULL);
  jw_warmup_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.target = "cuda:sm_90";
  o.jobs = 2;
  o.batch_size = 3;
  o.parallel = JW_WARMUP_PROCESSES;
  EXPECT(jw_runtime_warmup(rt, m, &o, &result) == JW_OK);
  EXPECT(result->num_keys == 6 && result->compiled == 6 && result->failed == 0);
  jw_warmup_result_free(result);
  result = NULL;
  /* Warmed into this process's cache: a second warmup compiles nothing. */
  o.parallel = JW_WARMUP_THREADS;
  EXPECT(jw_runtime_warmup(rt, m, &o, &result) == JW_OK);
  EXPECT(result->num_keys == 6 && result->compiled == 0);
  o.parallel = 7;
  EXPECT(jw_runtime_warmup(rt, m, &o, NULL) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "JW_WARMUP_PROCESSES"));
done:
  jw_warmup_result_free(result);
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
  return RESULT();
}

static int remove_entry(const char* path, const struct stat* st, int flag,
                        struct FTW* ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

const char* scenario_counters(void) {
  jw_runtime *rt = NULL, *cached = NULL;
  jw_warmup_manifest* m = NULL;
  char cache_dir[] = "/tmp/jitwarm-capi-cache-XXXXXX";
  const int have_dir = mkdtemp(cache_dir) != NULL;
  PASSED();
  EXPECT(have_dir);
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);
  m = parse(kSiluManifest);
  EXPECT(m != NULL);
  jw_warmup_options opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.platform = "cpu";
  EXPECT(jw_runtime_warmup(rt, m, &opts, NULL) == JW_OK);

  jw_runtime_counters c;
  memset(&c, 0xff, sizeof c);
  c.struct_size = sizeof c;
  c.next = NULL;
  EXPECT(jw_runtime_get_counters(rt, &c) == JW_OK);
  EXPECT(c.struct_size == sizeof c);
  EXPECT(c.compiles == 4 && c.cache_entries == 4 && c.cache_misses == 4);
  EXPECT(c.disk_hits == 0 && c.disk_writes == 0 && c.disk_rejects == 0);
  EXPECT(c.compile_seconds >= 0.0);

  /* A caller built before compile_seconds existed gets what it knows. */
  memset(&c, 0xff, sizeof c);
  c.struct_size = (uint32_t)offsetof(jw_runtime_counters, compile_seconds);
  EXPECT(jw_runtime_get_counters(rt, &c) == JW_OK);
  EXPECT(c.struct_size == offsetof(jw_runtime_counters, compile_seconds));
  EXPECT(c.compiles == 4);
  EXPECT(c.cache_entries == UINT64_MAX);
  EXPECT(jw_runtime_get_counters(rt, NULL) == JW_ERROR_INVALID_ARGUMENT);

  /* The same counts in Prometheus' text format, owned by the caller. */
  char* metrics = NULL;
  EXPECT(jw_runtime_metrics(rt, &metrics) == JW_OK);
  EXPECT(metrics != NULL);
  EXPECT(strstr(metrics, "# TYPE jitwarm_compiles_total counter\n") != NULL);
  EXPECT(strstr(metrics, "jitwarm_cache_misses_total{tier=\"memory\"} 4\n") !=
         NULL);
  EXPECT(strstr(metrics, "phase=\"before_seal\"} ") != NULL);
  EXPECT(strstr(metrics, "jitwarm_sealed 0\n") != NULL);
  jw_string_free(metrics);
  EXPECT(jw_runtime_metrics(rt, NULL) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(jw_runtime_metrics(NULL, &metrics) == JW_ERROR_INVALID_ARGUMENT);

  /* With a cache directory, the warmup writes entries a second runtime reads.
   */
  jw_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cache_dir = cache_dir;
  for (int round = 0; round < 2; ++round) {
    cached = loaded_runtime(&o);
    EXPECT(cached != NULL);
    EXPECT(jw_runtime_warmup(cached, m, &opts, NULL) == JW_OK);
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    EXPECT(jw_runtime_get_counters(cached, &c) == JW_OK);
    EXPECT(round == 0 ? (c.disk_writes == 4 && c.compiles == 4)
                      : (c.disk_hits == 4 && c.compiles == 0));
    jw_runtime_destroy(cached);
    cached = NULL;
  }
done:
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
  jw_runtime_destroy(cached);
  if (have_dir) nftw(cache_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  return RESULT();
}

/* --- Caches for fleets (jitwarm.h, the section of that name) ------------ */

const char* scenario_cache_settings(void) {
  jw_cache_settings* s = NULL;
  jw_runtime* rt = NULL;
  char cache_dir[] = "/tmp/jitwarm-capi-settings-XXXXXX";
  const int have_dir = mkdtemp(cache_dir) != NULL;
  PASSED();
  EXPECT(have_dir);
  jw_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cache_dir = cache_dir;
  o.remote_cache = "redis://:hunter2@127.0.0.1:7000/1";
  o.remote_timeout_ms = 250;
  EXPECT(jw_cache_settings_resolve(&o, &s) == JW_OK);
  EXPECT(s->struct_size == sizeof *s);
  EXPECT(strcmp(s->directory, cache_dir) == 0);
  EXPECT(strcmp(s->directory_source, "--cache-dir") == 0);
  EXPECT(!s->default_directory && s->persistent);
  EXPECT(strcmp(s->remote, "redis://:***@127.0.0.1:7000/1") == 0);
  EXPECT(s->remote_timeout_ms == 250 && s->problem[0] == '\0');
  jw_cache_settings_free(s);
  s = NULL;

  o.no_cache_dir = 1;
  o.remote_cache = NULL;
  EXPECT(jw_cache_settings_resolve(&o, &s) == JW_OK);
  EXPECT(s->directory[0] == '\0' && !s->persistent);
  EXPECT(contains(s->directory_source, "disabled"));
  jw_cache_settings_free(s);
  s = NULL;

  o.no_cache_dir = 0;
  o.remote_cache = "http://not-redis";
  EXPECT(jw_cache_settings_resolve(&o, &s) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "is not a Redis URL") && s == NULL);
  EXPECT(jw_runtime_create_with_options(&o, &rt) == JW_ERROR_INVALID_ARGUMENT);

  /* A caller built before the cache fields: its options still work. */
  o.remote_cache = NULL;
  o.struct_size = (uint32_t)offsetof(jw_runtime_options, no_cache_dir);
  rt = loaded_runtime(&o);
  EXPECT(rt != NULL);
  EXPECT(jw_runtime_cache_settings(rt, &s) == JW_OK);
  EXPECT(strcmp(s->directory, cache_dir) == 0 && s->persistent);
  EXPECT(jw_runtime_cache_settings(rt, NULL) == JW_ERROR_INVALID_ARGUMENT);
done:
  jw_cache_settings_free(s);
  jw_runtime_destroy(rt);
  if (have_dir) nftw(cache_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  return RESULT();
}

const char* scenario_bundles(void) {
  jw_runtime *rt = NULL, *fresh = NULL;
  jw_warmup_manifest* m = NULL;
  jw_cache_bundle_summary* summary = NULL;
  char work[] = "/tmp/jitwarm-capi-bundle-XXXXXX";
  const int have_dir = mkdtemp(work) != NULL;
  char from[256], into[256], bundle[256], cut[256], nowhere[256];
  PASSED();
  EXPECT(have_dir);
  snprintf(from, sizeof from, "%s/from", work);
  snprintf(into, sizeof into, "%s/into", work);
  snprintf(bundle, sizeof bundle, "%s/b.jwb", work);
  snprintf(cut, sizeof cut, "%s/cut.jwb", work);
  snprintf(nowhere, sizeof nowhere, "%s/nowhere", work);
  jw_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cache_dir = from;
  rt = loaded_runtime(&o);
  EXPECT(rt != NULL);
  m = parse(kSiluManifest);
  EXPECT(m != NULL);
  EXPECT(warm_for(rt, m, "cpu:x86_64"));
  EXPECT(warm_for(rt, m, "cpu:aarch64"));

  const char* targets[] = {"cpu:aarch64"};
  EXPECT(jw_cache_export_bundle(bundle, targets, 1, &o, &summary) == JW_OK);
  EXPECT(summary->entries == 4 && summary->num_targets == 1);
  EXPECT(strcmp(summary->targets[0]->target, "cpu:aarch64") == 0);
  EXPECT(summary->targets[0]->entries == 4 && summary->num_entries == 4);
  EXPECT(contains(summary->manifest[0]->key, "silu_and_mul[cpu:aarch64]"));
  EXPECT(summary->file_bytes > 0 && summary->entry_bytes > 0);
  jw_cache_bundle_summary_free(summary);
  summary = NULL;

  o.cache_dir = into;
  EXPECT(jw_cache_import_bundle(bundle, &o, &summary) == JW_OK);
  EXPECT(summary->written == 4 && summary->present == 0);
  jw_cache_bundle_summary_free(summary);
  summary = NULL;
  EXPECT(jw_cache_import_bundle(bundle, &o, NULL) == JW_OK);

  /* The imported cache serves a new runtime: nothing compiles. */
  fresh = loaded_runtime(&o);
  EXPECT(fresh != NULL);
  EXPECT(warm_for(fresh, m, "cpu:aarch64"));
  jw_runtime_counters c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  EXPECT(jw_runtime_get_counters(fresh, &c) == JW_OK);
  EXPECT(c.disk_hits == 4 && c.compiles == 0);

  /* A truncated bundle imports nothing. */
  FILE* in = fopen(bundle, "rb");
  EXPECT(in != NULL);
  char bytes[1 << 16];
  const size_t n = fread(bytes, 1, sizeof bytes, in);
  fclose(in);
  FILE* out = fopen(cut, "wb");
  EXPECT(out != NULL);
  fwrite(bytes, 1, n - 3, out);
  fclose(out);
  o.cache_dir = nowhere;
  EXPECT(jw_cache_import_bundle(cut, &o, &summary) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "nothing was imported") && summary == NULL);
  EXPECT(access(nowhere, F_OK) != 0);
  EXPECT(jw_cache_export_bundle(bundle, NULL, 0, &o, NULL) ==
         JW_ERROR_NOT_FOUND);
  EXPECT(jw_cache_export_bundle(NULL, NULL, 0, &o, NULL) ==
         JW_ERROR_INVALID_ARGUMENT);
done:
  jw_cache_bundle_summary_free(summary);
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
  jw_runtime_destroy(fresh);
  if (have_dir) nftw(work, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  return RESULT();
}

/* Trust (docs/operators.md): a key pair from jw_cache_keygen, a runtime
 * signing what it writes, a signed bundle refused by an unknown key and by
 * a wrong digest, imported under the right key and digest, the settings
 * that say so, and a node trusting the key loading every entry. */
const char* scenario_trust(void) {
  jw_runtime *rt = NULL, *node = NULL;
  jw_warmup_manifest* m = NULL;
  jw_cache_key_pair *build = NULL, *other = NULL;
  jw_cache_bundle_summary* summary = NULL;
  jw_cache_settings* settings = NULL;
  char work[] = "/tmp/jitwarm-capi-trust-XXXXXX";
  const int have_dir = mkdtemp(work) != NULL;
  char from[256], into[256], bundle[256], key[256], other_key[256];
  char digest[65] = {0};
  PASSED();
  EXPECT(have_dir);
  snprintf(from, sizeof from, "%s/from", work);
  snprintf(into, sizeof into, "%s/into", work);
  snprintf(bundle, sizeof bundle, "%s/b.jwb", work);
  snprintf(key, sizeof key, "%s/build.key", work);
  snprintf(other_key, sizeof other_key, "%s/other.key", work);
  EXPECT(jw_cache_keygen(key, &build) == JW_OK);
  EXPECT(strlen(build->key_id) == 16);
  EXPECT(contains(build->public_key, "jitwarm-ed25519:"));
  EXPECT(jw_cache_keygen(key, NULL) == JW_ERROR_ALREADY_EXISTS);
  EXPECT(jw_cache_keygen(other_key, &other) == JW_OK);

  jw_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cache_dir = from;
  o.no_remote_cache = 1;
  o.signing_key = key;
  rt = loaded_runtime(&o);
  EXPECT(rt != NULL);
  m = parse(kSiluManifest);
  EXPECT(m != NULL);
  EXPECT(warm_for(rt, m, "cpu:x86_64"));
  EXPECT(jw_cache_export_bundle(bundle, NULL, 0, &o, &summary) == JW_OK);
  EXPECT(strcmp(summary->signer, build->key_id) == 0);
  EXPECT(strlen(summary->sha256) == 64);
  memcpy(digest, summary->sha256, 64);
  const uint64_t exported = summary->entries;
  EXPECT(exported > 0);
  jw_cache_bundle_summary_free(summary);
  summary = NULL;

  o.cache_dir = into;
  o.signing_key = NULL;
  const char* strangers[] = {other->public_key};
  o.trusted_keys = strangers;
  o.num_trusted_keys = 1;
  EXPECT(jw_cache_import_bundle(bundle, &o, &summary) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "not trusted") && summary == NULL);
  EXPECT(access(into, F_OK) != 0);
  const char* both[] = {other->public_key, build->public_key_file};
  o.trusted_keys = both;
  o.num_trusted_keys = 2;
  EXPECT(jw_cache_import_bundle_pinned(
             bundle, &o,
             "0000000000000000000000000000000000000000000000000000000000000000",
             NULL) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "pinned"));
  EXPECT(jw_cache_import_bundle_pinned(bundle, &o, digest, &summary) == JW_OK);
  EXPECT(summary->written == exported);
  EXPECT(strcmp(summary->signer, build->key_id) == 0);

  o.remote_cache_mode = JW_REMOTE_CACHE_READ_ONLY;
  EXPECT(jw_cache_settings_resolve(&o, &settings) == JW_OK);
  EXPECT(settings->num_trusted_keys == 2);
  EXPECT(strcmp(settings->trusted_key_ids[1], build->key_id) == 0);
  EXPECT(settings->signing_key_id[0] == '\0');
  EXPECT(settings->remote_cache_mode == JW_REMOTE_CACHE_READ_ONLY);
  node = loaded_runtime(&o);
  EXPECT(node != NULL);
  EXPECT(warm_for(node, m, "cpu:x86_64"));
  EXPECT(compiles_of(node) == 0);
  o.remote_cache_mode = (jw_remote_cache_mode)7;
  jw_cache_settings* refused = NULL;
  EXPECT(jw_cache_settings_resolve(&o, &refused) == JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "remote_cache_mode") && refused == NULL);
done:
  jw_cache_settings_free(settings);
  jw_cache_bundle_summary_free(summary);
  jw_cache_key_pair_free(build);
  jw_cache_key_pair_free(other);
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
  jw_runtime_destroy(node);
  if (have_dir) nftw(work, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  return RESULT();
}

const char* scenario_external_entries(void) {
  jw_runtime *rt = NULL, *fresh = NULL;
  jw_compile_key* key = NULL;
  jw_external_entry* found = NULL;
  char work[] = "/tmp/jitwarm-capi-external-XXXXXX";
  const int have_dir = mkdtemp(work) != NULL;
  PASSED();
  EXPECT(have_dir);
  jw_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cache_dir = work;
  EXPECT(jw_runtime_create_with_options(&o, &rt) == JW_OK);
  EXPECT(jw_compile_key_create("add_kernel", "triton", "cuda:sm_90", &key) ==
         JW_OK);
  static const char binary[] = {0x7f, 'E', 'L', 'F', 0, 1, 2};
  jw_external_entry entry;
  memset(&entry, 0, sizeof entry);
  entry.struct_size = sizeof entry;
  entry.binary = binary;
  entry.binary_size = sizeof binary;
  entry.format = "triton-file";
  entry.entry_point = "add_kernel.cubin";
  int32_t stored = 0;
  EXPECT(jw_runtime_store_external_entry(rt, key, "KEY/add_kernel.cubin",
                                         &entry, &stored) == JW_OK);
  EXPECT(stored == 1);

  /* Another runtime on the directory finds it; another fingerprint does not. */
  EXPECT(jw_runtime_create_with_options(&o, &fresh) == JW_OK);
  EXPECT(jw_runtime_load_external_entry(fresh, key, "KEY/add_kernel.cubin",
                                        &found) == JW_OK);
  EXPECT(found != NULL && found->binary_size == sizeof binary);
  EXPECT(memcmp(found->binary, binary, sizeof binary) == 0);
  EXPECT(strcmp(found->format, "triton-file") == 0);
  EXPECT(strcmp(found->entry_point, "add_kernel.cubin") == 0);
  jw_external_entry_free(found);
  found = NULL;
  EXPECT(jw_runtime_load_external_entry(fresh, key, "OTHER/add_kernel.cubin",
                                        &found) == JW_OK);
  EXPECT(found == NULL);

  /* Bad input is refused with a reason. */
  EXPECT(jw_runtime_store_external_entry(rt, key, "", &entry, &stored) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "needs a fingerprint"));
  entry.format = "";
  EXPECT(jw_runtime_store_external_entry(rt, key, "F", &entry, &stored) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "needs a format"));
  EXPECT(jw_runtime_load_external_entry(rt, key, NULL, &found) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(jw_compile_key_create(NULL, "triton", "t", &key) ==
         JW_ERROR_INVALID_ARGUMENT);
done:
  jw_external_entry_free(found);
  jw_compile_key_free(key);
  jw_runtime_destroy(rt);
  jw_runtime_destroy(fresh);
  if (have_dir) nftw(work, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  return RESULT();
}

const char* scenario_shards_and_remote_counters(void) {
  jw_runtime* rt = NULL;
  jw_warmup_manifest* m = NULL;
  jw_compile_key_list *plan = NULL, *part = NULL;
  PASSED();
  /* A remote tier with nothing behind it: every key still compiles, and
   * the counters say the remote failed. */
  jw_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.remote_cache = "redis://127.0.0.1:1/0";
  o.log = NULL;
  rt = loaded_runtime(&o);
  EXPECT(rt != NULL);
  m = parse(kSiluManifest);
  EXPECT(m != NULL);
  jw_warmup_options w;
  memset(&w, 0, sizeof w);
  w.struct_size = sizeof w;
  w.platform = "cpu";
  EXPECT(jw_runtime_warmup_plan(rt, m, &w, &plan) == JW_OK);
  EXPECT(plan->count == 4);
  uint32_t total = 0;
  for (uint32_t shard = 1; shard <= 3; ++shard) {
    EXPECT(jw_warmup_shard((const jw_compile_key* const*)plan->keys,
                           plan->count, shard, 3, &part) == JW_OK);
    total += part->count;
    EXPECT(jw_runtime_warmup_keys(rt, (const jw_compile_key* const*)part->keys,
                                  part->count, &w, NULL) == JW_OK);
    jw_compile_key_list_free(part);
    part = NULL;
  }
  EXPECT(total == 4);
  EXPECT(jw_warmup_shard((const jw_compile_key* const*)plan->keys, plan->count,
                         4, 3, &part) == JW_ERROR_INVALID_ARGUMENT);
  jw_runtime_counters c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  EXPECT(jw_runtime_get_counters(rt, &c) == JW_OK);
  EXPECT(c.cache_entries == 4 && c.remote_hits == 0);
  EXPECT(c.remote_errors == 8 && c.remote_writes == 0);
done:
  jw_compile_key_list_free(part);
  jw_compile_key_list_free(plan);
  jw_warmup_manifest_free(m);
  jw_runtime_destroy(rt);
  return RESULT();
}

/* jw_runtime_load_plugins_with_options: the plugin path (JITWARM_PLUGIN_PATH)
 * probed in a child process first, loading what an in-process load loads;
 * a struct too small to hold its header is refused; NULL loads as
 * jw_runtime_load_plugins(rt, NULL, 0) does. */
const char* scenario_load_with_options(void) {
  jw_runtime* rt = NULL;
  jw_string_list* names = NULL;
  char* text = NULL;
  PASSED();
  EXPECT(jw_runtime_create(&rt) == JW_OK);
  jw_plugin_load_options options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.isolate = 1;
  options.probe_timeout_ms = 120000;
  EXPECT(jw_runtime_load_plugins_with_options(rt, &options) == JW_OK);
  EXPECT(jw_runtime_kernel_names(rt, &names) == JW_OK);
  EXPECT(names->count == 10);
  jw_string_list_free(names);
  names = NULL;
  EXPECT(jw_runtime_load_report(rt, JW_FORMAT_TEXT, &text) == JW_OK);
  EXPECT(contains(text, "loaded    ") && !contains(text, "crashed in probe"));
  jw_string_free(text);
  text = NULL;
  options.struct_size = 4;
  EXPECT(jw_runtime_load_plugins_with_options(rt, &options) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "jw_plugin_load_options"));
  jw_runtime_destroy(rt);
  rt = NULL;
  EXPECT(jw_runtime_create(&rt) == JW_OK);
  EXPECT(jw_runtime_load_plugins_with_options(rt, NULL) == JW_OK);
  EXPECT(jw_runtime_kernel_names(rt, &names) == JW_OK);
  EXPECT(names->count == 10);
done:
  jw_string_list_free(names);
  jw_runtime_destroy(rt);
  return RESULT();
}

/* Whether `platform` can launch on a device here (the model driver of
 * tests/gpu/model_libcuda counts: its launches run nothing). */
static int can_launch_on(jw_runtime* rt, const char* platform) {
  jw_platform_list* list = NULL;
  int can = 0;
  if (jw_runtime_platforms(rt, &list) != JW_OK) return 0;
  for (uint32_t i = 0; i < list->count; ++i) {
    const jw_platform_info* p = list->items[i];
    if (strcmp(p->name, platform) == 0)
      can = p->can_launch && p->device_count > 0;
  }
  jw_platform_list_free(list);
  return can;
}

/* Tuning from C (docs/tuning.md). On the CPU reference nothing is tunable;
 * where CUDA can launch (the model driver in the 'capi-tuning' test),
 * silu_and_mul is tuned: whichever candidate wins (timing decides), the
 * result, the stored result, the key a launch uses and a warmup for the
 * device's kind all name the same winner. */
const char* scenario_tuning(void) {
  jw_runtime* rt = NULL;
  jw_kernel_handle* k = NULL;
  jw_compile_key *key = NULL, *tuned = NULL;
  jw_compile_key_list *candidates = NULL, *plan = NULL;
  jw_tune_result *result = NULL, *stored = NULL, *other = NULL;
  jw_warmup_manifest* m = NULL;
  char* kind = NULL;
  char* target = NULL;
  silu_args s;
  PASSED();
  rt = loaded_runtime(NULL);
  EXPECT(rt != NULL);
  EXPECT(jw_kernel_find(rt, SILU, &k) == JW_OK);
  make_silu_args(&s, 17);

  /* The CPU reference: not tunable, and said so. */
  EXPECT(jw_kernel_key_for(k, "cpu", 0, s.args, 4, &key) == JW_OK);
  EXPECT(jw_runtime_tune_candidates(rt, key, &candidates) == JW_OK);
  EXPECT(candidates->count == 0);
  jw_compile_key_list_free(candidates);
  candidates = NULL;
  EXPECT(jw_runtime_device_kind(rt, "cpu", 0, &kind) == JW_OK);
  EXPECT(jw_runtime_target_for(rt, "cpu", 0, &target) == JW_OK);
  EXPECT(strcmp(kind, target) == 0);
  EXPECT(jw_runtime_tune_result(rt, key, kind, &result) == JW_OK);
  EXPECT(result == NULL);
  jw_tune_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.platform = "cpu";
  EXPECT(jw_kernel_tune(k, s.args, 4, &o, &result) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(result == NULL && contains(jw_last_error(), "is not tunable"));
  EXPECT(jw_kernel_tune(k, s.args, 4, &o, NULL) == JW_ERROR_INVALID_ARGUMENT);
  o.timed_launches = (1u << 20) + 1; /* a count past the bound */
  EXPECT(jw_kernel_tune(k, s.args, 4, &o, &result) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(result == NULL && contains(jw_last_error(), "at most"));
  o.timed_launches = 0;
  o.struct_size = 4;
  EXPECT(jw_kernel_tune(k, s.args, 4, &o, &result) ==
         JW_ERROR_INVALID_ARGUMENT);
  EXPECT(contains(jw_last_error(), "struct_size"));
  o.struct_size = sizeof o;
  jw_compile_key_free(key);
  key = NULL;
  jw_string_free(kind);
  kind = NULL;
  if (!can_launch_on(rt, "cuda")) goto done;

  /* CUDA: every candidate compiled and launched, the fastest kept. */
  s.out_t.device_index = 0;
  s.x_t.device_index = 0;
  EXPECT(jw_kernel_key_for(k, "cuda", 0, s.args, 4, &key) == JW_OK);
  EXPECT(jw_runtime_tune_candidates(rt, key, &candidates) == JW_OK);
  EXPECT(candidates->count >= 2);
  jw_compile_key_info first, second, untuned;
  memset(&first, 0, sizeof first);
  first.struct_size = sizeof first;
  second = untuned = first;
  EXPECT(jw_compile_key_get_info(key, &untuned) == JW_OK);
  EXPECT(jw_compile_key_get_info(candidates->keys[0], &first) == JW_OK);
  EXPECT(jw_compile_key_get_info(candidates->keys[1], &second) == JW_OK);
  EXPECT(strcmp(first.text, untuned.text) == 0);
  EXPECT(contains(second.text, "{max_block="));
  EXPECT(jw_runtime_device_kind(rt, "cuda", 0, &kind) == JW_OK);

  o.platform = "cuda";
  o.warmup_launches = 1;
  o.timed_launches = 2;
  EXPECT(jw_kernel_tune(k, s.args, 4, &o, &result) == JW_OK);
  EXPECT(strcmp(result->key_text, untuned.text) == 0);
  EXPECT(result->hash_lo == untuned.hash_lo &&
         result->hash_hi == untuned.hash_hi);
  EXPECT(strcmp(result->device_kind, kind) == 0);
  EXPECT(result->num_timings == candidates->count);
  EXPECT(result->stored == 0); /* this runtime has no persistent tier */
  EXPECT(contains(result->text, "<- best"));
  {
    /* The best is the fastest candidate that ran, the earliest on a tie. */
    const jw_tune_timing* fastest = NULL;
    for (uint32_t i = 0; i < result->num_timings; ++i) {
      const jw_tune_timing* t = result->timings[i];
      if (t->error[0] == '\0' &&
          (fastest == NULL || t->seconds < fastest->seconds))
        fastest = t;
    }
    EXPECT(fastest != NULL && strcmp(fastest->config, result->best) == 0);
  }
  EXPECT(jw_runtime_tune_result(rt, key, kind, &stored) == JW_OK);
  EXPECT(stored != NULL && strcmp(stored->best, result->best) == 0);
  EXPECT(jw_runtime_tune_result(rt, key, "another GPU", &other) == JW_OK);
  EXPECT(other == NULL);

  /* A launch's key is the winner's (the untuned key when the default won),
   * and so is a warmup's for this kind. */
  EXPECT(jw_kernel_key_for(k, "cuda", 0, s.args, 4, &tuned) == JW_OK);
  jw_compile_key_info winner;
  memset(&winner, 0, sizeof winner);
  winner.struct_size = sizeof winner;
  EXPECT(jw_compile_key_get_info(tuned, &winner) == JW_OK);
  if (strcmp(result->best, result->timings[0]->config) == 0) {
    EXPECT(strcmp(winner.text, untuned.text) == 0);
  } else {
    EXPECT(contains(winner.text, result->best));
  }
  m = parse(
      "version = 1\n[[kernel]]\n"
      "name = \"" SILU
      "\"\n"
      "[kernel.params]\nx = { dtype = [\"float32\"] }\nH = [17]\n");
  EXPECT(m != NULL);
  jw_warmup_options w;
  memset(&w, 0, sizeof w);
  w.struct_size = sizeof w;
  w.target = "cuda:sm_90";
  w.device_kind = kind;
  EXPECT(jw_runtime_warmup_plan(rt, m, &w, &plan) == JW_OK);
  EXPECT(plan->count == 1);
  jw_compile_key_info planned;
  memset(&planned, 0, sizeof planned);
  planned.struct_size = sizeof planned;
  EXPECT(jw_compile_key_get_info(plan->keys[0], &planned) == JW_OK);
  EXPECT(strcmp(planned.text, winner.text) == 0);
done:
  jw_compile_key_list_free(plan);
  jw_warmup_manifest_free(m);
  jw_tune_result_free(other);
  jw_tune_result_free(stored);
  jw_tune_result_free(result);
  jw_compile_key_list_free(candidates);
  jw_compile_key_free(tuned);
  jw_compile_key_free(key);
  jw_string_free(target);
  jw_string_free(kind);
  jw_kernel_release(k);
  jw_runtime_destroy(rt);
  return RESULT();
}
