// jitwarm.hpp — the C++ host API of libjitwarm.
//
// Hosts (inference servers, tools, tests) use this header; plugins use only
// jitwarm.h. Everything here throws jitwarm::Error on failure; the C entry
// points in jitwarm.h wrap the same code and turn the exception into a
// status code plus jw_last_error().
#pragma once

#include <jitwarm/jitwarm.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

// libjitwarm is built with hidden visibility and exports what this header
// declares (core/libjitwarm.map, core/check_exports.py).
#pragma GCC visibility push(default)

namespace jitwarm {

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------
class Error : public std::runtime_error {
 public:
  Error(jw_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  jw_status status() const noexcept { return status_; }

 private:
  jw_status status_;
};

// ---------------------------------------------------------------------------
// dtypes and tensor metadata
// ---------------------------------------------------------------------------
std::size_t dtype_size(jw_dtype dtype);
// "float16", "int32", ...; "invalid" for anything else.
std::string_view dtype_name(jw_dtype dtype);
// "f16", "i32", ... as used in compile-key text.
std::string_view dtype_short_name(jw_dtype dtype);
// Accepts the long and the short name. std::nullopt when unknown.
std::optional<jw_dtype> parse_dtype(std::string_view text);
bool is_floating_dtype(jw_dtype dtype);
bool is_integer_dtype(jw_dtype dtype);  // bool excluded

// Storage-free tensor metadata ("warmup tensor"). Strides absent means
// compact row-major.
jw_tensor_meta make_tensor_meta(jw_dtype dtype, std::span<const int64_t> shape,
                                bool aligned_16 = true);
jw_tensor_meta make_tensor_meta(jw_dtype dtype, std::span<const int64_t> shape,
                                std::span<const int64_t> strides,
                                bool aligned_16 = true);
// A runtime tensor; its alignment is read from `data`.
jw_tensor make_tensor(void* data, jw_dtype dtype,
                      std::span<const int64_t> shape, int32_t device = -1);
jw_tensor make_tensor(void* data, jw_dtype dtype,
                      std::span<const int64_t> shape,
                      std::span<const int64_t> strides, int32_t device = -1);
std::vector<int64_t> effective_strides(const jw_tensor_meta& meta);
int64_t element_count(const jw_tensor_meta& meta);
bool is_compact_row_major(const jw_tensor_meta& meta);

// Argument values. Tensors are borrowed: keep them alive for the call.
jw_arg_value arg(const jw_tensor& tensor);
jw_arg_value arg(const jw_scalar& scalar);
jw_arg_value warmup_arg(const jw_tensor_meta& meta);
jw_arg_value arg_int(int64_t value);
jw_arg_value arg_uint(uint64_t value);
jw_arg_value arg_float(double value);
jw_arg_value arg_bool(bool value);
jw_scalar scalar_int(int64_t value);
jw_scalar scalar_uint(uint64_t value);
jw_scalar scalar_float(double value);
jw_scalar scalar_bool(bool value);

// ---------------------------------------------------------------------------
// Specialization (docs/compile-keys.md)
// ---------------------------------------------------------------------------
struct IntSpec {
  jw_int_type type = JW_INT_I32;
  jw_int_class value_class = JW_INT_CLASS_NONE;
  friend bool operator==(const IntSpec&, const IntSpec&) = default;
};

// i32 / i64 / u64 by range and the class one / divisible-by-16 / none.
// Values outside [-2^63, 2^64) throw Error(JW_ERROR_INVALID_ARGUMENT).
IntSpec specialize_integer(__int128 value, bool do_not_specialize = false);
// One value of the class: 1; i32 16 / 2; i64 2^31 / 2^31+1; u64 2^63 / 2^63+1.
__int128 scalar_specialization_rep(IntSpec spec);
// Text of a 128-bit integer (std::to_string has no overload for it).
std::string int128_to_string(__int128 value);

// The specialization of one parameter: jw_param_spec in owning form.
struct ParamSpec {
  std::string name;
  jw_param_kind kind = JW_PARAM_INT;
  jw_dtype dtype = JW_DTYPE_INVALID;                  // tensor
  jw_alignment alignment = JW_ALIGN_NOT_SPECIALIZED;  // tensor
  std::vector<IntSpec> stride_specs;                  // tensor
  IntSpec int_spec;                                   // int, scalar-int
  jw_float_type float_type = JW_FLOAT_F32;            // float, scalar-float
  jw_scalar_kind scalar_kind = JW_SCALAR_NONE;        // scalar
  jw_scalar constexpr_value{JW_SCALAR_NONE, {0}};     // constexpr
  friend bool operator==(const ParamSpec& a, const ParamSpec& b);
  // This parameter's part of CompileKey::text(): "positions:i64*:a16",
  // "BLOCK=1024".
  std::string text() const;
};

struct Hash128 {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
  std::string hex() const;  // 32 lowercase hex digits, hi first
};

// One choice of a tunable implementation's config (a descriptor's [tune]
// table, docs/kernel-descriptors.md): block size, rows per block, ...
struct TuneValue {
  std::string name;
  int64_t value = 0;
  friend auto operator<=>(const TuneValue&, const TuneValue&) = default;
};
// A key's config, sorted by name, each name once; empty: the
// implementation's default config (an untuned key).
using TuneConfig = std::vector<TuneValue>;
// "{rows=2, threads=256}"; "" for the empty config.
std::string tune_config_text(const TuneConfig& config);

// A compile key: kernel, implementation, target and per-parameter
// specialization, in schema order, and the config it is compiled with.
// Immutable once built.
class CompileKey {
 public:
  // `config` is sorted by name; a name given twice throws
  // Error(JW_ERROR_INVALID_ARGUMENT).
  CompileKey(std::string kernel_name, std::string impl_name, std::string target,
             std::vector<ParamSpec> params, TuneConfig config = {});

  const std::string& kernel_name() const { return kernel_name_; }
  const std::string& impl_name() const { return impl_name_; }
  const std::string& target() const { return target_; }
  const std::vector<ParamSpec>& params() const { return params_; }
  const ParamSpec* find_param(std::string_view name) const;
  // The config it is compiled with; empty: the implementation's default.
  const TuneConfig& config() const { return config_; }
  // This key with another config (empty: the untuned key).
  CompileKey with_config(TuneConfig config) const;

  // The one canonical byte encoding (see docs/compile-keys.md).
  const std::string& encoding() const { return encoding_; }
  // XXH3-128 of encoding(); stable across processes, builds and machines.
  Hash128 hash() const { return hash_; }
  // e.g. compute_slot_mapping[cuda:sm_90](positions:i64*:a16, block_size:i32:D,
  //      BLOCK=1024) via cuda-nvrtc — the short kernel name (after the last
  //      dot); a tuned key's config after the parameters: "...(...)
  //      {threads=256} via cuda-nvrtc".
  std::string text() const;
  // Decode an encoding; throws Error(JW_ERROR_INVALID_ARGUMENT) on any
  // malformed, truncated or trailing input.
  static CompileKey decode(std::string_view encoding);

  friend bool operator==(const CompileKey& a, const CompileKey& b) {
    return a.hash_ == b.hash_ && a.encoding_ == b.encoding_;
  }

