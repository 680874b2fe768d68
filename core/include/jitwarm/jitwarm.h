/*
 * jitwarm.h — the stable C ABI between the jitwarm core, its plugins and its
 * host applications.
 *
 * RULES (they hold for every declaration in this file):
 *
 *  R1. Plain C. No exceptions, no C++ types, no STL across the boundary: only
 *      pointers, fixed-width integers, doubles, enums and the structs below.
 *  R2. Every function returns jw_status. JW_OK is 0; any other value is an
 *      error whose human-readable detail is the calling thread's last-error
 *      string (jw_last_error() for hosts; plugins report theirs through
 *      jw_host_api.set_error before returning).
 *  R3. Every struct that crosses the boundary begins with `uint32_t
 *      struct_size` (the writer's sizeof) followed by `const void* next`
 *      (an extension chain; NULL today). A reader must only touch fields that
 *      lie inside struct_size, and treats fields beyond it as zero. New fields
 *      are only ever appended.
 *  R4. Enum numbering is frozen once released; new values are only appended.
 *      Readers treat unknown values as errors, never as a default.
 *  R5. Every out-parameter says who owns the result and how it is freed.
 *      Strings and arrays passed *in* are borrowed for the duration of the
 *      call unless a comment says otherwise.
 *  R6. A plugin exports exactly one symbol, jitwarm_plugin_negotiate. The core
 *      offers the newest ABI version it speaks; the plugin answers with the
 *      version it will use and its function table; the core rejects answers
 *      below JITWARM_ABI_VERSION_MIN or above the version it offered.
 *  R7. A function is never changed once released; a changed behaviour gets a
 *      new name with a _v2 suffix.
 *
 * docs/plugin-abi.md lists the numbered requirements (P1..Pn) for plugin
 * authors and what the core does when one is broken.
 */
#ifndef JITWARM_JITWARM_H
#define JITWARM_JITWARM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI versions. The core speaks every version in [MIN, VERSION]. */
#define JITWARM_ABI_VERSION 1u
#define JITWARM_ABI_VERSION_MIN 1u

/* The one symbol a plugin exports (R6). */
#define JITWARM_PLUGIN_ENTRY_SYMBOL "jitwarm_plugin_negotiate"

#if defined(_WIN32)
#define JITWARM_EXPORT __declspec(dllexport)
#else
#define JITWARM_EXPORT __attribute__((visibility("default")))
#endif

/* Tensors of up to this rank cross the boundary. */
#define JW_MAX_RANK 8

/* ------------------------------------------------------------------------ */
/* Status codes (R2, R4)                                                    */
/* ------------------------------------------------------------------------ */
typedef enum jw_status {
  JW_OK = 0,
  JW_ERROR_INVALID_ARGUMENT = 1, /* bad metadata, wrong dtype, bad value   */
  JW_ERROR_NOT_FOUND = 2,        /* unknown kernel, platform, entry...      */
  JW_ERROR_ALREADY_EXISTS = 3,   /* a schema defined twice                  */
  JW_ERROR_UNSUPPORTED = 4,      /* a target or feature this side lacks     */
  JW_ERROR_COMPILE_FAILED = 5,   /* the JIT compiler rejected the source    */
  JW_ERROR_LAUNCH_FAILED = 6,    /* the device refused the launch           */
  JW_ERROR_NO_DEVICE = 7,        /* no driver or no device: compile-only    */
  JW_ERROR_ABI_MISMATCH = 8,     /* version handshake failed                */
  JW_ERROR_OUT_OF_MEMORY = 9,
  JW_ERROR_JIT_REFUSED = 10, /* the JIT monitor refused a compile       */
  JW_ERROR_IO = 11,          /* files: manifests, cache entries         */
  JW_ERROR_INTERNAL = 12     /* a bug: please report it                 */
} jw_status;

/* ------------------------------------------------------------------------ */
/* Data types (R4: frozen numbering; 0 is never a valid dtype)              */
/* ------------------------------------------------------------------------ */
typedef enum jw_dtype {
  JW_DTYPE_INVALID = 0,
  JW_DTYPE_BOOL = 1,
  JW_DTYPE_INT8 = 2,
  JW_DTYPE_INT16 = 3,
  JW_DTYPE_INT32 = 4,
  JW_DTYPE_INT64 = 5,
  JW_DTYPE_UINT8 = 6,
  JW_DTYPE_UINT16 = 7,
  JW_DTYPE_UINT32 = 8,
  JW_DTYPE_UINT64 = 9,
  JW_DTYPE_FLOAT16 = 10,
  JW_DTYPE_BFLOAT16 = 11,
  JW_DTYPE_FLOAT32 = 12,
  JW_DTYPE_FLOAT64 = 13
} jw_dtype;
#define JW_DTYPE_COUNT 14

