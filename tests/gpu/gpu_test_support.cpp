// Key, argument and host fakes for tests/gpu.
#include "gpu_test_support.hpp"

#include <jitwarm/plugin.hpp>

#include "kernel_set.hpp"

#include <doctest/doctest.h>

#include <dlfcn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

// The GPU layer reports errors through the plugin's host table; the test
// executables link it directly, so they provide the table's storage.
JITWARM_DEFINE_PLUGIN_HOST_API()

namespace jitwarm::gpu_test {
namespace {

const jw_kernel_schema& schema_of(std::string_view kernel_name) {
  const jw_kernel_schema* schema = kernel_set::find_schema(kernel_name);
  if (schema == nullptr) {
    throw std::invalid_argument("no kernel " + std::string(kernel_name));
  }
  return *schema;
}

jw_dtype default_dtype(jw_dtype_set allowed) {
  if (allowed == 0) return JW_DTYPE_FLOAT32;
  for (jw_dtype d : {JW_DTYPE_FLOAT32, JW_DTYPE_FLOAT16, JW_DTYPE_BFLOAT16}) {
    if ((allowed & JW_DTYPE_BIT(d)) != 0) return d;
  }
  for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
    if ((allowed & JW_DTYPE_BIT(d)) != 0) return static_cast<jw_dtype>(d);
  }
  return JW_DTYPE_INVALID;
}

// Typical values for constexprs without a schema default.
int64_t typical_constexpr(std::string_view name) {
  if (name == "MAX_NUM_TOKENS") return 8;
  if (name == "BLOCK_SIZE") return 256;
  if (name == "ROW_SIZE") return 1024;
  if (name == "BLOCK_T") return 16;
  if (name == "BLOCK_D") return 64;
  return 1;
}

bool is_float_dtype(jw_dtype d) {
  return d == JW_DTYPE_FLOAT16 || d == JW_DTYPE_BFLOAT16 ||
         d == JW_DTYPE_FLOAT32 || d == JW_DTYPE_FLOAT64;
}

std::string_view short_dtype(jw_dtype d) {
  switch (d) {
    case JW_DTYPE_BOOL: return "b8";
    case JW_DTYPE_INT8: return "i8";
    case JW_DTYPE_INT16: return "i16";
    case JW_DTYPE_INT32: return "i32";
    case JW_DTYPE_INT64: return "i64";
    case JW_DTYPE_UINT8: return "u8";
    case JW_DTYPE_UINT16: return "u16";
    case JW_DTYPE_UINT32: return "u32";
    case JW_DTYPE_UINT64: return "u64";
    case JW_DTYPE_FLOAT16: return "f16";
    case JW_DTYPE_BFLOAT16: return "bf16";
    case JW_DTYPE_FLOAT32: return "f32";
    case JW_DTYPE_FLOAT64: return "f64";
    default: return "?";
  }
}

std::string int_text(jw_int_spec s) {
  std::string t(jitwarm::plugin::int_type_name(s.type).value_or("u64"));
  if (s.value_class == JW_INT_CLASS_ONE) t += ":1";
  if (s.value_class == JW_INT_CLASS_DIV16) t += ":D";
  return t;
}

}  // namespace

// --- TestKey -------------------------------------------------------------