 private:
  std::string kernel_name_;
  std::string impl_name_;
  std::string target_;
  std::vector<ParamSpec> params_;
  TuneConfig config_;
  std::string encoding_;
  Hash128 hash_;
};

// ---------------------------------------------------------------------------
// Kernel schemas (owning copies of jw_kernel_schema)
// ---------------------------------------------------------------------------
struct ParamDesc {
  std::string name;
  jw_param_kind kind = JW_PARAM_INT;
  uint32_t flags = 0;
  jw_dtype_set allowed_dtypes = 0;
  int32_t rank = -1;
  jw_scalar default_value{JW_SCALAR_NONE, {0}};
  std::string same_dtype_as;
  bool has_flag(jw_param_flag flag) const { return (flags & flag) != 0; }
};

class KernelSchema {
 public:
  // Copies and validates a C schema (unique names, known kinds, ...).
  static KernelSchema from_c(const jw_kernel_schema& schema,
                             std::string origin);

  const std::string& name() const { return name_; }
  std::string short_name() const;  // after the last dot
  const std::string& summary() const { return summary_; }
  const std::string& launch_rule() const { return launch_rule_; }
  const std::string& origin() const { return origin_; }  // who defined it
  const std::vector<ParamDesc>& params() const { return params_; }
  // Index of a parameter, or -1.
  int index_of(std::string_view param_name) const;
  // The same name and parameters (kinds, flags, dtypes, ranks, defaults,
  // dtype rules), whoever defined it.
  bool same_parameters(const KernelSchema& other) const;
  // Index of the parameter params()[param].same_dtype_as names, or -1
  // (resolved once, so the launch path compares no names).
  int same_dtype_index(std::size_t param) const {
    return same_dtype_index_[param];
  }
  // The parameters that follow another's dtype, in order (the launch path
  // checks only these against their tensor).
  const std::vector<uint32_t>& dtype_followers() const {
    return dtype_followers_;
  }

