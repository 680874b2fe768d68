// param_reader.cpp — the checks behind KeyReader and KernelArgs (see
// param_reader.hpp). Every message names the kernel, the parameter and the
// offending value.
#include "param_reader.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace jitwarm::reference_cpu {
namespace {

// Architectures the reference names in its targets ("cpu:<arch>").
constexpr std::string_view kKnownArchitectures[] = {"x86_64", "aarch64"};

std::string shape_text(const HostTensor& t) {
  std::string out = "[";
  for (uint32_t i = 0; i < t.rank; ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(t.shape[i]);
  }
  return out + "]";
}

std::string_view kind_text(jw_param_kind kind) {
  return plugin::param_kind_name(kind).value_or("unknown");
}

const char* value_text(const jw_arg_value& value) {
  switch (value.kind) {
    case JW_VALUE_TENSOR: return "a tensor";
    case JW_VALUE_WARMUP_TENSOR: return "a warmup tensor (metadata only)";
    case JW_VALUE_SCALAR:
      switch (value.value.scalar.kind) {
        case JW_SCALAR_INT:
        case JW_SCALAR_UINT: return "an integer";
        case JW_SCALAR_FLOAT: return "a float";
        case JW_SCALAR_BOOL: return "a bool";
        case JW_SCALAR_NONE: break;
      }
      return "an empty scalar";
    case JW_VALUE_NONE: break;
  }
  return "nothing";
}

// The integer in a scalar, if it is one that fits int64.
bool scalar_as_int64(const jw_scalar& s, int64_t* out) {
  if (s.kind == JW_SCALAR_INT) {
    *out = s.value.i;
    return true;
  }
  if (s.kind == JW_SCALAR_UINT &&
      s.value.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    *out = static_cast<int64_t>(s.value.u);
    return true;
  }
  return false;
}

CpuTarget parse_target(const char* target, const std::string& context) {
  const std::string_view text = target != nullptr ? target : "";
  const std::size_t colon = text.find(':');
  const std::string_view platform =
      colon == std::string_view::npos ? text : text.substr(0, colon);
  if (platform != "cpu") {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        concat(context, "target '", text,
               "' is not a cpu target; the reference compiles only "
               "cpu:<arch>"));
  }
  const std::string_view arch =
      colon == std::string_view::npos ? "" : text.substr(colon + 1);
  for (std::string_view known : kKnownArchitectures) {
    if (arch == known) return CpuTarget{std::string(text), std::string(arch)};
  }
  throw plugin::PluginError(
      JW_ERROR_UNSUPPORTED,
      concat(context, "target '", text,
             "' names an architecture the reference does not know (known: "
             "cpu:x86_64, cpu:aarch64)"));
}

}  // namespace

std::string scalar_text(const jw_scalar& s) {
  switch (s.kind) {
    case JW_SCALAR_INT: return std::to_string(s.value.i);
    case JW_SCALAR_UINT: return std::to_string(s.value.u);
    case JW_SCALAR_FLOAT: return concat(s.value.f);
    case JW_SCALAR_BOOL: return s.value.i != 0 ? "true" : "false";
    case JW_SCALAR_NONE: break;
  }
  return "(none)";
}

std::string_view short_kernel_name(std::string_view kernel_name) {
  const std::size_t dot = kernel_name.rfind('.');
  return dot == std::string_view::npos ? kernel_name
                                       : kernel_name.substr(dot + 1);
}

int64_t checked_mul(const ParamReader& reader, int64_t a, int64_t b,
                    std::string_view what) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    reader.fail(what, " overflows int64 (", a, " * ", b, ")");
  }
  return result;
}

int64_t checked_add(const ParamReader& reader, int64_t a, int64_t b,
                    std::string_view what) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    reader.fail(what, " overflows int64 (", a, " + ", b, ")");
  }
  return result;
}