TestKey::TestKey(std::string_view kernel_name, std::string target)
    : kernel_(kernel_name), target_(std::move(target)) {
  const jw_kernel_schema& schema = schema_of(kernel_name);
  descs_ = schema.params;
  for (uint32_t i = 0; i < schema.num_params; ++i) {
    const jw_param_desc& desc = schema.params[i];
    jw_param_spec spec{};
    spec.struct_size = sizeof(jw_param_spec);
    spec.name = desc.name;
    spec.kind = desc.kind;
    switch (desc.kind) {
      case JW_PARAM_TENSOR:
        spec.dtype = default_dtype(desc.allowed_dtypes);
        spec.alignment =
            (desc.flags & JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT) != 0
                ? JW_ALIGN_NOT_SPECIALIZED
                : JW_ALIGN_16;
        break;
      case JW_PARAM_INT: spec.int_spec = {JW_INT_I32, JW_INT_CLASS_NONE}; break;
      case JW_PARAM_FLOAT:
        spec.float_type =
            (desc.flags & JW_PARAM_FLOAT64) != 0 ? JW_FLOAT_F64 : JW_FLOAT_F32;
        break;
      case JW_PARAM_SCALAR:
        spec.int_spec = {JW_INT_I32, JW_INT_CLASS_NONE};
        spec.float_type = JW_FLOAT_F32;
        spec.scalar_kind = JW_SCALAR_INT;
        break;
      case JW_PARAM_CONSTEXPR:
        spec.constexpr_value.kind = JW_SCALAR_INT;
        spec.constexpr_value.value.i = (desc.flags & JW_PARAM_HAS_DEFAULT) != 0
                                           ? desc.default_value.value.i
                                           : typical_constexpr(desc.name);
        break;
    }
    params_.push_back(spec);
  }
  // Scalars follow the kind of their tensor.
  for (uint32_t i = 0; i < schema.num_params; ++i) {
    if (descs_[i].kind == JW_PARAM_TENSOR) {
      dtype(descs_[i].name, params_[i].dtype);
    }
  }
}

jw_param_spec& TestKey::find(std::string_view name) {
  for (jw_param_spec& p : params_) {
    if (name == p.name) return p;
  }
  throw std::invalid_argument(kernel_ + " has no parameter " +
                              std::string(name));
}

const jw_param_spec& TestKey::param(std::string_view name) const {
  return const_cast<TestKey*>(this)->find(name);
}

TestKey& TestKey::dtype(std::string_view param, jw_dtype dtype) {
  find(param).dtype = dtype;
  // Propagate along same_dtype_as links, both directions.
  bool changed = true;
  std::vector<std::string> group{std::string(param)};
  while (changed) {
    changed = false;
    for (uint32_t i = 0; i < params_.size(); ++i) {
      const jw_param_desc& desc = descs_[i];
      if (desc.same_dtype_as == nullptr) continue;
      const bool linked_to = std::find(group.begin(), group.end(),
                                       desc.same_dtype_as) != group.end();
      const bool linked_from =
          std::find(group.begin(), group.end(), desc.name) != group.end();
      if (linked_to && !linked_from) {
        group.emplace_back(desc.name);
        changed = true;
      } else if (linked_from && std::find(group.begin(), group.end(),
                                          desc.same_dtype_as) == group.end()) {
        group.emplace_back(desc.same_dtype_as);
        changed = true;
      }
    }
  }
  for (uint32_t i = 0; i < params_.size(); ++i) {
    if (std::find(group.begin(), group.end(), descs_[i].name) == group.end()) {
      continue;
    }
    if (params_[i].kind == JW_PARAM_TENSOR) params_[i].dtype = dtype;
    if (params_[i].kind == JW_PARAM_SCALAR) {
      params_[i].scalar_kind =
          is_float_dtype(dtype) ? JW_SCALAR_FLOAT : JW_SCALAR_INT;
    }
  }
  return *this;
}

TestKey& TestKey::aligned(std::string_view param, bool aligned16) {
  find(param).alignment = aligned16 ? JW_ALIGN_16 : JW_ALIGN_NONE;
  return *this;
}

TestKey& TestKey::all_aligned(bool aligned16) {
  for (uint32_t i = 0; i < params_.size(); ++i) {
    if (params_[i].kind == JW_PARAM_TENSOR &&
        params_[i].alignment != JW_ALIGN_NOT_SPECIALIZED) {
      params_[i].alignment = aligned16 ? JW_ALIGN_16 : JW_ALIGN_NONE;
    }
  }
  return *this;
}

TestKey& TestKey::integer(std::string_view param, jw_int_type type,
                          jw_int_class value_class) {
  jw_param_spec& p = find(param);
  p.int_spec = {type, value_class};
  if (p.kind == JW_PARAM_SCALAR) p.scalar_kind = JW_SCALAR_INT;
  return *this;
}

TestKey& TestKey::floating(std::string_view param, jw_float_type type) {
  jw_param_spec& p = find(param);
  p.float_type = type;
  if (p.kind == JW_PARAM_SCALAR) p.scalar_kind = JW_SCALAR_FLOAT;
  return *this;
}