 private:
  std::string name_, summary_, launch_rule_, origin_;
  std::vector<ParamDesc> params_;
  std::vector<int> same_dtype_index_;
  std::vector<uint32_t> dtype_followers_;
};

// The one function that maps arguments to a key (launch path and warmup).
// Validates every argument against the schema first; missing trailing
// arguments with defaults take the default.
CompileKey derive_key(const KernelSchema& schema,
                      std::span<const jw_arg_value> args,
                      std::string_view target, std::string_view impl_name);

// ---------------------------------------------------------------------------
// Plugin loading
// ---------------------------------------------------------------------------
enum class PluginRejection {
  none = 0,
  not_a_shared_object,   // not ELF, wrong class or machine, unreadable
  missing_dependency,    // a library it links against is missing
  load_failed,           // the dynamic loader refused it for another reason
  missing_entry_symbol,  // no jitwarm_plugin_negotiate
  negotiation_failed,    // the entry returned an error
  abi_too_old,           // answered below JITWARM_ABI_VERSION_MIN
  abi_too_new,           // answered above the offered version
  registration_failed,   // register_all failed or registered bad data
  duplicate,             // the same plugin (by name) is already loaded
  // Probed in a child process before loading (PluginLoadOptions::isolate,
  // or refused by PluginLoadOptions::vet), it crashed, exited or hung there:
  // it is never loaded in this process.
  crashed_in_probe,
};
std::string_view to_string(PluginRejection rejection);

struct PluginLoadRecord {
  std::string path;
  bool loaded = false;
  PluginRejection rejection = PluginRejection::none;
  std::string detail;  // why, in words (with both versions for ABI errors)
  std::string plugin_name, plugin_version;
  uint32_t abi_version = 0;            // what the plugin answered
  std::vector<std::string> kernels;    // implementations it registered
  std::vector<std::string> schemas;    // schemas it defined
  std::vector<std::string> platforms;  // platforms it registered, with state
  // Where its implementations stand (docs/plugin-abi.md P10): "user plugin"
  // or "bundled plugin".
  std::string precedence = {};
  // Implementations it registered that were dropped later: "name [platform]:
  // why" (e.g. they waited for a schema their parameter names do not fit).
  // They are no longer in `kernels`.
  std::vector<std::string> dropped = {};
};

// A kernel descriptor of a kernel directory (docs/kernel-descriptors.md):
// implemented by the plugins that compile from source, or rejected and why
// (file:line for descriptors). A bad one never affects the others.
struct KernelFileRecord {
  std::string path;
  bool loaded = false;
  std::string kernel;                  // its schema's name, once read
  std::vector<std::string> platforms;  // where it got an implementation
  std::string detail;                  // why not, or what was skipped
};

struct PluginLoadReport {
  std::vector<std::string> searched_directories;
  std::vector<PluginLoadRecord> records;
  // Kernels from source found in the kernel directories (read after the
  // plugins, so every plugin that compiles source implements them).
  std::vector<std::string> kernel_directories = {};
  std::vector<KernelFileRecord> kernel_files = {};
  // Candidates loaded and rejected: plugin files and kernel descriptors
  // (strict loading refuses a rejected descriptor as it does a plugin).
  std::size_t loaded_count() const;
  std::size_t rejected_count() const;
  std::string to_text() const;
  std::string to_json() const;
};

struct PluginLoadOptions {
  // Directories or files; empty = JITWARM_PLUGIN_PATH, then the installed
  // plugin directory.
  std::vector<std::string> search_path;
  bool strict = false;  // a rejected candidate throws
  // Directories whose plugins are bundled: the lowest precedence, beaten by
  // every user plugin whatever the load order (docs/plugin-abi.md P10).
  // Empty: installed_plugin_directory().
  std::vector<std::string> bundled_directories = {};
  // Called with each candidate file before it is loaded; a returned text
  // rejects the candidate as crashed_in_probe with that detail, and it is
  // not loaded.
  std::function<std::optional<std::string>(const std::string& path)> vet = {};
  // Kernel directories to read after the plugins (descriptors and their
  // sources, docs/kernel-descriptors.md). Empty: JITWARM_KERNEL_PATH, then
  // installed_kernel_directory(); {""}: none.
  std::vector<std::string> kernel_path = {};
  // Load each candidate in a child process first: one that crashes,
  // aborts, exits or runs past probe_timeout_seconds there, in its own
  // code, is rejected (crashed_in_probe: "killed by signal 11 (SIGSEGV)
  // while loading, in jitwarm_plugin_negotiate") and never loaded here; the
  // others load as usual. JITWARM_PLUGIN_ISOLATION=1 turns it on for every load
  // of any host; `jitwarm` always probes. Costs one fork and a load per
  // candidate (docs/reliability.md).
  bool isolate = false;
  double probe_timeout_seconds = 60;
};

// Where this libjitwarm's installation is. An installation is found next to
// the loaded library, so a prefix copied elsewhere and a package that pip
// put into a virtualenv use their own plugins, kernels and data; a library
// with no plugin directory beside it (a build tree) uses the prefix it was
// built for.
struct InstallLocation {
  std::string library;  // the loaded libjitwarm, empty if unknown
  // The directories were found next to `library` (an installation, moved
  // or not), not at the prefix it was built for (a build tree).
  bool found_beside_library = false;
  std::string plugin_directory;  // <libdir>/jitwarm/plugins
  std::string kernel_directory;  // <datadir>/jitwarm/kernels
  std::string data_directory;    // <datadir>/jitwarm
  std::string program;           // <bindir>/jitwarm, the command-line tool
};
const InstallLocation& install_location();

// The installed plugin directory (install_location().plugin_directory).
std::string installed_plugin_directory();
// JITWARM_PLUGIN_PATH's entries, then installed_plugin_directory().
std::vector<std::string> default_plugin_search_path();
// The installed kernel directory (install_location().kernel_directory).
std::string installed_kernel_directory();
// The installed data directory (<datadir>/jitwarm): the conformance
// expectations and the kernel-set manifest.
std::string installed_data_directory();
// JITWARM_KERNEL_PATH's entries, then installed_kernel_directory().
std::vector<std::string> default_kernel_path();
// "a:b::c" -> {"a", "b", "c"}: a colon-separated list of paths, as
// JITWARM_PLUGIN_PATH and the command line write them.
std::vector<std::string> split_path_list(std::string_view list);

// --- Names: what a person types, and what it means (kernel_names.cpp).
// The candidates closest to `typed` (edit distance with transpositions, as
// git suggests commands), best first; empty when none is close enough to
// be what was meant.
std::vector<std::string> closest_spellings(
    std::string_view typed, const std::vector<std::string>& candidates);
// "; did you mean 'x'?" / "; did you mean one of 'x', 'y'?", or "".
std::string did_you_mean(const std::vector<std::string>& suggestions);
// The part of a kernel name after its last dot ("rms_norm").
std::string_view short_kernel_name(std::string_view full_name);
// The full name of the kernel `typed` names among `kernels` (full names):
// the full name itself, or a short name that exactly one kernel has.
// Throws Error(JW_ERROR_NOT_FOUND) for no match (with the closest names)
// and Error(JW_ERROR_INVALID_ARGUMENT) when several kernels have that short
// name, listing them. Runtime::kernel, schema and explain take names so.
std::string resolve_kernel_name(std::string_view typed,
                                const std::vector<std::string>& kernels);
// A target as PLATFORM:ARCH from what a person types (target_names.cpp):
// the shorthand sm_NN and compute_NN is CUDA ("cuda:sm_90"), gfxNNN (with
// AMD feature suffixes) HIP ("hip:gfx942"); a text with a platform is
// returned as it is (the platform's plugin decides whether it knows the
// arch). Throws Error(JW_ERROR_INVALID_ARGUMENT) for anything else, naming
// the accepted forms. WarmupOptions::target, the jitwarm command and the
// Python package read targets so.
std::string parse_target(std::string_view typed);

// A kernel from source (docs/kernel-descriptors.md): its descriptor (TOML)
// and the files its program is made of, by the names its #include lines use.
struct SourceKernel {
  std::string descriptor;
  std::vector<std::pair<std::string, std::string>> files;  // name, text
  std::string origin;  // for messages: the descriptor's path, or the host's
};
// A kernel directory's kernel: the descriptor file and the source files
// beside it (.cu, .cuh, .h, .hpp, .hip, .inc). Throws Error(JW_ERROR_IO)
// naming the file it cannot read.
SourceKernel read_source_kernel(const std::string& descriptor_path);

// ---------------------------------------------------------------------------
// Registry views
// ---------------------------------------------------------------------------
struct ImplementationInfo {
  std::string impl_name;
  std::string platform;
  std::string origin;    // plugin path, or "host: <what the host said>"
  bool pending = false;  // waiting for its schema to be defined
  // Its place on the stack: "host override", "user plugin" or "bundled
  // plugin" (docs/plugin-abi.md P10).
  std::string precedence = {};
};

struct PlatformExplanation {
  std::string platform;
  ImplementationInfo winner;
  std::vector<ImplementationInfo> replaced;  // stack order, below the winner
};

struct KernelExplanation {
  std::string kernel_name;
  std::string schema_origin;
  std::vector<PlatformExplanation> platforms;
  std::string to_text() const;
};

struct PlatformInfo {
  std::string name;
  std::string origin;
  bool can_compile = false;
  bool can_launch = false;
  std::string detail;  // why a capability is missing, e.g. "no CUDA driver"
  int32_t device_count = 0;
};

// ---------------------------------------------------------------------------
// Compile cache
// ---------------------------------------------------------------------------
struct CacheStats {
  uint64_t hits = 0;          // lookups answered from memory
  uint64_t misses = 0;        // lookups that found nothing in memory
  uint64_t compiles = 0;      // calls into an implementation's compile
  uint64_t disk_hits = 0;     // misses answered by the persistent cache
  uint64_t disk_writes = 0;   // entries written to the persistent cache
  uint64_t disk_rejects = 0;  // corrupt or mismatched entries treated as misses
  double compile_seconds = 0;
  std::size_t entries = 0;  // artifacts in memory
  // The remote tier (RuntimeOptions::remote_cache): each lookup after a
  // local miss is a hit, a miss, a reject (a corrupt or mismatched value,
  // treated as a miss) or an error; errors also count write-backs that
  // failed. An error is an operation the server did not answer in time, or
  // refused, or that was skipped while it is down.
  uint64_t remote_hits = 0;
  uint64_t remote_misses = 0;
  uint64_t remote_rejects = 0;
  uint64_t remote_errors = 0;
  uint64_t remote_writes = 0;  // entries written back after a compile
  // Operations the remote tier answered: lookups (hit, miss, reject) and
  // writes.
  uint64_t remote_answered() const {
    return remote_hits + remote_misses + remote_rejects + remote_writes;
  }
};

// ---------------------------------------------------------------------------
// Overrides: register_kernels
// ---------------------------------------------------------------------------
// A move-only RAII handle: destroying (or release()-ing) it removes the
// registered implementations and restores what each replaced.
class RegistrationHandle {
 public:
  RegistrationHandle() = default;
  explicit RegistrationHandle(std::function<void()> release_fn)
      : release_fn_(std::move(release_fn)) {}
  RegistrationHandle(RegistrationHandle&& other) noexcept
      : release_fn_(std::exchange(other.release_fn_, nullptr)) {}
  RegistrationHandle& operator=(RegistrationHandle&& other) noexcept {
    if (this != &other) {
      release();
      release_fn_ = std::exchange(other.release_fn_, nullptr);
    }
    return *this;
  }
  RegistrationHandle(const RegistrationHandle&) = delete;
  RegistrationHandle& operator=(const RegistrationHandle&) = delete;
  ~RegistrationHandle() { release(); }
  void release() {
    if (release_fn_) std::exchange(release_fn_, nullptr)();
  }
  bool active() const { return static_cast<bool>(release_fn_); }