// ---------------------------------------------------------------------------
// KeyReader
// ---------------------------------------------------------------------------
KeyReader::KeyReader(const jw_kernel_schema& schema,
                     const jw_compile_key_view& key)
    : ParamReader(schema), key_(key) {
  constexpr std::size_t kNeeded =
      offsetof(jw_compile_key_view, num_params) + sizeof(uint32_t);
  if (key.struct_size < kNeeded) {
    fail("jw_compile_key_view struct_size ", key.struct_size,
         " is too small (needs at least ", kNeeded, ")");
  }
  if (key.struct_size >= offsetof(jw_compile_key_view, text) + sizeof(char*) &&
      key.text != nullptr) {
    text_ = key.text;
  }
  const std::string_view kernel_name =
      key.kernel_name != nullptr ? key.kernel_name : "";
  require(kernel_name == schema.name, "the key is for kernel '", kernel_name,
          "', not '", schema.name, "'");
  target_ = parse_target(key.target, context());

  require(key.num_params == schema.num_params, "the key has ", key.num_params,
          " parameters, the schema ", schema.num_params);
  require(key.num_params == 0 || key.params != nullptr,
          "the key's parameter array is null");
  for (uint32_t i = 0; i < schema.num_params; ++i) {
    const jw_param_desc& desc = schema.params[i];
    const jw_param_spec& p = spec(i);
    require(p.struct_size >= sizeof(jw_param_spec), "parameter ", i,
            ": jw_param_spec struct_size ", p.struct_size, " is too small");
    const std::string_view name = p.name != nullptr ? p.name : "";
    const int64_t raw_kind = enum_value(p.kind);
    require(raw_kind >= JW_PARAM_TENSOR && raw_kind <= JW_PARAM_SCALAR,
            "parameter ", i, " has an unknown kind (", raw_kind, ")");
    require(name == desc.name, "parameter ", i, " is '", name,
            "'; the schema (positional order) has '", desc.name, "' there");
    require(p.kind == desc.kind, "parameter '", desc.name, "' is a ",
            kind_text(p.kind), " in the key but a ", kind_text(desc.kind),
            " in the schema");
    if (desc.kind == JW_PARAM_TENSOR) {
      const int64_t raw_dtype = enum_value(p.dtype);
      require(raw_dtype > JW_DTYPE_INVALID && raw_dtype < JW_DTYPE_COUNT,
              "parameter '", desc.name, "' has an invalid dtype (", raw_dtype,
              ")");
      require(desc.allowed_dtypes == 0 ||
                  (desc.allowed_dtypes & JW_DTYPE_BIT(p.dtype)) != 0,
              "parameter '", desc.name, "' does not take ", dtype_name(p.dtype),
              " (allowed: ", plugin::dtype_set_names(desc.allowed_dtypes), ")");
    }
    if (desc.kind == JW_PARAM_CONSTEXPR) {
      const int64_t raw_value_kind = enum_value(p.constexpr_value.kind);
      require(
          raw_value_kind >= JW_SCALAR_NONE && raw_value_kind <= JW_SCALAR_BOOL,
          "constexpr '", desc.name, "' has an unknown scalar kind (",
          raw_value_kind, ")");
    }
    if (desc.kind == JW_PARAM_SCALAR) {
      const int64_t raw_scalar_kind = enum_value(p.scalar_kind);
      require(raw_scalar_kind == JW_SCALAR_INT ||
                  raw_scalar_kind == JW_SCALAR_FLOAT,
              "scalar parameter '", desc.name,
              "' must be specialized as an integer or a float");
    }
  }
  // Same-dtype rules, once every tensor dtype has been checked.
  for (uint32_t i = 0; i < schema.num_params; ++i) {
    const jw_param_desc& desc = schema.params[i];
    if (desc.kind != JW_PARAM_TENSOR || desc.same_dtype_as == nullptr) continue;
    for (uint32_t j = 0; j < schema.num_params; ++j) {
      if (std::string_view(schema.params[j].name) != desc.same_dtype_as) {
        continue;
      }
      require(spec(i).dtype == spec(j).dtype, "parameter '", desc.name,
              "' must have the dtype of '", desc.same_dtype_as, "' (",
              dtype_name(spec(j).dtype), "), got ", dtype_name(spec(i).dtype));
    }
  }
}

std::string KeyReader::context() const {
  return concat(kernel(), ": key ", text_.empty() ? "(no text)" : text_, ": ");
}

jw_dtype KeyReader::tensor_dtype(uint32_t index) const {
  return spec(index).dtype;
}

int64_t KeyReader::constexpr_int(uint32_t index) const {
  const jw_scalar& value = spec(index).constexpr_value;
  int64_t out = 0;
  // Text only on failure: require() would build its parts every time.
  if (!scalar_as_int64(value, &out)) {
    fail("constexpr '", param_name(index),
         "' must be an integer that fits int64, got ", scalar_text(value));
  }
  return out;
}

jw_scalar_kind KeyReader::scalar_kind(uint32_t index) const {
  return spec(index).scalar_kind;
}