TestKey& TestKey::constant(std::string_view param, int64_t value) {
  jw_param_spec& p = find(param);
  p.constexpr_value.kind = JW_SCALAR_INT;
  p.constexpr_value.value.i = value;
  return *this;
}

TestKey& TestKey::target(std::string target) {
  target_ = std::move(target);
  return *this;
}

std::string TestKey::text() const {
  const std::size_t dot = kernel_.rfind('.');
  std::string out = kernel_.substr(dot + 1) + "[" + target_ + "](";
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const jw_param_spec& p = params_[i];
    if (i != 0) out += ", ";
    out += p.name;
    switch (p.kind) {
      case JW_PARAM_TENSOR:
        out += ":" + std::string(short_dtype(p.dtype)) + "*";
        if (p.alignment == JW_ALIGN_16) out += ":a16";
        if (p.alignment == JW_ALIGN_NONE) out += ":a1";
        break;
      case JW_PARAM_INT: out += ":" + int_text(p.int_spec); break;
      case JW_PARAM_FLOAT:
        out += p.float_type == JW_FLOAT_F64 ? ":fp64" : ":fp32";
        break;
      case JW_PARAM_SCALAR:
        out += ":" + (p.scalar_kind == JW_SCALAR_FLOAT
                          ? std::string(p.float_type == JW_FLOAT_F64 ? "fp64"
                                                                     : "fp32")
                          : int_text(p.int_spec));
        break;
      case JW_PARAM_CONSTEXPR:
        out += "=" + std::to_string(p.constexpr_value.value.i);
        break;
    }
  }
  return out + ") via cuda-nvrtc";
}

const jw_compile_key_view& TestKey::view() {
  text_ = text();
  view_ = jw_compile_key_view{};
  view_.struct_size = sizeof(jw_compile_key_view);
  view_.kernel_name = kernel_.c_str();
  view_.impl_name = "cuda-nvrtc";
  view_.target = target_.c_str();
  view_.params = params_.data();
  view_.num_params = static_cast<uint32_t>(params_.size());
  view_.text = text_.c_str();
  return view_;
}

// --- TestArgs ------------------------------------------------------------

TestArgs::TestArgs(std::string_view kernel_name)
    : schema_(&schema_of(kernel_name)) {
  values_.resize(schema_->num_params);
  tensor_of_.resize(schema_->num_params, nullptr);
  for (uint32_t i = 0; i < schema_->num_params; ++i) {
    values_[i].struct_size = sizeof(jw_arg_value);
    const jw_param_desc& desc = schema_->params[i];
    if (desc.kind == JW_PARAM_CONSTEXPR) {
      values_[i].kind = JW_VALUE_SCALAR;
      values_[i].value.scalar.kind = JW_SCALAR_INT;
      values_[i].value.scalar.value.i = (desc.flags & JW_PARAM_HAS_DEFAULT) != 0
                                            ? desc.default_value.value.i
                                            : typical_constexpr(desc.name);
    }
  }
}

uint32_t TestArgs::index(std::string_view param) const {
  for (uint32_t i = 0; i < schema_->num_params; ++i) {
    if (param == schema_->params[i].name) return i;
  }
  throw std::invalid_argument("no parameter " + std::string(param));
}

TestArgs& TestArgs::tensor(std::string_view param, jw_dtype dtype,
                           std::vector<int64_t> shape) {
  jw_tensor t{};
  t.struct_size = sizeof(jw_tensor);
  t.meta.struct_size = sizeof(jw_tensor_meta);
  t.meta.dtype = dtype;
  t.meta.rank = static_cast<uint32_t>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) t.meta.shape[d] = shape[d];
  t.data = reinterpret_cast<void*>(next_address_);
  next_address_ += 1ull << 32;
  t.device_index = 0;
  tensors_.push_back(t);
  const uint32_t i = index(param);
  tensor_of_[i] = &tensors_.back();
  values_[i].kind = JW_VALUE_TENSOR;
  values_[i].value.tensor = &tensors_.back();
  return *this;
}