/* A set of dtypes: bit (1 << dtype). */
typedef uint32_t jw_dtype_set;
#define JW_DTYPE_BIT(d) ((jw_dtype_set)1u << (unsigned)(d))

/* ------------------------------------------------------------------------ */
/* Tensor metadata without storage: the "warmup tensor"                     */
/* ------------------------------------------------------------------------ */
typedef enum jw_tensor_flag {
  /* strides[] holds real strides; without it they are compact row-major.  */
  JW_TENSOR_HAS_STRIDES = 1u << 0,
  /* The data pointer is (or, for a warmup tensor, will be) 16-byte aligned.
   * Ignored for runtime tensors: their alignment is read from the pointer. */
  JW_TENSOR_ALIGNED_16 = 1u << 1
} jw_tensor_flag;

typedef struct jw_tensor_meta {
  uint32_t struct_size; /* sizeof(jw_tensor_meta) */
  const void* next;
  jw_dtype dtype;
  uint32_t rank;  /* 0 .. JW_MAX_RANK */
  uint32_t flags; /* jw_tensor_flag */
  int64_t shape[JW_MAX_RANK];
  int64_t strides[JW_MAX_RANK]; /* in elements; read only with HAS_STRIDES */
} jw_tensor_meta;

/* A runtime tensor: the same metadata plus storage. */
typedef struct jw_tensor {
  uint32_t struct_size; /* sizeof(jw_tensor) */
  const void* next;
  jw_tensor_meta meta;
  void* data;           /* device (or host, for cpu) address; borrowed     */
  int32_t device_index; /* -1 = host memory                                */
} jw_tensor;

/* ------------------------------------------------------------------------ */
/* Scalars and argument values                                              */
/* ------------------------------------------------------------------------ */
typedef enum jw_scalar_kind {
  JW_SCALAR_NONE = 0,
  JW_SCALAR_INT = 1,   /* signed 64-bit, in value.i                       */
  JW_SCALAR_UINT = 2,  /* unsigned 64-bit, in value.u                     */
  JW_SCALAR_FLOAT = 3, /* double, in value.f                              */
  JW_SCALAR_BOOL = 4   /* 0 or 1, in value.i                              */
} jw_scalar_kind;

typedef struct jw_scalar {
  jw_scalar_kind kind;
  union {
    int64_t i;
    uint64_t u;
    double f;
  } value;
} jw_scalar;

typedef enum jw_value_kind {
  JW_VALUE_NONE = 0,
  JW_VALUE_TENSOR = 1,        /* value.tensor: runtime tensor with storage  */
  JW_VALUE_WARMUP_TENSOR = 2, /* value.meta: metadata only, never launched  */
  JW_VALUE_SCALAR = 3         /* value.scalar                               */
} jw_value_kind;

/* One argument of a launch (or of a warmup). Borrowed for the call. */
typedef struct jw_arg_value {
  uint32_t struct_size; /* sizeof(jw_arg_value) */
  const void* next;
  jw_value_kind kind;
  union {
    const jw_tensor* tensor;
    const jw_tensor_meta* meta;
    jw_scalar scalar;
  } value;
} jw_arg_value;

/* ------------------------------------------------------------------------ */
/* Kernel schemas                                                           */
/* ------------------------------------------------------------------------ */
typedef enum jw_param_kind {
  JW_PARAM_TENSOR = 1,
  JW_PARAM_INT = 2,       /* specialized: type + value class              */
  JW_PARAM_FLOAT = 3,     /* specialized on its type only                 */
  JW_PARAM_CONSTEXPR = 4, /* compile-time constant: exact value in the key */
  JW_PARAM_SCALAR = 5     /* int or float as passed (e.g. "a scalar of x's
                             kind"); each follows its own rule above       */
} jw_param_kind;