 private:
  std::function<void()> release_fn_;
};

// Arguments as an implementation receives them, in its own order.
using HostLaunchFn =
    std::function<void(std::span<const jw_arg_value> args, void* stream)>;

// A host-side implementation (runs on the host thread; for "cpu" it is the
// kernel, for device platforms it typically enqueues work itself).
// param_names empty: positional in schema order.
struct HostKernel {
  std::string platform = "cpu";
  std::string impl_name;
  std::vector<std::string> param_names;
  HostLaunchFn launch;
};

struct KernelOverride {
  std::string kernel_name;
  // Either a full C implementation (its kernel_name may be null) ...
  std::optional<jw_kernel_impl> impl;
  // ... or a host function.
  std::optional<HostKernel> host;
};

// ---------------------------------------------------------------------------
// Warmup
// ---------------------------------------------------------------------------
struct IntRange {
  int64_t start = 0, stop = 0, step = 1;  // [start, stop)
};

struct TensorChoice {
  jw_dtype dtype = JW_DTYPE_INVALID;  // INVALID: follow the schema
  bool aligned_16 = true;
  std::vector<int64_t> strides;  // only for SPECIALIZE_STRIDES params
};

// One value of one parameter in a warmup request.
using WarmupValue = std::variant<__int128, double, bool, TensorChoice>;

struct WarmupAxis {
  std::vector<WarmupValue> values;
  std::vector<IntRange> ranges;  // appended to values, lazily
  // "file:line" it came from, for messages (manifests). The initializer
  // keeps brace-initialization without it free of warnings.
  std::string origin = {};
};

// One combination of the axes, by parameter name (every parameter present).
struct WarmupAssignment {
  std::vector<std::pair<std::string, WarmupValue>> values;
  const WarmupValue* find(std::string_view name) const;
};

struct WarmupRequest {
  std::string kernel_name;
  std::string platform;  // empty: the warmup's platform
  std::vector<std::pair<std::string, WarmupAxis>> axes;
  // Parameters that vary in lockstep: every axis of a group has the same
  // number of values (ranges are not allowed in zipped groups).
  std::vector<std::vector<std::pair<std::string, WarmupAxis>>> zipped;
  // Combinations for which this returns false are skipped. It sees, per
  // axis, the first value of each specialization class (see docs/warmup.md).
  std::function<bool(const WarmupAssignment&)> filter;
  // Manifest-style filter: a combination matching every entry of one
  // table is skipped.
  std::vector<std::vector<std::pair<std::string, WarmupValue>>> exclude;
  // "file:line" it came from, for messages (manifests). The initializer
  // keeps brace-initialization without it free of warnings.
  std::string origin = {};
};

// Expands a request into keys, in order, without duplicates; parameters
// that do not affect the key collapse. Throws on unknown parameter names.
std::vector<CompileKey> enumerate_warmup_keys(const KernelSchema& schema,
                                              const WarmupRequest& request,
                                              std::string_view target,
                                              std::string_view impl_name);

// Shard `shard` of `count` (1 <= shard <= count) of a warmup plan, in plan
// order, for machines that warm one plan between them (`jitwarm warmup
// --shard I/N`): the plan's keys sorted by hash are dealt out in turn, so
// every machine with the same plan computes the same shards, whatever its
// order; the shards are disjoint, together they are the plan, and their
// sizes differ by at most one. Throws Error(JW_ERROR_INVALID_ARGUMENT) for
// shard numbers outside that range.
std::vector<CompileKey> warmup_shard(const std::vector<CompileKey>& plan,
                                     unsigned shard, unsigned count);

// Storage-free arguments that reproduce `key` through derive_key. Owns the
// metadata its arguments point to.
struct WarmupInputs {
  std::vector<std::unique_ptr<jw_tensor_meta>> tensors;
  std::vector<jw_arg_value> args;
};
// Throws Error naming the expected and the produced key when derive_key
// does not reproduce `key`.
WarmupInputs warmup_inputs_for(const KernelSchema& schema,
                               const CompileKey& key);

struct WarmupManifest {
  std::vector<WarmupRequest> requests;
  std::string source;  // file name, for messages
};
// The file a manifest argument names: `path` itself when it exists (or is
// absolute), else a manifest installed with jitwarm, so the bundled kernel
// set is at hand outside a clone: installed_data_directory()/PATH
// ("manifests/kernel-set.toml", as in a clone) or, for a name without '/',
// installed_data_directory()/manifests/NAME[.toml] ("kernel-set"). `path`
// unchanged when none exists.
std::string warmup_manifest_path(const std::string& path);
// Reads the manifest warmup_manifest_path(path) names (messages name that
// file). Throws Error(JW_ERROR_IO) for unreadable files (with the installed
// manifests closest to a name) and Error(JW_ERROR_INVALID_ARGUMENT) naming
// file:line for malformed content.
WarmupManifest load_warmup_manifest(const std::string& path);
WarmupManifest parse_warmup_manifest(std::string_view toml_text,
                                     const std::string& source_name);
// The file warmup_manifest_path(path) names and its text, read as
// load_warmup_manifest reads it (the same Error(JW_ERROR_IO)), not parsed:
// for a reader of more of a manifest than its requests, which parses the
// text with parse_warmup_manifest and then reads the rest of the same text
// (`jitwarm tune` its [[tune]] tables), so the file is read once.
struct WarmupManifestFile {
  std::string path;
  std::string text;
};
WarmupManifestFile read_warmup_manifest_file(const std::string& path);
// A manifest entry that reproduces exactly this key (for record mode).
std::string manifest_entry_for_key(const KernelSchema& schema,
                                   const CompileKey& key,
                                   std::string_view platform);

// How WarmupOptions::jobs compile at once (docs/warmup.md "Parallel
// warmup"): threads of this process, or worker processes forked from it.
enum class WarmupParallelism { threads, processes };

// The batch size of a warmup that leaves it to an implementation without
// a preference (WarmupOptions::batch_size).
inline constexpr unsigned kDefaultWarmupBatchSize = 8;

struct WarmupOptions {
  std::string platform;  // empty: the runtime's default launch platform
  std::string target;    // empty: the platform's device 0
  unsigned jobs = 1;     // compiles at once (threads)
  // Called after each key: done, total, the key.
  std::function<void(std::size_t, std::size_t, const CompileKey&)> progress =
      {};
  // At most this many keys of one implementation and target are compiled
  // together, in one compiler run, by implementations that can
  // (jw_kernel_impl.compile_batch; docs/warmup.md "Batches"). 0 or 1: one
  // by one. Unset: each implementation's preferred batch size for the
  // target (jw_kernel_impl.preferred_batch_size), else
  // kDefaultWarmupBatchSize.
  std::optional<unsigned> batch_size = std::nullopt;
  // processes: worker processes forked from this one compile (NVRTC and
  // hiprtc scale better across processes than across threads); their
  // artifacts reach this process's cache through the persistent cache (or a
  // private temporary one). The fork takes only the calling thread: start
  // it while no other thread is inside the runtime.
  WarmupParallelism parallel = WarmupParallelism::threads;
  // The kind of device the warmed keys will run on (Runtime::device_kind,
  // e.g. "NVIDIA H200"): a key with a tuning result for that kind is warmed
  // with its winning config, the one a launch there uses (docs/tuning.md).
  // Empty: device 0's kind where the target is detected from it, else none
  // (every key with its default config), so a compile-only warmup for a
  // given target never initializes a driver.
  std::string device_kind = {};
};

struct WarmupKeyResult {
  std::string key_text;
  Hash128 key_hash;
  bool compiled = false;  // false: it was already cached
  bool failed = false;
  std::string error;
  // Why it failed (JW_OK unless failed): JW_ERROR_UNSUPPORTED says the
  // target itself is refused, so every key of it would fail alike.
  jw_status status = JW_OK;
};

struct WarmupResult {
  std::vector<WarmupKeyResult> keys;
  std::size_t compiled = 0, cached = 0, failed = 0;
  double seconds = 0;
  // The remote tier (RuntimeOptions::remote_cache) during this warmup, its
  // worker processes included: operations it answered (lookups that hit,
  // missed or were rejected, entries written) and operations it did not
  // (errors, timeouts, skipped while it was down). Both 0 without a remote
  // tier, or when no key needed it (each was in memory or on disk). None
  // answered and some failed: nothing of this warmup reached it.
  uint64_t remote_answered = 0;
  uint64_t remote_failed = 0;
  // Sets compiled, cached and failed from `keys`.
  void count_outcomes();
};

enum class JitMonitorMode { off, warn, error };
std::optional<JitMonitorMode> parse_jit_monitor_mode(std::string_view text);

// What the JIT monitor saw since the runtime started (docs/warmup.md).
struct JitMonitorStats {
  uint64_t compiles_after_seal = 0;  // launch-path compiles allowed after seal
  uint64_t warnings = 0;  // keys warned about in warn mode (once per key)
  uint64_t refusals = 0;  // launches refused in error mode
  uint64_t recorded = 0;  // keys appended to the record manifest
};

// ---------------------------------------------------------------------------
// Kernels and the runtime
// ---------------------------------------------------------------------------
class Runtime;
// The runtime's internals, for the library's own tests (their header is
// not installed): not part of the API, and not exported (declared outside
// the default-visibility region, so libjitwarm's hidden default holds).
#pragma GCC visibility pop
namespace detail {
struct KernelSlot;
class RuntimeImpl;
RuntimeImpl& impl_of(const Runtime& runtime);
}  // namespace detail
#pragma GCC visibility push(default)

struct LaunchOptions {
  std::string platform;  // empty: the runtime's default launch platform
  int32_t device = 0;
  void* stream = nullptr;
};

// ---------------------------------------------------------------------------
// Tuning (docs/tuning.md)
// ---------------------------------------------------------------------------
// One candidate of a tuning run: seconds per launch, or why it has none.
struct TuneTiming {
  TuneConfig config;
  double seconds = 0;
  std::string error;  // empty: it compiled and ran
};

// The fastest config for one key (untuned) on one kind of device: what
// Runtime::tune measured and stores as a cache entry.
struct TuneResult {
  std::string key_text;  // the untuned key
  Hash128 key_hash;
  std::string device_kind = {};
  TuneConfig best;                  // the winner, every choice named
  std::vector<TuneTiming> timings;  // the candidates, default first
  bool stored = false;  // kept in a persistent tier (disk, system, remote)
  // Readable lines: the key, the device kind, then each candidate with its
  // time and the winner marked.
  std::string to_text() const;
};

struct TuneOptions {
  LaunchOptions launch =
      {};  // platform, device and stream the candidates run on
  uint32_t warmup_launches = 3;  // untimed, per candidate (at most 2^20)
  uint32_t timed_launches = 20;  // per candidate (at most 2^20)
  // Seconds per launch of `candidate`, given `launch_once`, which launches
  // it once, asynchronously on the stream. Unset: the host's steady clock
  // around timed_launches launches after warmup_launches, each side of a
  // platform synchronize. Hosts with device timers (CUDA events) and tests
  // give their own.
  std::function<double(const CompileKey& candidate,
                       const std::function<void()>& launch_once)>
      measure = {};
  // After each candidate: done, total, its timing.
  std::function<void(std::size_t, std::size_t, const TuneTiming&)> progress =
      {};
  bool store = true;  // keep the result (memory and persistent tiers)
};

// A handle to a kernel by name. It resolves the implementation through the
// registry at every launch, so it sees overrides at once. Cheap to copy.
class KernelHandle {
 public:
  const std::string& name() const;
  const KernelSchema& schema() const;
  void launch(std::span<const jw_arg_value> args,
              const LaunchOptions& options = {}) const;
  void launch(std::initializer_list<jw_arg_value> args,
              const LaunchOptions& options = {}) const {
    launch(std::span<const jw_arg_value>(args.begin(), args.size()), options);
  }
  // The key a launch with these arguments would use.
  CompileKey key_for(std::span<const jw_arg_value> args,
                     const LaunchOptions& options = {}) const;
  // Whether a launch with these arguments would find its prepared launch
  // (compiled and loaded: a launch that takes the hit path alone). Counts,
  // compiles, prepares and launches nothing.
  bool is_prepared(std::span<const jw_arg_value> args,
                   const LaunchOptions& options = {}) const;
  // Runtime::tune of this kernel (docs/tuning.md).
  TuneResult tune(std::span<const jw_arg_value> args,
                  const TuneOptions& options = {}) const;

