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

/* The enums below are int-sized in C. C++ gives them int32_t, of the same
 * size and alignment, as their fixed underlying type: every integer a C
 * caller may store in an enum field is then a value of the enum, so reading
 * a field before checking it (R4) is defined behaviour in a C++ reader
 * too. Without a fixed type, C++ leaves a value outside the enumerators'
 * bit range undefined. */
#ifdef __cplusplus
#define JW_ENUM_BASE : int32_t
#else
#define JW_ENUM_BASE
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
typedef enum jw_status JW_ENUM_BASE {
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
typedef enum jw_dtype JW_ENUM_BASE {
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
typedef enum jw_tensor_flag JW_ENUM_BASE {
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
typedef enum jw_scalar_kind JW_ENUM_BASE {
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

typedef enum jw_value_kind JW_ENUM_BASE {
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
typedef enum jw_param_kind JW_ENUM_BASE {
  JW_PARAM_TENSOR = 1,
  JW_PARAM_INT = 2,       /* specialized: type + value class              */
  JW_PARAM_FLOAT = 3,     /* specialized on its type only                 */
  JW_PARAM_CONSTEXPR = 4, /* compile-time constant: exact value in the key */
  JW_PARAM_SCALAR = 5     /* int or float as passed (e.g. "a scalar of x's
                             kind"); each follows its own rule above       */
} jw_param_kind;

typedef enum jw_param_flag JW_ENUM_BASE {
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
typedef enum jw_int_type JW_ENUM_BASE {
  JW_INT_I32 = 1, /* value in [-2^31, 2^31)  */
  JW_INT_I64 = 2, /* value in [-2^63, 2^63)  */
  JW_INT_U64 = 3  /* value in [0, 2^64)      */
} jw_int_type;

typedef enum jw_int_class JW_ENUM_BASE {
  JW_INT_CLASS_NONE = 0, /* no value attribute (or do_not_specialize)  */
  JW_INT_CLASS_ONE = 1,  /* the value is exactly 1                     */
  JW_INT_CLASS_DIV16 = 2 /* the value is a multiple of 16 (0 included) */
} jw_int_class;

typedef struct jw_int_spec {
  jw_int_type type;
  jw_int_class value_class;
} jw_int_spec;

typedef enum jw_float_type JW_ENUM_BASE {
  JW_FLOAT_F32 = 1,
  JW_FLOAT_F64 = 2
} jw_float_type;

typedef enum jw_alignment JW_ENUM_BASE {
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

/* One value of a key's config: a choice of the implementation's tune space
 * (a descriptor's [tune] table; docs/kernel-descriptors.md) and its value. */
typedef struct jw_tune_value {
  const char* name;
  int64_t value;
} jw_tune_value;

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
  /* --- appended fields (read them only when struct_size covers them) --- */
  /* The config to compile with, sorted by name; 0 values: the default
   * config. The core hands a tuned key only to an implementation whose
   * tune_candidates listed that config for it. */
  const jw_tune_value* config;
  uint32_t num_config;
} jw_compile_key_view;

/* Where tune_candidates answers: one call of emit per config. */
typedef struct jw_tune_config_sink {
  uint32_t struct_size; /* sizeof(jw_tune_config_sink) */
  const void* next;
  void* ctx;
  jw_status (*emit)(void* ctx, const jw_tune_value* values, uint32_t count);
} jw_tune_config_sink;

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
/* Where compile_batch answers for each key, by its index in the batch. */
typedef struct jw_batch_artifact_sink {
  uint32_t struct_size; /* sizeof(jw_batch_artifact_sink) */
  const void* next;
  void* ctx;
  jw_status (*emit)(void* ctx, uint32_t index,
                    const jw_artifact_desc* artifact);
  jw_status (*fail)(void* ctx, uint32_t index, jw_status status,
                    const char* message);
} jw_batch_artifact_sink;

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

  /* --- appended fields (R3: the core reads them only when struct_size
   * covers them) --- */

  /* Optional, together: a prepared launch. The first time the core launches
   * an artifact of this implementation it calls `prepare` once, to do what
   * every later launch of that artifact needs (parse the artifact, find the
   * function, precompute how arguments are packed and how the grid is
   * planned), and keeps the opaque object it returns. Every launch of that
   * artifact then goes to `launch_prepared` with only the per-launch values.
   * The artifact view passed to prepare, its key and binary stay valid
   * while the object lives. The core calls launch_prepared only with
   * arguments it validated against the artifact's key (docs/plugin-abi.md
   * P12): the key's count and kinds, dtypes, alignment classes, integer
   * types and classes and constexpr values, every runtime tensor on one
   * device; in this implementation's parameter order, defaults filled in.
   * `release_prepared` frees the object once no launch can use it any more,
   * always before `destroy`. Thread-safe, like launch. */
  jw_status (*prepare)(void* user_data, const jw_artifact_view* artifact,
                       void** out_prepared);
  jw_status (*launch_prepared)(void* user_data, void* prepared,
                               const jw_arg_value* args, uint32_t num_args,
                               void* stream);
  void (*release_prepared)(void* user_data, void* prepared);
  /* jw_impl_flag bits; 0 for none. */
  uint32_t flags;
  /* Optional: compile several keys at once, compile-only, with the results
   * compile would give one by one. Warmup groups the keys it has to
   * compile by implementation and target and passes a group in one call,
   * so a plugin can compile them in one compiler run (the GPU plugins
   * compile a kernel's instantiations as one program). For each key the
   * plugin calls exactly one of out->emit (its artifact, copied during the
   * call) and out->fail (why that key failed), in any order; an artifact
   * must launch for its key as compile's would (its binary may hold the
   * code of other keys of the batch too). JW_OK once every key is
   * answered. Another status, or a key left unanswered, makes the core
   * compile the unanswered keys one by one with compile. Thread-safe. */
  jw_status (*compile_batch)(void* user_data,
                             const jw_compile_key_view* const* keys,
                             uint32_t num_keys,
                             const jw_batch_artifact_sink* out);
  /* Optional, with compile_batch: how many keys for `target` (a key's
   * target, e.g. "cuda:sm_90") this implementation compiles best in one
   * batch, in *out_size; 0 for no preference. A warmup that leaves the
   * batch size to the implementations (jw_warmup_options.batch_size 0)
   * uses it, else 8. Larger batches pay where each key's artifact of a
   * batch holds only its own kernel: then a batch costs no cache space
   * (the CUDA plugin's, linked per kernel, prefer 64). Another status than
   * JW_OK counts as no preference. Thread-safe. */
  jw_status (*preferred_batch_size)(void* user_data, const char* target,
                                    uint32_t* out_size);
  /* Optional: the configs this implementation can compile `key` (an
   * untuned key) with, its default config first: one out->emit per config,
   * every one naming each choice of its tune space. Without it, or with no
   * config emitted, the implementation is not tunable and never gets a
   * tuned key. Compile-only, thread-safe. */
  jw_status (*tune_candidates)(void* user_data, const jw_compile_key_view* key,
                               const jw_tune_config_sink* out);
} jw_kernel_impl;

typedef enum jw_impl_flag JW_ENUM_BASE {
  /* compile only names its artifact (a host function, a prebuilt library):
   * nothing is JIT-compiled, so the JIT monitor neither counts nor refuses
   * it after seal, and the cache's compile counter does not move. */
  JW_IMPL_COMPILES_NOTHING = 1u << 0
} jw_impl_flag;

/* ------------------------------------------------------------------------ */
/* Platforms: device discovery and memory, for warmup, tests and benches    */
/* ------------------------------------------------------------------------ */
typedef enum jw_platform_capability JW_ENUM_BASE {
  JW_PLATFORM_CAN_COMPILE = 1u << 0,
  JW_PLATFORM_CAN_LAUNCH = 1u << 1
} jw_platform_capability;

typedef enum jw_copy_direction JW_ENUM_BASE {
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
   * (e.g. "no CUDA driver: libcuda.so.1 not found"; the bits say the
   * state, so the detail does not repeat "compile-only"). */
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
  /* --- appended fields (read them only when struct_size covers them) --- */
  /* Optional: the device's model, e.g. "NVIDIA H200". Tuning results are
   * kept per device kind (docs/tuning.md): this name, or the device's
   * target where the platform gives none. */
  jw_status (*device_name)(void* user_data, int32_t device,
                           const jw_text_sink* out);
} jw_platform_desc;

/* ------------------------------------------------------------------------ */
/* Host services given to a plugin                                          */
/* ------------------------------------------------------------------------ */
typedef enum jw_log_level JW_ENUM_BASE {
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
/* A file of a source kernel: its name (as #include "..." names it) and its
 * bytes. Borrowed for the call. */
typedef struct jw_source_file {
  const char* name;
  const char* text;
  size_t size;
} jw_source_file;

/* A kernel from source: its descriptor (TOML, docs/kernel-descriptors.md)
 * and the files its program is made of (the source the descriptor names and
 * the headers it includes). Borrowed for the call: copy what you keep. */
typedef struct jw_source_kernel {
  uint32_t struct_size; /* sizeof(jw_source_kernel) */
  const void* next;
  const char* origin; /* the descriptor's path, or "host: ..." */
  const char* descriptor;
  size_t descriptor_size;
  const jw_source_file* files;
  uint32_t num_files;
} jw_source_kernel;

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
  /* Optional (read only when struct_size covers it): implement a kernel
   * from source, for plugins that compile source at run time (CUDA, HIP;
   * docs/kernel-descriptors.md). The core calls it, for the runtime of
   * `host`, with every source kernel it knows: those of its kernel
   * directories and every one a host registers, whenever the plugin or the
   * kernel arrives. The plugin reads the descriptor and fills `out` with an
   * implementation for its platform, which the core copies as register_impl
   * does (its destroy runs when the kernel is removed); when the descriptor
   * defines its schema, it sets *out_schema (read during the call only).
   * JW_ERROR_UNSUPPORTED: the kernel is not for this platform. Any other
   * error says why, naming descriptor file:line (set_error). */
  jw_status (*implement_source_kernel)(const jw_host_api* host,
                                       const jw_source_kernel* kernel,
                                       const jw_kernel_schema** out_schema,
                                       jw_kernel_impl* out);
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

/* A kernel from source (docs/kernel-descriptors.md): every loaded plugin
 * that compiles source, and every one loaded later, implements it.
 * *out_registration is owned by the caller; jw_registration_release removes
 * the implementations (a schema the descriptor defined stays). */
JITWARM_EXPORT jw_status
jw_register_source_kernel(jw_runtime* runtime, const jw_source_kernel* kernel,
                          jw_registration** out_registration);

/* ======================================================================== */
/* Host application API, continued: everything a host does through         */
/* jitwarm.hpp — runtime options, load report, explain, platforms,          */
/* warmup, seal and the JIT monitor, compile keys, specialization,          */
/* counters.                                                                */
/*                                                                          */
/* Ownership (R5): a `char*` this section hands out is owned by the caller  */
/* and freed with jw_string_free; every other owned output names its free   */
/* function next to it. Every free function accepts NULL.                   */
/*                                                                          */
/* Out-structs the caller allocates (jw_runtime_counters,                   */
/* jw_compile_key_info) follow R3 with the core as the writer: the caller   */
/* sets struct_size to its sizeof; the core fills the fields that lie in    */
/* both its own and the caller's struct, zeroes the rest of the caller's    */
/* struct, and writes the number of bytes it filled back into struct_size.  */
/* Lists the core allocates hold pointers to their items, so an item that   */
/* grows a field does not move the next one.                                */
/* ======================================================================== */

JITWARM_EXPORT void jw_string_free(char* text);

typedef struct jw_string_list {
  uint32_t struct_size; /* sizeof(jw_string_list) */
  const void* next;
  const char* const* items;
  uint32_t count;
} jw_string_list;
JITWARM_EXPORT void jw_string_list_free(jw_string_list* list);

typedef enum jw_text_format JW_ENUM_BASE {
  JW_FORMAT_TEXT = 1, /* for people, as the `jitwarm` command prints it   */
  JW_FORMAT_JSON = 2
} jw_text_format;

/* --- Runtime options ----------------------------------------------------- */
typedef enum jw_jit_monitor_mode JW_ENUM_BASE {
  /* In jw_runtime_options only: JITWARM_JIT_MONITOR, else off.           */
  JW_JIT_MONITOR_DEFAULT = 0,
  JW_JIT_MONITOR_OFF = 1,  /* a compile after seal compiles               */
  JW_JIT_MONITOR_WARN = 2, /* ... and logs its key once                   */
  JW_JIT_MONITOR_ERROR = 3 /* ... is refused: JW_ERROR_JIT_REFUSED        */
} jw_jit_monitor_mode;

/* Receives the core's log lines. It may be called from any thread (warmup
 * workers included) until jw_runtime_destroy returns. */
typedef void (*jw_log_fn)(void* ctx, jw_log_level level, const char* message);

typedef enum jw_remote_cache_mode JW_ENUM_BASE {
  /* JITWARM_REMOTE_CACHE_MODE (read-write | read-only), else read-write */
  JW_REMOTE_CACHE_MODE_DEFAULT = 0,
  JW_REMOTE_CACHE_READ_WRITE = 1, /* loads and writes what it compiles   */
  JW_REMOTE_CACHE_READ_ONLY = 2   /* loads, never writes                 */
} jw_remote_cache_mode;

typedef struct jw_runtime_options {
  uint32_t struct_size; /* sizeof(jw_runtime_options) */
  const void* next;
  /* NULL or "": JITWARM_CACHE_DIR, else the per-user default
   * ($XDG_CACHE_HOME/jitwarm, else ~/.cache/jitwarm). */
  const char* cache_dir;
  jw_jit_monitor_mode jit_monitor;
  /* Record mode: append each key compiled after seal to this manifest.
   * NULL or "": JITWARM_JIT_RECORD, else none. */
  const char* jit_record_path;
  jw_log_fn log; /* NULL: stderr, filtered by JITWARM_LOG_LEVEL           */
  void* log_ctx;
  /* Appended with "Caches for fleets": the rest of the cache settings,
   * resolved as jw_cache_settings_resolve says. Zero or NULL leaves each
   * to the environment. */
  int32_t no_cache_dir;         /* nonzero: no persistent directory at all */
  const char* system_cache_dir; /* NULL or "": JITWARM_SYSTEM_CACHE_DIR     */
  uint64_t cache_max_bytes;     /* 0: JITWARM_CACHE_MAX_BYTES, else none   */
  /* The shared remote tier, "redis://[:password@]host[:port][/db]"; NULL or
   * "": JITWARM_REMOTE_CACHE, else none. */
  const char* remote_cache;
  int32_t no_remote_cache;    /* nonzero: none, whatever the environment   */
  uint32_t remote_timeout_ms; /* 0: JITWARM_REMOTE_CACHE_TIMEOUT_MS, else
                                 1000: the bound on each remote wait      */
  /* Appended with "Trust" (docs/operators.md): the secret key file that
   * signs every entry written (NULL or "": JITWARM_SIGNING_KEY, else
   * unsigned); the public keys whose signatures are trusted, each its text
   * or a file of keys (none: JITWARM_TRUSTED_KEYS, else nothing checked);
   * and whether the remote tier is written. */
  const char* signing_key;
  const char* const* trusted_keys;
  uint32_t num_trusted_keys;
  jw_remote_cache_mode remote_cache_mode;
} jw_runtime_options;

/* options may be NULL (all defaults, as jw_runtime_create). *out_runtime is
 * owned by the caller: free with jw_runtime_destroy. */
JITWARM_EXPORT jw_status jw_runtime_create_with_options(
    const jw_runtime_options* options, jw_runtime** out_runtime);

/* --- Loading plugins, with options ---------------------------------------- */
typedef struct jw_plugin_load_options {
  uint32_t struct_size; /* sizeof(jw_plugin_load_options) */
  const void* next;
  const char* search_path; /* colon-separated; NULL: JITWARM_PLUGIN_PATH,
                              then the installed plugin directory          */
  int32_t strict;          /* != 0: any rejected candidate is an error     */
  /* != 0: each candidate is loaded in a child process first, and one that
   * crashes, aborts, exits or hangs there is rejected, never loaded here
   * (JITWARM_PLUGIN_ISOLATION=1 turns this on for every load). */
  int32_t isolate;
  uint32_t probe_timeout_ms; /* each candidate's bound there; 0: 60000 */
} jw_plugin_load_options;

/* jw_runtime_load_plugins with options (NULL: as jw_runtime_load_plugins
 * with NULL and 0). */
JITWARM_EXPORT jw_status jw_runtime_load_plugins_with_options(
    jw_runtime* runtime, const jw_plugin_load_options* options);

/* --- What is loaded ------------------------------------------------------ */
/* Every plugin load of this runtime so far: the directories searched, and
 * for each candidate file whether it loaded and why not. */
JITWARM_EXPORT jw_status jw_runtime_load_report(jw_runtime* runtime,
                                                jw_text_format format,
                                                char** out_text);
/* Kernel names, sorted. Free with jw_string_list_free. */
JITWARM_EXPORT jw_status jw_runtime_kernel_names(jw_runtime* runtime,
                                                 jw_string_list** out_names);
/* Per platform, which implementation of the kernel wins, where it came from
 * and what it replaced. */
JITWARM_EXPORT jw_status jw_runtime_explain(jw_runtime* runtime,
                                            const char* kernel_name,
                                            jw_text_format format,
                                            char** out_text);

typedef struct jw_platform_info {
  uint32_t struct_size; /* sizeof(jw_platform_info) */
  const void* next;
  const char* name;   /* "cpu", "cuda", "hip", ...                       */
  const char* origin; /* the plugin that registered it                   */
  const char* detail; /* why it cannot launch, e.g. "no CUDA driver"     */
  int32_t can_compile;
  int32_t can_launch;
  int32_t device_count;
} jw_platform_info;

typedef struct jw_platform_list {
  uint32_t struct_size; /* sizeof(jw_platform_list) */
  const void* next;
  const jw_platform_info* const* items;
  uint32_t count;
} jw_platform_list;

/* Free with jw_platform_list_free. */
JITWARM_EXPORT jw_status jw_runtime_platforms(jw_runtime* runtime,
                                              jw_platform_list** out_list);
JITWARM_EXPORT void jw_platform_list_free(jw_platform_list* list);
/* The platform launches go to when none is given (the first of cuda, hip,
 * cpu, then any other, that has a device and can launch);
 * JW_ERROR_NO_DEVICE when none can. */
JITWARM_EXPORT jw_status jw_runtime_default_platform(jw_runtime* runtime,
                                                     char** out_name);
/* The target of a platform's device, e.g. "cuda:sm_90". */
JITWARM_EXPORT jw_status jw_runtime_target_for(jw_runtime* runtime,
                                               const char* platform,
                                               int32_t device,
                                               char** out_target);

/* --- Compile keys -------------------------------------------------------- */
typedef struct jw_compile_key jw_compile_key; /* opaque, owning */

/* What a key holds. Every pointer is borrowed from the key: valid until
 * jw_compile_key_free. */
typedef struct jw_compile_key_info {
  uint32_t struct_size; /* in: sizeof(jw_compile_key_info); out: filled */
  const void* next;
  const char* text; /* e.g. "silu_and_mul[cuda:sm_90](out:bf16*:a16, ...)" */
  const char* kernel_name;
  const char* impl_name;
  const char* target;
  const void* encoding; /* the canonical bytes (docs/compile-keys.md)   */
  size_t encoding_size;
  uint64_t hash_lo; /* the stable 128-bit hash of the encoding           */
  uint64_t hash_hi;
} jw_compile_key_info;

/* The key a launch with these arguments would use (the same arguments and
 * platform/device rules as jw_kernel_launch; warmup tensors are allowed).
 * *out_key is owned by the caller: free with jw_compile_key_free. */
JITWARM_EXPORT jw_status jw_kernel_key_for(jw_kernel_handle* kernel,
                                           const char* platform, int32_t device,
                                           const jw_arg_value* args,
                                           uint32_t num_args,
                                           jw_compile_key** out_key);
JITWARM_EXPORT jw_status jw_compile_key_get_info(const jw_compile_key* key,
                                                 jw_compile_key_info* out_info);
/* A key from its encoding; JW_ERROR_INVALID_ARGUMENT for malformed,
 * truncated or trailing bytes. Free with jw_compile_key_free. */
JITWARM_EXPORT jw_status jw_compile_key_decode(const void* encoding,
                                               size_t encoding_size,
                                               jw_compile_key** out_key);
JITWARM_EXPORT void jw_compile_key_free(jw_compile_key* key);

typedef struct jw_compile_key_list {
  uint32_t struct_size; /* sizeof(jw_compile_key_list) */
  const void* next;
  jw_compile_key* const* keys; /* owned by the list */
  uint32_t count;
} jw_compile_key_list;
/* Frees the list and every key in it. */
JITWARM_EXPORT void jw_compile_key_list_free(jw_compile_key_list* list);

/* Whether the in-memory cache holds an artifact for the key. */
JITWARM_EXPORT jw_status jw_runtime_is_cached(jw_runtime* runtime,
                                              const jw_compile_key* key,
                                              int32_t* out_cached);
/* Whether the key would hit the runtime's caches (memory, disk and its
 * system layer), and if not, the entries of its kernel on its platform that
 * come nearest and the factors that set each apart ("target", "options",
 * "compiler", ...; docs/cli.md, "cache why"): MissExplanation::to_text of
 * jitwarm.hpp. Reads entries, compiles nothing. Free with jw_string_free.
 * JW_ERROR_NOT_FOUND for a kernel or implementation not loaded. */
JITWARM_EXPORT jw_status jw_runtime_explain_miss(jw_runtime* runtime,
                                                 const jw_compile_key* key,
                                                 char** out_text);

/* --- Tuning (docs/tuning.md) -------------------------------------------- */
typedef struct jw_tune_options {
  uint32_t struct_size; /* sizeof(jw_tune_options) */
  const void* next;
  const char* platform; /* NULL: as jw_kernel_launch                      */
  int32_t device;
  void* stream;             /* where the candidates' launches run        */
  uint32_t warmup_launches; /* untimed, per candidate; 0: 3; <= 2^20    */
  uint32_t timed_launches;  /* per candidate; 0: 20; <= 2^20            */
  int32_t no_store; /* nonzero: measure only, store no result            */
} jw_tune_options;

/* One candidate of a tuning run. Pointers are borrowed from the result. */
typedef struct jw_tune_timing {
  uint32_t struct_size; /* sizeof(jw_tune_timing) */
  const void* next;
  const char* config; /* "{accesses=8, max_block=512}"                   */
  double seconds;     /* per launch; 0 when it failed                    */
  const char* error;  /* "" unless it failed to compile or launch        */
} jw_tune_timing;

/* The fastest config of one key on one kind of device. Pointers are
 * borrowed from the result: valid until jw_tune_result_free. */
typedef struct jw_tune_result {
  uint32_t struct_size; /* sizeof(jw_tune_result) */
  const void* next;
  const char* key_text; /* the untuned key                               */
  uint64_t hash_lo;     /* its stable 128-bit hash                       */
  uint64_t hash_hi;
  const char* device_kind;
  const char* best; /* the winner's config                               */
  const jw_tune_timing* const* timings; /* the candidates, default first  */
  uint32_t num_timings;
  int32_t stored;   /* kept in a persistent tier (disk, system, remote)  */
  const char* text; /* readable lines: the key, the kind, each candidate */
} jw_tune_result;
JITWARM_EXPORT void jw_tune_result_free(jw_tune_result* result);

/* Benchmarks every candidate config of the key these arguments launch
 * (real device tensors: the launches run) and keeps the fastest for the
 * device's kind: launches and warmups for that kind then use it. options
 * may be NULL. JW_ERROR_INVALID_ARGUMENT for an implementation that is not
 * tunable; JW_ERROR_LAUNCH_FAILED, naming each candidate's failure, when
 * none ran. *out_result is owned by the caller: jw_tune_result_free. */
JITWARM_EXPORT jw_status jw_kernel_tune(jw_kernel_handle* kernel,
                                        const jw_arg_value* args,
                                        uint32_t num_args,
                                        const jw_tune_options* options,
                                        jw_tune_result** out_result);
/* The stored result for `key` (its config ignored) on `device_kind`, from
 * memory or the persistent tiers; *out_result is NULL when there is none.
 * Free with jw_tune_result_free. */
JITWARM_EXPORT jw_status jw_runtime_tune_result(jw_runtime* runtime,
                                                const jw_compile_key* key,
                                                const char* device_kind,
                                                jw_tune_result** out_result);
/* The key (its config ignored) with each config its implementation can
 * compile, the untuned key (the default config) first; an empty list for
 * an implementation that is not tunable. Compiles nothing. Free with
 * jw_compile_key_list_free. */
JITWARM_EXPORT jw_status
jw_runtime_tune_candidates(jw_runtime* runtime, const jw_compile_key* key,
                           jw_compile_key_list** out_keys);
/* The kind of device results are kept per: its model name ("NVIDIA H200")
 * where the platform tells it, else its target. platform NULL: the default
 * platform. Free with jw_string_free. */
JITWARM_EXPORT jw_status jw_runtime_device_kind(jw_runtime* runtime,
                                                const char* platform,
                                                int32_t device,
                                                char** out_kind);

/* --- Specialization (docs/compile-keys.md) ------------------------------- */
/* The type (i32/i64/u64) and value class of an integer. value.kind must be
 * JW_SCALAR_INT or JW_SCALAR_UINT (which cover every integer a key can
 * hold, [-2^63, 2^64)). */
JITWARM_EXPORT jw_status jw_specialize_integer(jw_scalar value,
                                               int32_t do_not_specialize,
                                               jw_int_spec* out_spec);
/* One value of the class: 1; i32 16 / 2; i64 2^31 / 2^31+1; u64 2^63 /
 * 2^63+1. *out_value is JW_SCALAR_INT, or JW_SCALAR_UINT for u64. */
JITWARM_EXPORT jw_status jw_scalar_specialization_rep(jw_int_spec spec,
                                                      jw_scalar* out_value);

/* --- Warmup -------------------------------------------------------------- */
typedef struct jw_warmup_manifest jw_warmup_manifest; /* opaque: requests */

/* A TOML warmup manifest (docs/warmup.md). JW_ERROR_IO for an unreadable
 * file; JW_ERROR_INVALID_ARGUMENT naming file:line for bad content. Free
 * with jw_warmup_manifest_free. */
JITWARM_EXPORT jw_status jw_warmup_manifest_load(const char* path,
                                                 jw_warmup_manifest** out);
/* source_name (may be NULL) names the text in messages. */
JITWARM_EXPORT jw_status jw_warmup_manifest_parse(const char* toml_text,
                                                  size_t length,
                                                  const char* source_name,
                                                  jw_warmup_manifest** out);
JITWARM_EXPORT void jw_warmup_manifest_free(jw_warmup_manifest* manifest);

/* Called after each key (from a worker thread when jobs > 1, one call at a
 * time). key_text is borrowed for the call. */
typedef void (*jw_warmup_progress_fn)(void* ctx, uint64_t done, uint64_t total,
                                      const char* key_text);

typedef struct jw_warmup_options {
  uint32_t struct_size; /* sizeof(jw_warmup_options) */
  const void* next;
  const char* platform; /* NULL: the manifest's, else the default platform */
  const char* target;   /* NULL: the platform's device 0, e.g. "cuda:sm_90" */
  uint32_t jobs;        /* keys compiled at once (threads); 0 = 1          */
  jw_warmup_progress_fn progress; /* may be NULL                          */
  void* progress_ctx;
  /* Appended (R3). Keys of one implementation and target compiled
   * together, in one compiler run (jw_kernel_impl.compile_batch): at most
   * this many; 0: the default (each implementation's preferred batch size,
   * else 8), 1: one by one. */
  uint32_t batch_size;
  /* How `jobs` compile at once: JW_WARMUP_THREADS (0) or
   * JW_WARMUP_PROCESSES (worker processes forked from this one; see
   * docs/warmup.md "Parallel warmup"). */
  uint32_t parallel;
  /* Appended (R3). The kind of device ("NVIDIA H200") whose stored tuning
   * winners the keys of tunable implementations compile (docs/tuning.md);
   * NULL: the detected device's when no target is given, else none (the
   * default configs). */
  const char* device_kind;
} jw_warmup_options;

typedef enum jw_warmup_parallelism JW_ENUM_BASE {
  JW_WARMUP_THREADS = 0,
  JW_WARMUP_PROCESSES = 1
} jw_warmup_parallelism;

typedef struct jw_warmup_key_result {
  uint32_t struct_size; /* sizeof(jw_warmup_key_result) */
  const void* next;
  const char* key_text;
  uint64_t hash_lo;
  uint64_t hash_hi;
  int32_t compiled; /* 0: it was already cached (or it failed)          */
  int32_t failed;
  const char* error; /* "" unless failed                                */
} jw_warmup_key_result;

typedef struct jw_warmup_result {
  uint32_t struct_size; /* sizeof(jw_warmup_result) */
  const void* next;
  const jw_warmup_key_result* const* keys; /* in warmup order             */
  uint64_t num_keys;
  uint64_t compiled;
  uint64_t cached;
  uint64_t failed;
  double seconds;
} jw_warmup_result;
JITWARM_EXPORT void jw_warmup_result_free(jw_warmup_result* result);

/* Compile-only warmup of every key the manifest's requests produce, into
 * the cache the launch path reads. options may be NULL. out_result may be
 * NULL; when given it is filled on JW_OK and on JW_ERROR_COMPILE_FAILED
 * (some keys failed: the last error names how many and the first), and is
 * owned by the caller: free with jw_warmup_result_free. */
JITWARM_EXPORT jw_status jw_runtime_warmup(jw_runtime* runtime,
                                           const jw_warmup_manifest* manifest,
                                           const jw_warmup_options* options,
                                           jw_warmup_result** out_result);
/* The keys jw_runtime_warmup would compile, in order, without duplicates.
 * Free with jw_compile_key_list_free. */
JITWARM_EXPORT jw_status jw_runtime_warmup_plan(
    jw_runtime* runtime, const jw_warmup_manifest* manifest,
    const jw_warmup_options* options, jw_compile_key_list** out_keys);
/* Compile-only warmup of exact keys (from jw_kernel_key_for, a plan or
 * jw_compile_key_decode). Each key's implementation must still win on its
 * platform. Result and status as jw_runtime_warmup. */
JITWARM_EXPORT jw_status jw_runtime_warmup_keys(
    jw_runtime* runtime, const jw_compile_key* const* keys, uint32_t num_keys,
    const jw_warmup_options* options, jw_warmup_result** out_result);

/* --- Seal and the JIT monitor (docs/warmup.md) --------------------------- */
/* From now on a compile on the launch path goes to the JIT monitor. */
JITWARM_EXPORT jw_status jw_runtime_seal(jw_runtime* runtime);
JITWARM_EXPORT jw_status jw_runtime_is_sealed(jw_runtime* runtime,
                                              int32_t* out_sealed);
/* mode: OFF, WARN or ERROR (DEFAULT is refused here). */
JITWARM_EXPORT jw_status jw_runtime_set_jit_monitor(jw_runtime* runtime,
                                                    jw_jit_monitor_mode mode);
JITWARM_EXPORT jw_status
jw_runtime_get_jit_monitor(jw_runtime* runtime, jw_jit_monitor_mode* out_mode);
/* NULL or "": stop recording. */
JITWARM_EXPORT jw_status jw_runtime_set_jit_record_path(jw_runtime* runtime,
                                                        const char* path);

/* --- Counters ------------------------------------------------------------ */
/* Append-only: new counters (the JIT monitor's warnings and refusals) are
 * added at the end; struct_size tells a caller which ones it got. */
typedef struct jw_runtime_counters {
  uint32_t struct_size; /* in: sizeof(jw_runtime_counters); out: filled */
  const void* next;
  uint64_t cache_hits;   /* lookups answered from memory                */
  uint64_t cache_misses; /* lookups that found nothing in memory        */
  uint64_t compiles;     /* calls into an implementation's compile      */
  uint64_t disk_hits;    /* misses answered by the persistent cache     */
  uint64_t disk_writes;  /* entries written to the persistent cache     */
  uint64_t disk_rejects; /* corrupt or mismatched entries: misses       */
  double compile_seconds;
  uint64_t cache_entries; /* artifacts in memory                        */
  /* Appended with "Caches for fleets": the remote tier. A lookup after a
   * local miss is a hit, a miss, a reject (a corrupt value: a miss) or an
   * error; errors also count failed write-backs. */
  uint64_t remote_hits;
  uint64_t remote_misses;
  uint64_t remote_rejects;
  uint64_t remote_errors;
  uint64_t remote_writes; /* entries written back after a compile       */
} jw_runtime_counters;

JITWARM_EXPORT jw_status jw_runtime_get_counters(jw_runtime* runtime,
                                                 jw_runtime_counters* out);

/* The cache's and the JIT monitor's counters in Prometheus' text exposition
 * format (docs/operators.md, "Metrics"), for an exporter to serve. */
JITWARM_EXPORT jw_status jw_runtime_metrics(jw_runtime* runtime,
                                            char** out_text);

/* ======================================================================== */
/* End of "Host application API, continued".                                */
/* ======================================================================== */

/* ======================================================================== */
/* Caches for fleets: the cache settings a runtime uses, bundles that ship  */
/* a warmed cache as one file, and shards of a warmup plan. Ownership as in */
/* "Host application API, continued"; every struct here is allocated by     */
/* the core and freed by the function named next to it.                     */
/* ======================================================================== */

/* Where compiled kernels are kept, as resolved from the options and the
 * environment (docs/architecture.md, "Cache tiers"). Strings are owned by
 * the struct; "" means none. */
typedef struct jw_cache_settings {
  uint32_t struct_size; /* sizeof(jw_cache_settings) */
  const void* next;
  const char* directory;
  /* Where the directory came from: "--cache-dir" (the option),
   * "JITWARM_CACHE_DIR", "the per-user default (...)", "disabled (...)",
   * "none (...)". */
  const char* directory_source;
  int32_t default_directory; /* nonzero: the per-user default            */
  const char* system_directory;
  uint64_t max_bytes; /* 0: no budget                           */
  const char* remote; /* the remote tier's URL, no password     */
  const char* remote_source;
  uint32_t remote_timeout_ms;
  /* A runtime's only: why compiles are not kept in the directory (it
   * cannot be created or written). */
  const char* problem;
  int32_t persistent; /* nonzero: compiled kernels outlive the process  */
  /* Appended with "Trust": the signing key's id ("" none), the trusted
   * keys' ids (16 hex digits each), the remote tier's mode. */
  const char* signing_key_id;
  const char* const* trusted_key_ids;
  uint32_t num_trusted_keys;
  jw_remote_cache_mode remote_cache_mode;
} jw_cache_settings;

/* The settings a runtime with these options would use (options may be
 * NULL); JW_ERROR_INVALID_ARGUMENT names a bad value (a size, a Redis URL,
 * a timeout, a switch). Free with jw_cache_settings_free. */
JITWARM_EXPORT jw_status jw_cache_settings_resolve(
    const jw_runtime_options* options, jw_cache_settings** out_settings);
/* The settings this runtime uses, `problem` included. */
JITWARM_EXPORT jw_status jw_runtime_cache_settings(
    jw_runtime* runtime, jw_cache_settings** out_settings);
JITWARM_EXPORT void jw_cache_settings_free(jw_cache_settings* settings);

typedef struct jw_cache_bundle_target {
  uint32_t struct_size; /* sizeof(jw_cache_bundle_target) */
  const void* next;
  const char* target;
  uint64_t entries;
} jw_cache_bundle_target;

typedef struct jw_cache_bundle_entry {
  uint32_t struct_size; /* sizeof(jw_cache_bundle_entry) */
  const void* next;
  const char* key; /* the key's text */
  const char* target;
  uint64_t bytes; /* the entry, uncompressed */
} jw_cache_bundle_entry;

/* What an export or import did; strings and lists owned by the summary. */
typedef struct jw_cache_bundle_summary {
  uint32_t struct_size; /* sizeof(jw_cache_bundle_summary) */
  const void* next;
  const char* bundle;
  const char* cache_dir;
  uint64_t entries;
  uint64_t written;         /* import: entries added                  */
  uint64_t present;         /* import: identical entries already there */
  uint64_t skipped_corrupt; /* export: corrupt cache entries left out  */
  uint64_t entry_bytes;
  uint64_t file_bytes;
  const jw_cache_bundle_target* const* targets; /* by target          */
  uint32_t num_targets;
  const jw_cache_bundle_entry* const* manifest; /* in bundle order    */
  uint64_t num_entries;
  /* Appended with "Trust": the bundle file's SHA-256 (hex) and its signing
   * key's id ("" when unsigned). */
  const char* sha256;
  const char* signer;
} jw_cache_bundle_summary;
JITWARM_EXPORT void jw_cache_bundle_summary_free(
    jw_cache_bundle_summary* summary);

/* Writes the cache directory's entries (and its system layer's) of these
 * targets (every entry when num_targets is 0) into one compressed,
 * checksummed bundle file. `cache` picks the directory as for a runtime
 * (may be NULL). JW_ERROR_NOT_FOUND: the directory does not exist or holds
 * no such entry; JW_ERROR_IO: the file cannot be written. out_summary may
 * be NULL. */
JITWARM_EXPORT jw_status jw_cache_export_bundle(
    const char* bundle_path, const char* const* targets, uint32_t num_targets,
    const jw_runtime_options* cache, jw_cache_bundle_summary** out_summary);
/* Checks every entry of the bundle, then writes them all into the cache
 * directory (made when missing). A corrupt or truncated bundle is
 * JW_ERROR_INVALID_ARGUMENT naming the entry where reading stopped, and
 * nothing is written. */
JITWARM_EXPORT jw_status
jw_cache_import_bundle(const char* bundle_path, const jw_runtime_options* cache,
                       jw_cache_bundle_summary** out_summary);
/* jw_cache_import_bundle, refusing (JW_ERROR_INVALID_ARGUMENT, nothing
 * written) a bundle whose file's SHA-256 is not `sha256` (hex; NULL or "":
 * no pin). With trusted keys (cache's, else JITWARM_TRUSTED_KEYS) either
 * refuses a bundle not signed by one of them. */
JITWARM_EXPORT jw_status jw_cache_import_bundle_pinned(
    const char* bundle_path, const jw_runtime_options* cache,
    const char* sha256, jw_cache_bundle_summary** out_summary);

/* A signing key pair (docs/operators.md, "Trust"), as `jitwarm cache
 * keygen` writes it. Strings owned by the struct. */
typedef struct jw_cache_key_pair {
  uint32_t struct_size; /* sizeof(jw_cache_key_pair) */
  const void* next;
  const char* secret_key_file; /* mode 0600: jw_runtime_options.signing_key */
  const char* public_key_file; /* secret_key_file + ".pub"                  */
  const char* public_key;      /* its one line: trusted_keys               */
  const char* key_id;          /* 16 hex digits                            */
} jw_cache_key_pair;
/* Writes a new Ed25519 key pair to `path` and `path`.pub; never overwrites
 * (JW_ERROR_ALREADY_EXISTS). out_pair may be NULL; free with
 * jw_cache_key_pair_free. */
JITWARM_EXPORT jw_status jw_cache_keygen(const char* path,
                                         jw_cache_key_pair** out_pair);
JITWARM_EXPORT void jw_cache_key_pair_free(jw_cache_key_pair* pair);

/* --- External cache entries: files another JIT compiler makes (Triton's,
 * through jitwarm.triton.CacheManager), kept in a runtime's persistent tiers
 * (disk, system, remote; bundles carry them) as compiled keys are. The key
 * names the kernel, the compiler (impl_name) and the target; the
 * fingerprint is the compiler's own cache key. Never kept in memory, never
 * seen by the JIT monitor. */

/* A key with no parameters, for an external entry. Free with
 * jw_compile_key_free. */
JITWARM_EXPORT jw_status jw_compile_key_create(const char* kernel_name,
                                               const char* impl_name,
                                               const char* target,
                                               jw_compile_key** out_key);

typedef struct jw_external_entry {
  uint32_t struct_size; /* sizeof(jw_external_entry) */
  const void* next;
  const void* binary; /* its bytes                                  */
  size_t binary_size;
  const char* format;      /* e.g. "triton-file"; must not be empty      */
  const char* entry_point; /* the compiler's name for it (a file name) */
} jw_external_entry;

/* *out_stored: 1 when a tier kept it, 0 when none did (no persistent tier,
 * an entry over the size limit, a failed write: logged). An empty
 * fingerprint or format is JW_ERROR_INVALID_ARGUMENT. */
JITWARM_EXPORT jw_status jw_runtime_store_external_entry(
    jw_runtime* runtime, const jw_compile_key* key, const char* fingerprint,
    const jw_external_entry* entry, int32_t* out_stored);
/* *out_entry: NULL on a miss (a corrupt or mismatched entry is one, counted
 * as a reject); else free with jw_external_entry_free. */
JITWARM_EXPORT jw_status jw_runtime_load_external_entry(
    jw_runtime* runtime, const jw_compile_key* key, const char* fingerprint,
    jw_external_entry** out_entry);
JITWARM_EXPORT void jw_external_entry_free(jw_external_entry* entry);

/* --- Cache administration: what `jitwarm cache stats|list|verify|prune|clear`
 * does, for any host. `cache` picks the directory as for a runtime (may be
 * NULL). None of these makes a directory: a missing one is
 * JW_ERROR_NOT_FOUND, none at all JW_ERROR_INVALID_ARGUMENT. */
typedef struct jw_cache_entry_info {
  uint32_t struct_size; /* sizeof(jw_cache_entry_info) */
  const void* next;
  const char* key; /* the key's text */
  const char* kernel;
  const char* implementation;
  const char* target;
  uint64_t bytes;
  int32_t system; /* nonzero: in the read-only system layer */
} jw_cache_entry_info;

typedef struct jw_cache_listing {
  uint32_t struct_size; /* sizeof(jw_cache_listing) */
  const void* next;
  const char* cache_dir;
  const jw_cache_entry_info* const* entries;
  uint64_t num_entries;
  /* Corrupt entries: their files, and why each is corrupt. */
  const char* const* corrupt_paths;
  const char* const* corrupt_reasons;
  uint64_t num_corrupt;
} jw_cache_listing;
JITWARM_EXPORT void jw_cache_listing_free(jw_cache_listing* listing);

/* Every entry of these targets (all when num_targets is 0), of the system
 * layer too, and every corrupt one. Free with jw_cache_listing_free. */
JITWARM_EXPORT jw_status jw_cache_list(const char* const* targets,
                                       uint32_t num_targets,
                                       const jw_runtime_options* cache,
                                       jw_cache_listing** out_listing);

/* A bundle imported into the cache directory (jw_cache_stats): of its
 * entries, those still present, and of those, the ones a runtime ever
 * loaded. */
typedef struct jw_cache_bundle_use {
  uint32_t struct_size; /* sizeof(jw_cache_bundle_use) */
  const void* next;
  const char* name; /* the bundle file's name when it was imported */
  const char* id;   /* a hash of the bundle file's contents */
  int64_t imported; /* seconds since the epoch (UTC) */
  uint64_t entries;
  uint64_t entries_ever_hit;
} jw_cache_bundle_use;

/* What an action found or did; entries and bytes are the user cache's after
 * it. Free with jw_cache_report_free. */
typedef struct jw_cache_report {
  uint32_t struct_size; /* sizeof(jw_cache_report) */
  const void* next;
  const char* cache_dir;
  uint64_t entries;
  uint64_t bytes;
  uint64_t system_entries; /* stats: the read-only layer */
  uint64_t system_bytes;
  uint64_t corrupt; /* verify */
  const char* const* corrupt_files;
  uint64_t num_corrupt_files;
  uint64_t removed;                                       /* prune, clear */
  uint64_t removed_bytes;                                 /* clear */
  const jw_cache_bundle_target* const* removed_by_target; /* clear */
  uint32_t num_removed_targets;
  /* stats: every bundle imported, oldest first, and why a bundle record
   * was ignored (unreadable or malformed) */
  const jw_cache_bundle_use* const* bundles;
  uint32_t num_bundles;
  const char* const* bundle_problems;
  uint32_t num_bundle_problems;
} jw_cache_report;
JITWARM_EXPORT void jw_cache_report_free(jw_cache_report* report);

JITWARM_EXPORT jw_status jw_cache_stats(const jw_runtime_options* cache,
                                        jw_cache_report** out_report);
/* Reads and checks every entry. */
JITWARM_EXPORT jw_status jw_cache_verify(const jw_runtime_options* cache,
                                         jw_cache_report** out_report);
/* Least recently used entries out, down to the options' cache_max_bytes
 * (else JITWARM_CACHE_MAX_BYTES; neither: JW_ERROR_INVALID_ARGUMENT). */
JITWARM_EXPORT jw_status jw_cache_prune(const jw_runtime_options* cache,
                                        jw_cache_report** out_report);
/* The entries of these targets out (every entry when num_targets is 0). */
JITWARM_EXPORT jw_status jw_cache_clear(const char* const* targets,
                                        uint32_t num_targets,
                                        const jw_runtime_options* cache,
                                        jw_cache_report** out_report);

/* Shard `shard` of `count` (1 <= shard <= count) of a warmup plan, in plan
 * order (jitwarm.hpp warmup_shard: machines that warm one plan between
 * them). Free with jw_compile_key_list_free. */
JITWARM_EXPORT jw_status jw_warmup_shard(const jw_compile_key* const* plan,
                                         uint32_t num_keys, uint32_t shard,
                                         uint32_t count,
                                         jw_compile_key_list** out_keys);

/* ======================================================================== */
/* End of "Caches for fleets".                                              */
/* ======================================================================== */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* JITWARM_JITWARM_H */