typedef enum jw_param_flag {
  /* Integer keeps only its type (i32/i64/u64), never its value class.    */
  JW_PARAM_DO_NOT_SPECIALIZE = 1u << 0,
  /* Tensor: the key ignores whether the pointer is 16-byte aligned.      */
  JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT = 1u << 1,
  /* The kernel writes this tensor.                                       */
  JW_PARAM_OUTPUT = 1u << 2,
  /* default_value is meaningful; the argument may be omitted.            */
  JW_PARAM_HAS_DEFAULT = 1u << 3,
  /* Float argument is passed as fp64 (fp32 otherwise).                   */
  JW_PARAM_FLOAT64 = 1u << 4,
  /* Tensor must be compact row-major (every stride as computed).         */
  JW_PARAM_CONTIGUOUS = 1u << 5,
  /* Tensor: its last dimension must have stride 1; the other strides are
   * passed as explicit integer parameters.                               */
  JW_PARAM_INNER_CONTIGUOUS = 1u << 6,
  /* Tensor: each stride enters the key as an integer under the integer
   * rules (for layout-generic kernels).                                  */
  JW_PARAM_SPECIALIZE_STRIDES = 1u << 7
} jw_param_flag;

typedef struct jw_param_desc {
  uint32_t struct_size; /* sizeof(jw_param_desc) */
  const void* next;
  const char* name; /* unique within the schema                          */
  jw_param_kind kind;
  uint32_t flags;              /* jw_param_flag                          */
  jw_dtype_set allowed_dtypes; /* tensors; 0 = any                      */
  int32_t rank;                /* tensors: required rank, -1 = any       */
  jw_scalar default_value;     /* with JW_PARAM_HAS_DEFAULT              */
  /* Tensors: the name of another tensor parameter whose dtype this one must
   * equal. Scalars (JW_PARAM_SCALAR): the tensor whose dtype decides whether
   * the scalar is an integer or a float (used by warmup defaults). NULL:
   * no constraint. */
  const char* same_dtype_as;
} jw_param_desc;

typedef struct jw_kernel_schema {
  uint32_t struct_size; /* sizeof(jw_kernel_schema) */
  const void* next;
  const char* name; /* fully qualified and dotted, e.g.
                       "vllm.v1.worker.block_table.compute_slot_mapping" */
  const char* summary;
  const jw_param_desc* params;
  uint32_t num_params;
  /* The launch configuration rule, stated for implementers and shown by
   * `jitwarm kernels` (e.g. "grid.x = num_reqs; block = 256"). Each
   * implementation computes its own configuration from the arguments. */
  const char* launch_rule;
} jw_kernel_schema;

/* ------------------------------------------------------------------------ */
/* Compile keys, as a plugin sees them                                      */
/* ------------------------------------------------------------------------ */
typedef enum jw_int_type {
  JW_INT_I32 = 1, /* value in [-2^31, 2^31)  */
  JW_INT_I64 = 2, /* value in [-2^63, 2^63)  */
  JW_INT_U64 = 3  /* value in [0, 2^64)      */
} jw_int_type;

typedef enum jw_int_class {
  JW_INT_CLASS_NONE = 0, /* no value attribute (or do_not_specialize)  */
  JW_INT_CLASS_ONE = 1,  /* the value is exactly 1                     */
  JW_INT_CLASS_DIV16 = 2 /* the value is a multiple of 16 (0 included) */
} jw_int_class;

typedef struct jw_int_spec {
  jw_int_type type;
  jw_int_class value_class;
} jw_int_spec;

typedef enum jw_float_type { JW_FLOAT_F32 = 1, JW_FLOAT_F64 = 2 } jw_float_type;

typedef enum jw_alignment {
  JW_ALIGN_NOT_SPECIALIZED = 0, /* do_not_specialize_on_alignment        */
  JW_ALIGN_16 = 1,
  JW_ALIGN_NONE = 2
} jw_alignment;

/* The specialization of one parameter. The field that holds data follows
 * `kind` (for JW_PARAM_SCALAR: `scalar_kind` says int or float). */
typedef struct jw_param_spec {
  uint32_t struct_size; /* sizeof(jw_param_spec) */
  const void* next;
  const char* name;
  jw_param_kind kind;
  /* JW_PARAM_TENSOR */
  jw_dtype dtype;
  jw_alignment alignment;
  uint32_t num_stride_specs; /* with JW_PARAM_SPECIALIZE_STRIDES; else 0 */
  jw_int_spec stride_specs[JW_MAX_RANK];
  /* JW_PARAM_INT, and JW_PARAM_SCALAR passed an integer */
  jw_int_spec int_spec;
  /* JW_PARAM_FLOAT, and JW_PARAM_SCALAR passed a float */
  jw_float_type float_type;
  /* JW_PARAM_SCALAR: JW_SCALAR_INT or JW_SCALAR_FLOAT */
  jw_scalar_kind scalar_kind;
  /* JW_PARAM_CONSTEXPR */
  jw_scalar constexpr_value;
} jw_param_spec;