 private:
  friend class Runtime;
  friend class detail::RuntimeImpl;
  KernelHandle(std::shared_ptr<detail::RuntimeImpl> runtime,
               std::shared_ptr<detail::KernelSlot> slot);
  std::shared_ptr<detail::RuntimeImpl> runtime_;
  std::shared_ptr<detail::KernelSlot> slot_;
};

// Whether a runtime writes what it compiles to the remote tier.
enum class RemoteCacheMode { read_write, read_only };
// "read-write" | "read-only", and back (Error(JW_ERROR_INVALID_ARGUMENT)
// for other words).
std::string_view to_string(RemoteCacheMode mode);
RemoteCacheMode parse_remote_cache_mode(std::string_view text);

struct RuntimeOptions {
  // Persistent cache directory; empty: JITWARM_CACHE_DIR, else the per-user
  // default ($XDG_CACHE_HOME/jitwarm, else $HOME/.cache/jitwarm).
  std::string cache_dir;
  // Monitor mode; empty optional: JITWARM_JIT_MONITOR (off|warn|error), else
  // off.
  std::optional<JitMonitorMode> jit_monitor;
  // Record mode: append each post-seal key to this manifest; empty:
  // JITWARM_JIT_RECORD if set.
  std::string jit_record_path;
  // Log sink; default: stderr for warnings and errors (JITWARM_LOG_LEVEL).
  std::function<void(jw_log_level, const std::string&)> log;