// ---------------------------------------------------------------------------
// KernelArgs
// ---------------------------------------------------------------------------
KernelArgs::KernelArgs(const jw_kernel_schema& schema,
                       std::span<const jw_arg_value> args)
    : ParamReader(schema) {
  if (schema.num_params > kMaxParams) {
    throw plugin::PluginError(
        JW_ERROR_INTERNAL,
        concat(kernel(),
               ": schema has more parameters than the reference "
               "reader holds"));
  }
  require(args.size() <= schema.num_params, "takes ", schema.num_params,
          " arguments, got ", args.size());
  require(args.empty() || args.data() != nullptr, "the argument array is null");
  for (uint32_t i = 0; i < schema.num_params; ++i) {
    const jw_param_desc& desc = schema.params[i];
    if (i < args.size()) {
      constexpr std::size_t kNeeded =
          offsetof(jw_arg_value, value) + sizeof(jw_arg_value::value);
      require(args[i].struct_size >= kNeeded, "argument '", desc.name,
              "': jw_arg_value struct_size ", args[i].struct_size,
              " is too small");
      const int64_t raw_kind = enum_value(args[i].kind);
      require(raw_kind >= JW_VALUE_NONE && raw_kind <= JW_VALUE_SCALAR,
              "argument '", desc.name, "' has an unknown value kind (",
              raw_kind, ")");
      if (raw_kind == JW_VALUE_SCALAR) {
        const int64_t raw_scalar_kind = enum_value(args[i].value.scalar.kind);
        require(raw_scalar_kind >= JW_SCALAR_NONE &&
                    raw_scalar_kind <= JW_SCALAR_BOOL,
                "argument '", desc.name, "' has an unknown scalar kind (",
                raw_scalar_kind, ")");
      }
      values_[i] = args[i];
    } else if ((desc.flags & JW_PARAM_HAS_DEFAULT) != 0) {
      values_[i].struct_size = sizeof(jw_arg_value);
      values_[i].kind = JW_VALUE_SCALAR;
      values_[i].value.scalar = desc.default_value;
    } else {
      fail("missing argument '", desc.name, "' (position ", i, "; ",
           args.size(), " given)");
    }
  }
}

std::string KernelArgs::context() const {
  return concat(kernel(), ": ");
}

HostTensor KernelArgs::tensor(uint32_t index) const {
  const jw_param_desc& desc = schema().params[index];
  const jw_arg_value& value = values_[index];
  require(value.kind == JW_VALUE_TENSOR, "parameter '", desc.name,
          "' takes a tensor with storage, got ", value_text(value));
  const jw_tensor* t = value.value.tensor;
  require(t != nullptr, "parameter '", desc.name, "': tensor pointer is null");
  constexpr std::size_t kNeeded =
      offsetof(jw_tensor, device_index) + sizeof(int32_t);
  require(t->struct_size >= kNeeded, "parameter '", desc.name,
          "': jw_tensor struct_size ", t->struct_size, " is too small");
  const jw_tensor_meta& meta = t->meta;
  require(meta.struct_size >= sizeof(jw_tensor_meta), "parameter '", desc.name,
          "': jw_tensor_meta struct_size ", meta.struct_size, " is too small");
  require(t->device_index == -1 || t->device_index == 0, "parameter '",
          desc.name, "': device_index ", t->device_index,
          " is not host memory (the cpu platform has device 0; -1 = host)");

  const int64_t raw_dtype = enum_value(meta.dtype);
  require(raw_dtype > JW_DTYPE_INVALID && raw_dtype < JW_DTYPE_COUNT,
          "parameter '", desc.name, "' has an invalid dtype (", raw_dtype, ")");
  HostTensor out;
  out.name = desc.name;
  out.dtype = meta.dtype;
  out.rank = meta.rank;
  out.data = t->data;
  if (desc.allowed_dtypes != 0 &&
      (desc.allowed_dtypes & JW_DTYPE_BIT(meta.dtype)) == 0) {
    fail("parameter '", desc.name, "' does not take ", dtype_name(meta.dtype),
         " (allowed: ", plugin::dtype_set_names(desc.allowed_dtypes), ")");
  }
  require(desc.rank < 0 || meta.rank == static_cast<uint32_t>(desc.rank),
          "parameter '", desc.name, "' must have rank ", desc.rank, ", got ",
          meta.rank);
  require(meta.rank <= JW_MAX_RANK, "parameter '", desc.name, "': rank ",
          meta.rank, " exceeds ", JW_MAX_RANK);

  const bool has_strides = (meta.flags & JW_TENSOR_HAS_STRIDES) != 0;
  int64_t elements = 1;
  for (uint32_t i = 0; i < meta.rank; ++i) {
    out.shape[i] = meta.shape[i];
    require(meta.shape[i] >= 0, "parameter '", desc.name, "': dimension ", i,
            " has negative extent ", meta.shape[i]);
    // The message names the tensor only when it is needed: a launch reads
    // every tensor, and building text here cost more than the kernel.
    int64_t product = 0;
    if (__builtin_mul_overflow(elements, meta.shape[i], &product)) {
      fail("the element count of '", desc.name, "' overflows int64 (", elements,
           " * ", meta.shape[i], ")");
    }
    elements = product;
  }
  // Compact strides: what every compact parameter is indexed with, whatever
  // strides its meta carries for dimensions of extent 1.
  int64_t running = 1;
  for (uint32_t i = meta.rank; i-- > 0;) {
    out.strides[i] = running;
    const int64_t extent = std::max<int64_t>(out.shape[i], 1);
    int64_t product = 0;
    if (__builtin_mul_overflow(running, extent, &product)) {
      fail("the compact strides of '", desc.name, "' overflow int64 (", running,
           " * ", extent, ")");
    }
    running = product;
  }
  if (has_strides) {
    for (uint32_t i = 0; i < meta.rank; ++i) {
      require(meta.strides[i] >= 0, "parameter '", desc.name, "': dimension ",
              i, " has negative stride ", meta.strides[i]);
    }
    if ((desc.flags & JW_PARAM_CONTIGUOUS) != 0) {
      for (uint32_t i = 0; i < meta.rank; ++i) {
        require(meta.shape[i] == 1 || meta.strides[i] == out.strides[i],
                "parameter '", desc.name,
                "' must be contiguous (compact row-major); dimension ", i,
                " has stride ", meta.strides[i], " instead of ",
                out.strides[i]);
      }
    } else {
      for (uint32_t i = 0; i < meta.rank; ++i) out.strides[i] = meta.strides[i];
      if ((desc.flags & JW_PARAM_INNER_CONTIGUOUS) != 0 && meta.rank > 0) {
        const uint32_t last = meta.rank - 1;
        require(meta.shape[last] <= 1 || meta.strides[last] == 1, "parameter '",
                desc.name,
                "' must have a unit stride in its last dimension, got ",
                meta.strides[last]);
        out.strides[last] = 1;
      }
    }
  }
  if (elements != 0 && out.data == nullptr) {
    fail("parameter '", desc.name, "': null data for a tensor of shape ",
         shape_text(out));
  }
  return out;
}