/* A compile key handed to an implementation. Borrowed for the call; the
 * params are in the implementation's parameter order (see jw_kernel_impl
 * param_names). */
typedef struct jw_compile_key_view {
  uint32_t struct_size; /* sizeof(jw_compile_key_view) */
  const void* next;
  const char* kernel_name;
  const char* impl_name;
  const char* target; /* "platform:arch", e.g. "cuda:sm_90", "hip:gfx942" */
  const jw_param_spec* params;
  uint32_t num_params;
  uint64_t hash_lo; /* the key's stable 128-bit hash */
  uint64_t hash_hi;
  const char* text; /* readable form, for messages */
} jw_compile_key_view;

/* ------------------------------------------------------------------------ */
/* Artifacts: what compile produces and launch consumes                     */
/* ------------------------------------------------------------------------ */
typedef struct jw_artifact_desc {
  uint32_t struct_size; /* sizeof(jw_artifact_desc) */
  const void* next;
  const void* binary; /* CUBIN, code object, or an instantiation record   */
  size_t binary_size;
  const char* format;      /* "cubin", "ptx", "hsaco", "cpu-instantiation" */
  const char* entry_point; /* symbol to launch (lowered name)              */
} jw_artifact_desc;

/* The core's receiver for a compile result. The core copies what it is
 * given; the plugin keeps ownership of its buffers. Call emit once. */
typedef struct jw_artifact_sink {
  uint32_t struct_size; /* sizeof(jw_artifact_sink) */
  const void* next;
  void* ctx;
  jw_status (*emit)(void* ctx, const jw_artifact_desc* artifact);
} jw_artifact_sink;

/* An artifact handed to launch. Borrowed for the call, but `binary` and
 * `artifact_id` stay valid and unchanged for the life of the process, so a
 * plugin may key its loaded-module cache on artifact_id. */
typedef struct jw_artifact_view {
  uint32_t struct_size; /* sizeof(jw_artifact_view) */
  const void* next;
  const jw_compile_key_view* key;
  const void* binary;
  size_t binary_size;
  const char* format;
  const char* entry_point;
  uint64_t artifact_id; /* unique per artifact within the process */
} jw_artifact_view;

/* A receiver for text. The core copies what it is given. */
typedef struct jw_text_sink {
  uint32_t struct_size; /* sizeof(jw_text_sink) */
  const void* next;
  void* ctx;
  void (*append)(void* ctx, const char* text, size_t length);
} jw_text_sink;

/* ------------------------------------------------------------------------ */
/* Kernel implementations                                                   */
/* ------------------------------------------------------------------------ */
typedef struct jw_kernel_impl {
  uint32_t struct_size; /* sizeof(jw_kernel_impl) */
  const void* next;
  const char* kernel_name; /* the schema it implements                   */
  const char* platform;    /* "cpu", "cuda", "hip" or a vendor's name     */
  const char* impl_name;   /* identifies it in keys and reports           */
  /* Parameter names in the order this implementation takes them. NULL:
   * positional, schema order. Names equal to the schema's (as a set):
   * arguments and specs are passed by name, in this order. */
  const char* const* param_names;
  uint32_t num_param_names;
  void* user_data; /* passed back to every callback                     */

  /* Compile-only: turn a key into an artifact. Must not allocate device
   * memory and must not launch. Thread-safe. */
  jw_status (*compile)(void* user_data, const jw_compile_key_view* key,
                       const jw_artifact_sink* out);
  /* Launch a compiled artifact with concrete arguments on `stream` (the
   * platform's stream handle; NULL = default stream). Thread-safe. */
  jw_status (*launch)(void* user_data, const jw_artifact_view* artifact,
                      const jw_arg_value* args, uint32_t num_args,
                      void* stream);
  /* Optional: diagnostics for a key (source, options, instantiation). */
  jw_status (*describe)(void* user_data, const jw_compile_key_view* key,
                        const jw_text_sink* out);
  /* Optional: everything besides the key that changes the binary for this
   * key (source and headers, options, compiler name and version). The
   * persistent cache names entries by a hash of the key and this text;
   * without it, this implementation's artifacts are kept in memory only. */
  jw_status (*fingerprint)(void* user_data, const jw_compile_key_view* key,
                           const jw_text_sink* out);
  /* Optional: called once when no registry snapshot can reach this
   * implementation any more: after it was removed (a released override, a
   * rolled-back registration) and every launch that could still be using
   * it has ended, or when the runtime is destroyed. It may run on any
   * thread, during a later registration, release or launch, and must not
   * call back into the runtime. */
  void (*destroy)(void* user_data);
} jw_kernel_impl;