  // More cache settings (appended, so brace-initialization of the fields
  // above still works; the initializers keep it free of warnings).
  // resolve_cache_settings() says what each one left empty becomes.
  // No persistent cache directory at all (memory, and the remote tier if
  // any), whatever cache_dir and the environment say.
  bool no_cache_dir = false;
  // The read-only system cache under the directory; empty:
  // JITWARM_SYSTEM_CACHE_DIR.
  std::string system_cache_dir = {};
  // The directory's size budget in bytes; nullopt: JITWARM_CACHE_MAX_BYTES,
  // else none.
  std::optional<uint64_t> cache_max_bytes = {};
  // The shared remote tier, "redis://[:password@]host[:port][/db]"; empty:
  // JITWARM_REMOTE_CACHE, else none.
  std::string remote_cache = {};
  bool no_remote_cache = false;  // none, whatever the environment says
  // Bound on each wait for the remote tier (connect, send, receive); 0:
  // JITWARM_REMOTE_CACHE_TIMEOUT_MS, else 1000 ms.
  std::chrono::milliseconds remote_timeout = {};
  // How errors and CacheSettings::remote_source name the options above: as
  // the jitwarm command's flags ("--remote-cache 'x' is not a Redis URL"),
  // or as keyword arguments ("remote_cache 'x' ...": the Python package),
  // so a message names what its reader typed.
  enum class OptionNames { command_line, keywords };
  OptionNames option_names = OptionNames::command_line;
  // Trust (docs/operators.md, "Trust"). The secret key file (`jitwarm cache
  // keygen`) that signs every entry written; empty: JITWARM_SIGNING_KEY,
  // else entries are written unsigned.
  std::string signing_key = {};
  // Public keys whose signatures are trusted, each its text
  // ("jitwarm-ed25519:...") or a file of them; with any, only entries
  // signed by one of them are loaded, from every tier. Empty:
  // JITWARM_TRUSTED_KEYS (comma-separated), else none (nothing checked).
  std::vector<std::string> trusted_keys = {};
  // read_only: load from the remote tier, never write to it; nullopt:
  // JITWARM_REMOTE_CACHE_MODE (read-write|read-only), else read_write.
  std::optional<RemoteCacheMode> remote_cache_mode = {};
};

// ---------------------------------------------------------------------------
// Cache settings, resolved in one place (docs/architecture.md, "Cache tiers")
// ---------------------------------------------------------------------------
// Where the persistent cache directory came from, or why there is none.
enum class CacheDirSource {
  option,                   // RuntimeOptions::cache_dir (--cache-dir)
  environment,              // JITWARM_CACHE_DIR
  xdg_cache_home,           // the per-user default: $XDG_CACHE_HOME/jitwarm
  home,                     // the per-user default: $HOME/.cache/jitwarm
  disabled_by_option,       // RuntimeOptions::no_cache_dir (--no-cache-dir)
  disabled_by_environment,  // JITWARM_NO_CACHE_DIR
  no_home,                  // no default: neither XDG_CACHE_HOME nor HOME
};
// "--cache-dir", "JITWARM_CACHE_DIR", "the per-user default
// ($XDG_CACHE_HOME/jitwarm)", "disabled (--no-cache-dir)", ...
std::string_view to_string(CacheDirSource source);

struct CacheSettings {
  std::string directory;  // empty: none (directory_source says why)
  CacheDirSource directory_source = CacheDirSource::no_home;
  std::string system_directory;  // read only; empty: none
  uint64_t max_bytes = 0;        // 0: no budget
  // The remote tier's URL as given (it may hold a password); empty: none.
  std::string remote;
  // The same without its password ("redis://:***@host:6379/0"), to print.
  std::string remote_display;
  // "--remote-cache", "JITWARM_REMOTE_CACHE", "disabled (--no-remote-cache)"
  // or "" (none asked for).
  std::string remote_source;
  std::chrono::milliseconds remote_timeout{1000};
  RemoteCacheMode remote_mode = RemoteCacheMode::read_write;
  // Trust: the secret key file that signs what is written (empty: entries
  // are unsigned) and its key id (16 hex digits); the trusted public keys'
  // text (empty: nothing is checked), and where each setting came from
  // ("--signing-key", "JITWARM_SIGNING_KEY", ...).
  std::string signing_key;
  std::string signing_key_id;
  std::string signing_key_source;
  std::vector<std::string> trusted_keys;
  std::vector<std::string> trusted_key_ids;
  std::string trusted_keys_source;
  // Set by a runtime (Runtime::cache_settings): why compiles are not kept
  // in `directory` ("cannot create cache directory D: Permission denied",
  // "cache directory D cannot be written (Read-only file system)"); empty
  // when they are. A default directory that cannot be created is a warning
  // (memory only); a named one is an error.
  std::string problem;
  // Whether compiled artifacts outlive the process somewhere.
  bool persistent() const {
    return (!directory.empty() && problem.empty()) || !remote.empty();
  }
  bool default_directory() const {
    return directory_source == CacheDirSource::xdg_cache_home ||
           directory_source == CacheDirSource::home;
  }
};

// The one resolution of every cache setting, for runtimes, the jitwarm
// command and the Python package. Each option set in `options` wins; then
// the environment (JITWARM_NO_CACHE_DIR, JITWARM_CACHE_DIR,
// JITWARM_SYSTEM_CACHE_DIR, JITWARM_CACHE_MAX_BYTES, JITWARM_REMOTE_CACHE,
// JITWARM_REMOTE_CACHE_TIMEOUT_MS, JITWARM_REMOTE_CACHE_MODE,
// JITWARM_SIGNING_KEY, JITWARM_TRUSTED_KEYS); then the defaults. Creates
// nothing. Throws Error(JW_ERROR_INVALID_ARGUMENT) naming the setting for a
// bad value (a size, a Redis URL, a timeout, a switch that is not 0/1, a
// key that does not read).
CacheSettings resolve_cache_settings(const RuntimeOptions& options = {});

// ---------------------------------------------------------------------------
// Cache bundles: a warmed cache as one file (docs/architecture.md, "Cache
// tiers"; the format is in core/src/cache_bundle.hpp)
// ---------------------------------------------------------------------------
struct CacheBundleEntry {
  std::string key;  // the key's text
  std::string target;
  uint64_t bytes = 0;  // the entry, uncompressed
};

struct CacheBundleSummary {
  std::string bundle;     // the file
  std::string cache_dir;  // exported from, or imported into
  std::size_t entries = 0;
  std::size_t written = 0;  // import: entries added (or repaired)
  std::size_t present = 0;  // import: identical entries already there
  // Export: corrupt entries of the cache, left out.
  std::size_t skipped_corrupt = 0;
  uint64_t entry_bytes = 0;  // the entries, uncompressed
  uint64_t file_bytes = 0;   // the bundle file
  std::string sha256;        // of the bundle file, in hex (import --sha256)
  std::string signer;        // the signing key's id; empty: unsigned
  // Entries per target, by target.
  std::vector<std::pair<std::string, std::size_t>> targets;
  std::vector<CacheBundleEntry> manifest;  // every entry, in bundle order
};

// Writes the entries of the cache directory (and of its system layer)
// whose target is one of `targets` (every entry when empty) into one
// zstd-compressed, checksummed file, written to a temporary file and
// renamed. `cache` picks the directory as a runtime would
// (resolve_cache_settings). Throws Error: JW_ERROR_NOT_FOUND when the
// directory is missing or holds no such entry, JW_ERROR_INVALID_ARGUMENT
// when there is no directory, JW_ERROR_IO when the file cannot be written.
CacheBundleSummary export_cache_bundle(const std::string& bundle_path,
                                       const std::vector<std::string>& targets,
                                       const RuntimeOptions& cache = {});
// Checks every entry of the bundle, then writes them into the cache
// directory (created when missing). A truncated or corrupt bundle is
// Error(JW_ERROR_INVALID_ARGUMENT) naming the entry where reading stopped,
// and nothing is written; a missing one JW_ERROR_NOT_FOUND. With trusted
// keys (`cache`'s trusted_keys, else JITWARM_TRUSTED_KEYS) a bundle not
// signed by one of them, and with `pinned_sha256` (hex) a bundle whose file
// has another SHA-256, is Error(JW_ERROR_INVALID_ARGUMENT) too, before
// anything is written. export_cache_bundle signs the bundle (and its
// entries) with `cache`'s signing key, if any.
CacheBundleSummary import_cache_bundle(const std::string& bundle_path,
                                       const RuntimeOptions& cache = {},
                                       std::string_view pinned_sha256 = {});

// ---------------------------------------------------------------------------
// Signing keys for cache entries and bundles (docs/operators.md, "Trust")
// ---------------------------------------------------------------------------
struct CacheKeyPair {
  std::string secret_key_file;  // mode 0600: RuntimeOptions::signing_key
  std::string public_key_file;  // secret_key_file + ".pub"
  std::string public_key;       // its one line: RuntimeOptions::trusted_keys
  std::string key_id;           // 16 hex digits, as signed entries name it
};
// Writes a new Ed25519 key pair to `path` and `path`.pub. Refuses to
// overwrite either: Error(JW_ERROR_ALREADY_EXISTS); JW_ERROR_IO when a file
// cannot be written.
CacheKeyPair write_cache_key_pair(const std::string& path);

// ---------------------------------------------------------------------------
// Cache administration: what `jitwarm cache stats|list|verify|prune|clear`
// does, for any host. `cache` picks the directory as a runtime would
// (resolve_cache_settings). None of these makes a directory: a missing one
// is Error(JW_ERROR_NOT_FOUND), no directory at all (disabled, no home)
// Error(JW_ERROR_INVALID_ARGUMENT).
// ---------------------------------------------------------------------------
struct CacheEntryInfo {
  std::string key;  // the key's text
  std::string kernel;
  std::string implementation;
  std::string target;
  uint64_t bytes = 0;
  bool system = false;  // in the read-only system layer
};

struct CorruptCacheEntry {
  std::string path;
  std::string why;
};

struct CacheListing {
  std::string cache_dir;
  std::vector<CacheEntryInfo> entries;  // of the targets asked for
  std::vector<CorruptCacheEntry> corrupt;
};

// A bundle imported into the cache directory (import_cache_bundle keeps a
// record of it under bundles/): how many of its entries the directory still
// holds, and how many of those a runtime has ever loaded.
struct CacheBundleUse {
  std::string name;         // the bundle file's name when it was imported
  std::string id;           // a hash of the bundle file's contents
  int64_t imported = 0;     // when, in seconds since the epoch (UTC)
  std::size_t entries = 0;  // of its entries, those still present
  std::size_t entries_ever_hit = 0;  // of those, ever loaded by a runtime
};

// What an action found or did. `entries` and `bytes` are the user cache's
// after the action.
struct CacheReport {
  std::string cache_dir;
  std::size_t entries = 0;
  uint64_t bytes = 0;
  std::size_t system_entries = 0;  // stats: the read-only layer
  uint64_t system_bytes = 0;
  std::size_t corrupt = 0;  // verify
  std::vector<std::string> corrupt_files;
  // verify: entries per signing key id ("" for unsigned ones), and with
  // trusted keys, the entries they refuse and why.
  std::vector<std::pair<std::string, std::size_t>> signers;
  std::vector<CorruptCacheEntry> untrusted;
  std::size_t removed = 0;     // prune, clear
  uint64_t removed_bytes = 0;  // clear
  // clear: entries removed per target ("(corrupt)" for unreadable ones).
  std::vector<std::pair<std::string, std::size_t>> removed_by_target;
  // stats: every bundle imported into the directory, oldest first, and
  // why a bundle record was ignored (unreadable, malformed).
  std::vector<CacheBundleUse> bundles;
  std::vector<std::string> bundle_problems;
};

// Every entry of the directory and of its system layer whose target is
// one of `targets` (all when empty), and every corrupt one with why.
CacheListing list_cache(const std::vector<std::string>& targets = {},
                        const RuntimeOptions& cache = {});
// Entries and bytes of the directory, and of its system layer.
CacheReport cache_directory_stats(const RuntimeOptions& cache = {});
// Reads and checks every entry (and its signature, with trusted keys in
// `cache`); removes stale files of dead writers.
CacheReport verify_cache(const RuntimeOptions& cache = {});
// Removes least recently used entries down to the budget (cache_max_bytes,
// else JITWARM_CACHE_MAX_BYTES; none is Error(JW_ERROR_INVALID_ARGUMENT)).
CacheReport prune_cache(const RuntimeOptions& cache = {});
// Removes the entries of `targets` (every entry when empty).
CacheReport clear_cache(const std::vector<std::string>& targets = {},
                        const RuntimeOptions& cache = {});
// "512M" -> 536870912: bytes, or a K/M/G suffix (binary). Throws
// Error(JW_ERROR_INVALID_ARGUMENT) for anything else or past 2^64 - 1.
uint64_t parse_byte_size(std::string_view text);

// An entry another JIT compiler made (Runtime::store_external_entry).
struct ExternalEntry {
  std::string binary;       // its bytes
  std::string format;       // what they are, e.g. "triton-file"
  std::string entry_point;  // the compiler's name for them (a file name)
};

// Why a key would miss the persistent cache (Runtime::explain_miss): the
// entries of its kernel on its platform that come nearest, and what sets
// each apart from the key (docs/cli.md, "cache why").
struct MissFactor {
  // "compiler", "options", "source", "header <name>", "target", "jitwarm
  // version", "implementation", "name expression", "parameter <name>",
  // "fingerprint line" for a fingerprint without "label: value" lines, or
  // "signature" for the very entry, refused by the trusted keys.
  std::string name;
  std::string wanted;  // the key's (or its fingerprint's); "(none)"
  std::string found;   // the entry's; "(none)"
};
struct MissNeighbour {
  std::string key;  // the entry's key text
  std::string target;
  bool system = false;              // in the read-only system layer
  std::vector<MissFactor> factors;  // never empty
};
struct MissExplanation {
  std::string key;  // the key's text
  bool would_hit = false;
  // Why nothing was compared, when nothing was: no persistent cache, an
  // implementation without a fingerprint (never kept on disk).
  std::string not_kept;
  std::size_t entries = 0;  // readable entries the cache holds
  // Entries of the key's kernel on its platform, nearest (fewest factors)
  // first, at most kMaxNeighbours; empty on a miss: no entry of this
  // kernel and target.
  std::vector<MissNeighbour> neighbours;
  static constexpr std::size_t kMaxNeighbours = 3;
  // "would hit", or "no entry of this kernel and target", or each
  // neighbour with its factors, one per line.
  std::string to_text() const;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  PluginLoadReport load_plugins(const PluginLoadOptions& options = {});
  PluginLoadRecord load_plugin(const std::string& path, bool strict = false);
  // Every report produced so far, in order.
  std::vector<PluginLoadRecord> load_history() const;