TestArgs& TestArgs::misalign(std::string_view param) {
  jw_tensor* t = tensor_of_[index(param)];
  t->data = static_cast<char*>(t->data) + 2;
  return *this;
}

TestArgs& TestArgs::device(std::string_view param, int32_t device) {
  tensor_of_[index(param)]->device_index = device;
  return *this;
}

TestArgs& TestArgs::integer(std::string_view param, int64_t value) {
  jw_arg_value& v = values_[index(param)];
  v.kind = JW_VALUE_SCALAR;
  v.value.scalar.kind = JW_SCALAR_INT;
  v.value.scalar.value.i = value;
  return *this;
}

TestArgs& TestArgs::unsigned_integer(std::string_view param, uint64_t value) {
  jw_arg_value& v = values_[index(param)];
  v.kind = JW_VALUE_SCALAR;
  v.value.scalar.kind = JW_SCALAR_UINT;
  v.value.scalar.value.u = value;
  return *this;
}

TestArgs& TestArgs::floating(std::string_view param, double value) {
  jw_arg_value& v = values_[index(param)];
  v.kind = JW_VALUE_SCALAR;
  v.value.scalar.kind = JW_SCALAR_FLOAT;
  v.value.scalar.value.f = value;
  return *this;
}

TestArgs& TestArgs::constant(std::string_view param, int64_t value) {
  return integer(param, value);
}

std::span<const jw_arg_value> TestArgs::values() {
  return values_;
}

const jw_tensor& TestArgs::tensor_at(std::string_view param) {
  return *tensor_of_[index(param)];
}

// --- FakeHost ------------------------------------------------------------

namespace {

FakeHost& host_of(void* ctx) {
  return *static_cast<FakeHost*>(ctx);
}

void fake_log(void* ctx, jw_log_level, const char* message) {
  host_of(ctx).logs.emplace_back(message);
}
void fake_set_error(void* ctx, const char* message) {
  host_of(ctx).last_error = message;
}
jw_status fake_define_schema(void* ctx, const jw_kernel_schema* schema) {
  host_of(ctx).schemas.emplace_back(schema->name);
  return JW_OK;
}
jw_status fake_register_impl(void* ctx, const jw_kernel_impl* impl) {
  FakeHost::RecordedImpl recorded;
  recorded.kernel_name = impl->kernel_name;
  recorded.platform = impl->platform;
  recorded.impl_name = impl->impl_name;
  for (uint32_t i = 0; i < impl->num_param_names; ++i) {
    recorded.param_names.emplace_back(impl->param_names[i]);
  }
  recorded.impl = *impl;
  host_of(ctx).impls.push_back(std::move(recorded));
  return JW_OK;
}
jw_status fake_register_platform(void* ctx, const jw_platform_desc* platform) {
  host_of(ctx).platforms.push_back(*platform);
  host_of(ctx).platform_names.emplace_back(platform->name);
  return JW_OK;
}
jw_status fake_cache_get(void*, const void*, size_t, const jw_text_sink*) {
  return JW_ERROR_NOT_FOUND;
}
jw_status fake_cache_put(void*, const void*, size_t, const void*, size_t) {
  return JW_OK;
}
const char* fake_get_config(void*, const char*) {
  return nullptr;
}

void append_to_string(void* ctx, const char* text, size_t length) {
  static_cast<std::string*>(ctx)->append(text, length);
}

}  // namespace

FakeHost::FakeHost() {
  api_.struct_size = sizeof(jw_host_api);
  api_.abi_version = JITWARM_ABI_VERSION;
  api_.host_ctx = this;
  api_.log = &fake_log;
  api_.set_error = &fake_set_error;
  api_.define_schema = &fake_define_schema;
  api_.register_impl = &fake_register_impl;
  api_.register_platform = &fake_register_platform;
  api_.cache_get = &fake_cache_get;
  api_.cache_put = &fake_cache_put;
  api_.get_config = &fake_get_config;
}

const FakeHost::RecordedImpl* FakeHost::impl_for(
    std::string_view kernel) const {
  for (const RecordedImpl& r : impls) {
    if (r.kernel_name == kernel) return &r;
  }
  return nullptr;
}