/* ------------------------------------------------------------------------ */
/* Platforms: device discovery and memory, for warmup, tests and benches    */
/* ------------------------------------------------------------------------ */
typedef enum jw_platform_capability {
  JW_PLATFORM_CAN_COMPILE = 1u << 0,
  JW_PLATFORM_CAN_LAUNCH = 1u << 1
} jw_platform_capability;

typedef enum jw_copy_direction {
  JW_COPY_HOST_TO_DEVICE = 1,
  JW_COPY_DEVICE_TO_HOST = 2,
  JW_COPY_DEVICE_TO_DEVICE = 3
} jw_copy_direction;

typedef struct jw_platform_desc {
  uint32_t struct_size; /* sizeof(jw_platform_desc) */
  const void* next;
  const char* name; /* "cpu", "cuda", "hip", ... */
  void* user_data;
  /* jw_platform_capability bits, and in `detail` why a bit is missing
   * (e.g. "no CUDA driver: compile-only"). */
  jw_status (*capabilities)(void* user_data, uint32_t* out_flags,
                            const jw_text_sink* detail);
  jw_status (*device_count)(void* user_data, int32_t* out_count);
  /* The target of a device, e.g. "cuda:sm_90". */
  jw_status (*device_target)(void* user_data, int32_t device,
                             const jw_text_sink* out);
  /* Memory services. Freed with free_memory by the caller. */
  jw_status (*allocate)(void* user_data, int32_t device, size_t bytes,
                        void** out_ptr);
  jw_status (*free_memory)(void* user_data, int32_t device, void* ptr);
  jw_status (*copy)(void* user_data, int32_t device, void* dst, const void* src,
                    size_t bytes, jw_copy_direction dir, void* stream);
  jw_status (*synchronize)(void* user_data, int32_t device, void* stream);
} jw_platform_desc;

/* ------------------------------------------------------------------------ */
/* Host services given to a plugin                                          */
/* ------------------------------------------------------------------------ */
typedef enum jw_log_level {
  JW_LOG_DEBUG = 0,
  JW_LOG_INFO = 1,
  JW_LOG_WARNING = 2,
  JW_LOG_ERROR = 3
} jw_log_level;

typedef struct jw_host_api {
  uint32_t struct_size; /* sizeof(jw_host_api) */
  const void* next;
  uint32_t abi_version; /* the version this table was built for */
  void* host_ctx;
  void (*log)(void* host_ctx, jw_log_level level, const char* message);
  /* Set the calling thread's error detail before returning an error. */
  void (*set_error)(void* host_ctx, const char* message);
  /* Registration. The core copies everything it is given, except
   * user_data and the callbacks, which must stay valid until destroy. */
  jw_status (*define_schema)(void* host_ctx, const jw_kernel_schema* schema);
  jw_status (*register_impl)(void* host_ctx, const jw_kernel_impl* impl);
  jw_status (*register_platform)(void* host_ctx,
                                 const jw_platform_desc* platform);
  /* A byte cache shared across runs (the core's persistent cache when one
   * is configured), for a plugin's own intermediate products. get copies
   * the value into `out` and returns JW_ERROR_NOT_FOUND on a miss. */
  jw_status (*cache_get)(void* host_ctx, const void* key, size_t key_size,
                         const jw_text_sink* out);
  jw_status (*cache_put)(void* host_ctx, const void* key, size_t key_size,
                         const void* value, size_t value_size);
  /* A configuration value (from the environment or the host), or NULL. The
   * string is owned by the core and valid until the plugin is unloaded. */
  const char* (*get_config)(void* host_ctx, const char* name);
} jw_host_api;