  // A full name, or a short one ("rms_norm") that exactly one kernel has
  // (resolve_kernel_name). Every API that names a kernel takes names alike
  // (schema, implementations, explain, tune, register_kernels,
  // WarmupRequest::kernel_name). Throws Error(JW_ERROR_NOT_FOUND) for
  // unknown names, with the closest ones, and
  // Error(JW_ERROR_INVALID_ARGUMENT) for a short name several kernels have.
  KernelHandle kernel(std::string_view name) const;
  std::vector<std::string> kernel_names() const;  // sorted
  const KernelSchema& schema(std::string_view name) const;
  // Also those waiting for their schema (by the kernel's full name).
  std::vector<ImplementationInfo> implementations(std::string_view name) const;
  KernelExplanation explain(std::string_view name) const;
  // With each platform's device count, which initializes its driver: a
  // process that forks children that use a device (after a compile-only
  // warmup, say) asks after the fork, or reads load_history(), which loading
  // fills without asking for devices.
  std::vector<PlatformInfo> platforms() const;
  // The platform launches go to when none is given: the first of cuda, hip,
  // cpu (then any other) that has a device and can launch. Counts devices,
  // as platforms() does.
  std::string default_platform() const;
  // Why default_platform() is cpu, the CPU reference, although a platform
  // that compiles for a GPU is loaded ("cuda has no device here"; the load
  // report says why), or "" when it is not so. A warmup that takes the default
  // platform (no platform or target given, none in its requests) logs it
  // as a warning, and `jitwarm warmup` and `cache why` print it, so a
  // GPU-less build box never warms the CPU reference unsaid.
  std::string cpu_fallback_reason() const;
  // "cuda:sm_90" for a device; throws JW_ERROR_NO_DEVICE without one.
  std::string target_for(std::string_view platform, int32_t device = 0) const;