jw_text_sink text_sink(std::string& out) {
  jw_text_sink sink{};
  sink.struct_size = sizeof(jw_text_sink);
  sink.ctx = &out;
  sink.append = &append_to_string;
  return sink;
}

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    result.output.append(buffer, n);
  }
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

DlopenedPlugin::DlopenedPlugin(const char* path) {
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    dlopen_error = why != nullptr ? why : "dlopen failed";
    return;
  }
  negotiate = reinterpret_cast<jw_plugin_negotiate_fn>(
      dlsym(handle, JITWARM_PLUGIN_ENTRY_SYMBOL));
  if (negotiate == nullptr) return;
  jw_plugin_negotiation n{};
  n.struct_size = sizeof(n);
  n.core_max_version = JITWARM_ABI_VERSION;
  n.core_min_version = JITWARM_ABI_VERSION_MIN;
  if (negotiate(&n) != JW_OK) return;
  api = n.plugin;
  registered = api->register_all(host.api());
}

DlopenedPlugin::~DlopenedPlugin() {
  if (api != nullptr && api->shutdown != nullptr) api->shutdown();
}

DlopenedPlugin& dlopened_plugin(const char* path) {
  static std::map<std::string, std::unique_ptr<DlopenedPlugin>> loaded;
  auto& slot = loaded[path];
  if (!slot) slot = std::make_unique<DlopenedPlugin>(path);
  DlopenedPlugin& plugin = *slot;
  REQUIRE_MESSAGE(plugin.handle != nullptr, "dlopen: " << plugin.dlopen_error);
  REQUIRE((plugin.negotiate != nullptr));
  REQUIRE(plugin.api != nullptr);
  REQUIRE_MESSAGE(plugin.registered == JW_OK, plugin.host.last_error);
  return plugin;
}

jw_artifact_sink artifact_sink(CapturedArtifact& artifact) {
  jw_artifact_sink sink{};
  sink.struct_size = sizeof(sink);
  sink.ctx = &artifact;
  sink.emit = [](void* ctx, const jw_artifact_desc* desc) -> jw_status {
    auto* out = static_cast<CapturedArtifact*>(ctx);
    out->binary.assign(static_cast<const char*>(desc->binary),
                       desc->binary_size);
    out->format = desc->format;
    out->entry_point = desc->entry_point;
    ++out->emits;
    return JW_OK;
  };
  return sink;
}

jw_status compile_into(const FakeHost::RecordedImpl& impl, TestKey* key,
                       CapturedArtifact& artifact) {
  const jw_artifact_sink sink = artifact_sink(artifact);
  return impl.impl.compile(impl.impl.user_data,
                           key != nullptr ? &key->view() : nullptr, &sink);
}

TestArgs rms_norm_args(int64_t rows, int64_t hidden, double eps) {
  TestArgs args(kernel_set::kRmsNorm);
  args.tensor("out", JW_DTYPE_FLOAT32, {rows, hidden})
      .tensor("x", JW_DTYPE_FLOAT32, {rows, hidden})
      .integer("x_stride", hidden)
      .tensor("weight", JW_DTYPE_FLOAT32, {hidden})
      .floating("eps", eps)
      .integer("T", rows)
      .integer("H", hidden);
  return args;
}

jw_artifact_view artifact_view(TestKey& key, const std::string& binary,
                               const std::string& format,
                               const std::string& entry_point,
                               uint64_t artifact_id) {
  jw_artifact_view view{};
  view.struct_size = sizeof(view);
  view.key = &key.view();
  view.binary = binary.data();
  view.binary_size = binary.size();
  view.format = format.c_str();
  view.entry_point = entry_point.c_str();
  view.artifact_id = artifact_id;
  return view;
}

jw_status launch_rms_norm(const FakeHost::RecordedImpl& impl, TestKey& key,
                          const CapturedArtifact& artifact) {
  TestArgs args = rms_norm_args(1, 16, 1e-5);
  const jw_artifact_view view = artifact_view(
      key, artifact.binary, artifact.format, artifact.entry_point, 42);
  const auto values = args.values();
  return impl.impl.launch(impl.impl.user_data, &view, values.data(),
                          static_cast<uint32_t>(values.size()), nullptr);
}

}  // namespace jitwarm::gpu_test