int64_t KernelArgs::integer(uint32_t index) const {
  const jw_arg_value& value = values_[index];
  int64_t out = 0;
  require(value.kind == JW_VALUE_SCALAR, "parameter '", param_name(index),
          "' takes an integer, got ", value_text(value));
  if (!scalar_as_int64(value.value.scalar, &out)) {
    fail("parameter '", param_name(index),
         "' takes an integer that fits int64, got ", value_text(value), " ",
         scalar_text(value.value.scalar));
  }
  return out;
}

double KernelArgs::floating(uint32_t index) const {
  const jw_arg_value& value = values_[index];
  require(value.kind == JW_VALUE_SCALAR, "parameter '", param_name(index),
          "' takes a float, got ", value_text(value));
  const jw_scalar& s = value.value.scalar;
  switch (s.kind) {
    case JW_SCALAR_FLOAT: return s.value.f;
    case JW_SCALAR_INT: return static_cast<double>(s.value.i);
    case JW_SCALAR_UINT: return static_cast<double>(s.value.u);
    default: break;
  }
  fail("parameter '", param_name(index), "' takes a float, got ",
       value_text(value));
}

const jw_scalar& KernelArgs::scalar(uint32_t index) const {
  const jw_arg_value& value = values_[index];
  require(value.kind == JW_VALUE_SCALAR, "parameter '", param_name(index),
          "' takes a scalar, got ", value_text(value));
  return value.value.scalar;
}

jw_dtype KernelArgs::tensor_dtype(uint32_t index) const {
  return tensor(index).dtype;
}

int64_t KernelArgs::constexpr_int(uint32_t index) const {
  const jw_arg_value& value = values_[index];
  int64_t out = 0;
  if (value.kind != JW_VALUE_SCALAR ||
      !scalar_as_int64(value.value.scalar, &out)) {
    fail("constexpr '", param_name(index),
         "' must be an integer that fits int64, got ", value_text(value),
         value.kind == JW_VALUE_SCALAR ? " " + scalar_text(value.value.scalar)
                                       : std::string());
  }
  return out;
}

jw_scalar_kind KernelArgs::scalar_kind(uint32_t index) const {
  const jw_scalar& s = scalar(index);
  switch (s.kind) {
    case JW_SCALAR_INT:
    case JW_SCALAR_UINT: return JW_SCALAR_INT;
    case JW_SCALAR_FLOAT: return JW_SCALAR_FLOAT;
    default: break;
  }
  fail("parameter '", param_name(index), "' takes an integer or a float, got ",
       value_text(values_[index]));
}

void require_row_stride_matches(const KernelArgs& args,
                                const HostTensor& tensor, int64_t stride,
                                uint32_t stride_param) {
  bool has_elements = true;
  for (uint32_t i = 0; i < tensor.rank; ++i) {
    has_elements = has_elements && tensor.shape[i] > 0;
  }
  if (tensor.dim(0) > 1 && has_elements && stride != tensor.strides[0]) {
    args.fail(args.param_name(stride_param), " = ", stride,
              " does not match the row stride of '", tensor.name, "' (",
              tensor.strides[0], " elements, shape ", shape_text(tensor), ")");
  }
}

}  // namespace jitwarm::reference_cpu