/* ------------------------------------------------------------------------ */
/* The plugin entry point and its handshake (R6)                            */
/* ------------------------------------------------------------------------ */
typedef struct jw_plugin_api {
  uint32_t struct_size; /* sizeof(jw_plugin_api) */
  const void* next;
  const char* name;    /* e.g. "jitwarm-cuda"                         */
  const char* version; /* the plugin's own version, e.g. "0.1.0"       */
  /* Define schemas, register implementations and platforms. Called once per
   * runtime that loads the plugin, right after a successful handshake, with
   * that runtime's host table: several runtimes in one process each call it
   * with their own table. */
  jw_status (*register_all)(const jw_host_api* host);
  /* Optional: called once no runtime uses the plugin any more (after the
   * last unregister_all). The library is never unloaded: a later runtime
   * may negotiate and register again. */
  void (*shutdown)(void);
  /* Optional (read only when struct_size covers it): called once for every
   * register_all that returned JW_OK, with the same host table, when that
   * runtime stops using what it registered (it is destroyed, or it rejected
   * the registration). Free what that registration made; the table is
   * invalid afterwards. */
  void (*unregister_all)(const jw_host_api* host);
} jw_plugin_api;

typedef struct jw_plugin_negotiation {
  uint32_t struct_size; /* sizeof(jw_plugin_negotiation) */
  const void* next;
  uint32_t core_max_version;   /* in: the newest version the core speaks */
  uint32_t core_min_version;   /* in: the oldest it accepts             */
  uint32_t plugin_version;     /* out: the version the plugin will use  */
  const jw_plugin_api* plugin; /* out: static storage, owned by plugin  */
} jw_plugin_negotiation;

typedef jw_status (*jw_plugin_negotiate_fn)(jw_plugin_negotiation* negotiation);

/* ------------------------------------------------------------------------ */
/* Host application API (exported by libjitwarm)                            */
/* ------------------------------------------------------------------------ */
typedef struct jw_runtime jw_runtime;             /* opaque */
typedef struct jw_kernel_handle jw_kernel_handle; /* opaque */
typedef struct jw_registration jw_registration;   /* opaque */

/* The calling thread's last error detail. Owned by the core; valid until the
 * next jitwarm call on this thread. Never NULL. */
JITWARM_EXPORT const char* jw_last_error(void);
JITWARM_EXPORT const char* jw_status_name(jw_status status);
JITWARM_EXPORT const char* jw_dtype_name(jw_dtype dtype);
JITWARM_EXPORT uint32_t jw_abi_version(void);

/* *out_runtime is owned by the caller: free with jw_runtime_destroy. */
JITWARM_EXPORT jw_status jw_runtime_create(jw_runtime** out_runtime);
JITWARM_EXPORT void jw_runtime_destroy(jw_runtime* runtime);

/* Load every plugin in the colon-separated search path (NULL: the
 * JITWARM_PLUGIN_PATH variable, then the installed plugin directory).
 * strict != 0: any rejected candidate is an error. */
JITWARM_EXPORT jw_status jw_runtime_load_plugins(jw_runtime* runtime,
                                                 const char* search_path,
                                                 int strict);
JITWARM_EXPORT jw_status jw_runtime_load_plugin(jw_runtime* runtime,
                                                const char* path);

/* A handle that always resolves through the registry, so it sees overrides
 * at once. *out is owned by the caller: free with jw_kernel_release. */
JITWARM_EXPORT jw_status jw_kernel_find(jw_runtime* runtime, const char* name,
                                        jw_kernel_handle** out);
JITWARM_EXPORT void jw_kernel_release(jw_kernel_handle* kernel);

/* Launch on `platform` (NULL: the first platform, in the order cuda, hip,
 * cpu, that has an implementation and can launch) and `device`. */
JITWARM_EXPORT jw_status jw_kernel_launch(jw_kernel_handle* kernel,
                                          const char* platform, int32_t device,
                                          const jw_arg_value* args,
                                          uint32_t num_args, void* stream);

/* One host override for register_kernels. */
typedef struct jw_kernel_override {
  uint32_t struct_size; /* sizeof(jw_kernel_override) */
  const void* next;
  const char* kernel_name;
  jw_kernel_impl impl; /* impl.kernel_name may be NULL: kernel_name is used */
} jw_kernel_override;

/* Register a batch of implementations, all or nothing. *out_registration is
 * owned by the caller; jw_registration_release removes every override in the
 * batch and restores what each replaced. */
JITWARM_EXPORT jw_status
jw_register_kernels(jw_runtime* runtime, const jw_kernel_override* overrides,
                    uint32_t num_overrides, jw_registration** out_registration);
JITWARM_EXPORT void jw_registration_release(jw_registration* registration);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* JITWARM_JITWARM_H */