  // Host overrides. All or nothing: on error nothing is registered.
  RegistrationHandle register_kernels(std::vector<KernelOverride> overrides,
                                      std::string origin = "host");
  // A kernel from source: every loaded plugin that compiles source (and
  // every one loaded later) implements it on its platform; its descriptor
  // may define its schema. Throws Error naming the descriptor's file:line
  // when no plugin can take it. The handle removes the implementations
  // (the schema, once defined, stays: docs/kernel-descriptors.md).
  RegistrationHandle register_source_kernel(SourceKernel kernel);
  // The kernels from source registered so far (kernel directories and
  // hosts), as given: their descriptors (conformance reads their cases).
  std::vector<SourceKernel> source_kernels() const;

  // Compile-only warmup into the launch path's cache.
  WarmupResult warmup(const std::vector<WarmupRequest>& requests,
                      const WarmupOptions& options = {});
  // The keys warmup(requests, options) would compile, in order, without
  // duplicates (for tools that split the work, e.g. across processes).
  std::vector<CompileKey> warmup_plan(
      const std::vector<WarmupRequest>& requests,
      const WarmupOptions& options = {});
  // Compile-only warmup of exact keys (e.g. keys a launch would use, from
  // KernelHandle::key_for). Each key's implementation must still be the
  // winner on its target's platform.
  WarmupResult warmup_keys(const std::vector<CompileKey>& keys,
                           const WarmupOptions& options = {});
  // From now on a compile on the launch path goes to the JIT monitor.
  void seal();
  bool sealed() const;
  void set_jit_monitor(JitMonitorMode mode);
  JitMonitorMode jit_monitor() const;
  void set_jit_record_path(std::string path);
  JitMonitorStats jit_monitor_stats() const;

  CacheStats cache_stats() const;
  // The cache's and the JIT monitor's counters in Prometheus' text
  // exposition format (docs/operators.md, "Metrics").
  std::string metrics_text() const;
  // The cache settings this runtime uses (resolve_cache_settings of its
  // options, with `problem` set when its directory cannot keep entries).
  const CacheSettings& cache_settings() const;
  // Whether an artifact for this key is in the in-memory cache.
  bool is_cached(const CompileKey& key) const;
  // Whether `key` would hit (memory, disk or system layer), and if not,
  // which entries of its kernel on its platform come nearest and what
  // differs. Reads entries and asks the key's implementation for its
  // fingerprint, as a compile would; compiles nothing. Throws
  // Error(JW_ERROR_NOT_FOUND) for a kernel or implementation not loaded.
  MissExplanation explain_miss(const CompileKey& key) const;
  // The configs `key`'s implementation can compile it with (a descriptor's
  // [tune] table, docs/kernel-descriptors.md), its default first, each
  // sorted by name; empty for an implementation that is not tunable. `key`'s
  // own config is ignored. Compiles nothing. Throws
  // Error(JW_ERROR_NOT_FOUND) for a kernel or implementation not loaded.
  std::vector<TuneConfig> tune_candidates(const CompileKey& key) const;
  // Benchmarks every candidate config of the key these arguments launch
  // (real device tensors: the launches run), keeps the fastest and, with
  // options.store, stores it for the device's kind: from then on a launch
  // of that key on a device of that kind, in this runtime or any sharing
  // its cache tiers, uses the winner, and so does a warmup for that kind.
  // Throws Error(JW_ERROR_INVALID_ARGUMENT) for an implementation that is
  // not tunable, and Error naming each candidate's failure when none ran.
  // With options.store, this runtime's launches of the kernel prepared
  // before prepare again (once per signature), so they run the winner too.
  TuneResult tune(std::string_view kernel, std::span<const jw_arg_value> args,
                  const TuneOptions& options = {});
  // The stored result for `key` (its own config ignored) on `device_kind`,
  // or nullopt: read from memory, else the persistent tiers. A result whose
  // winner the implementation no longer offers is none.
  std::optional<TuneResult> tune_result(const CompileKey& key,
                                        std::string_view device_kind) const;
  // The kind of a device that tuning results are kept per: its model name
  // ("NVIDIA H200") where the platform tells it, else its target
  // ("cuda:sm_90"). Initializes the platform's driver, as target_for does.
  std::string device_kind(std::string_view platform = {},
                          int32_t device = 0) const;
  // The artifact a launch of this key runs (for tools that inspect or ship
  // binaries, and for comparing against a raw driver launch), or nullopt
  // when it is not in memory. The views stay valid while the runtime lives.
  struct ArtifactInfo {
    std::string_view binary;
    std::string_view format;
    std::string_view entry_point;
  };
  std::optional<ArtifactInfo> cached_artifact(const CompileKey& key) const;

  // Entries another JIT compiler makes (Triton's cache files, through
  // jitwarm.triton.CacheManager), kept in this runtime's persistent tiers
  // (disk, system, remote) as compiled keys are, so bundles, `jitwarm cache`
  // and the remote tier carry them too. `key` names the kernel, the
  // compiler (impl_name) and the target; `fingerprint` is the compiler's
  // own cache key. Never in memory and never seen by the JIT monitor: the
  // compiler that owns them caches and watches what it loads.
  // Throws Error(JW_ERROR_INVALID_ARGUMENT) for an empty fingerprint or
  // format; false when no tier kept it (none, an entry over the tiers' size
  // limit, a failed write: logged).
  bool store_external_entry(const CompileKey& key, std::string_view fingerprint,
                            const ExternalEntry& entry);
  // nullopt on a miss; a corrupt, truncated or mismatched entry is a miss
  // (counted in cache_stats().disk_rejects or remote_rejects).
  std::optional<ExternalEntry> load_external_entry(
      const CompileKey& key, std::string_view fingerprint);

  // Platform services (memory) for tests, benchmarks and the conformance
  // runner.
  const jw_platform_desc& platform(std::string_view name) const;

  void log(jw_log_level level, const std::string& message) const;

 private:
  friend detail::RuntimeImpl& detail::impl_of(const Runtime& runtime);
  std::shared_ptr<detail::RuntimeImpl> impl_;
};

}  // namespace jitwarm

#pragma GCC visibility pop
