// param_reader.hpp — reading a kernel's parameters, from a compile key
// (compile time) or from launch arguments (run time), with messages that
// name the kernel, the parameter and the value.
//
// Owns: the checks the reference makes on what crosses the C ABI before a
// kernel touches memory (kinds, struct sizes, dtypes, ranks, layouts, null
// data), and the one error type kernels throw (plugin::PluginError with
// JW_ERROR_INVALID_ARGUMENT). It does not own kernel semantics: the extent
// checks that depend on scalar sizes live with each kernel.
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "dtype_info.hpp"

namespace jitwarm::reference_cpu {

// Joins message parts with operator<<. Doubles keep every digit so a
// message shows the exact value that was rejected.
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  out.precision(17);
  (out << ... << parts);
  return out.str();
}

// The integer value of an enum that crossed the C ABI. A C caller may pass
// any value (jitwarm.h R4: unknown values are errors), so the reference
// reads such fields as their underlying integer and checks it before
// trusting them.
template <typename Enum>
int64_t enum_value(const Enum& value) {
  std::underlying_type_t<Enum> raw;
  std::memcpy(&raw, &value, sizeof raw);
  return static_cast<int64_t>(raw);
}

// The short name of a kernel ("rms_norm" for
// "vllm.model_executor.layers.layernorm.rms_norm"), for messages.
std::string_view short_kernel_name(std::string_view kernel_name);

// A scalar as messages and key descriptions show it ("3", "0.5", "true",
// "(none)").
std::string scalar_text(const jw_scalar& s);

// What instantiation selection and parameter validation read. Implemented
// by KeyReader (a compile key) and KernelArgs (launch arguments), so the
// same selection code runs at compile time and on the direct launch path
// and the two cannot disagree.
class ParamReader {
 public:
  virtual ~ParamReader() = default;

  const jw_kernel_schema& schema() const { return schema_; }
  std::string_view kernel() const { return short_kernel_name(schema_.name); }
  const char* param_name(uint32_t index) const {
    return schema_.params[index].name;
  }

  // The dtype of tensor parameter `index`.
  virtual jw_dtype tensor_dtype(uint32_t index) const = 0;
  // The value of constexpr parameter `index`, which must be an integer that
  // fits int64.
  virtual int64_t constexpr_int(uint32_t index) const = 0;
  // JW_SCALAR_INT or JW_SCALAR_FLOAT: how a JW_PARAM_SCALAR was passed.
  virtual jw_scalar_kind scalar_kind(uint32_t index) const = 0;

  // Throws PluginError(JW_ERROR_INVALID_ARGUMENT) with the reader's context
  // ("rms_norm: ..." or "rms_norm: key ...: ...") before the message.
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              context() + concat(parts...));
  }
  template <typename... Parts>
  void require(bool condition, const Parts&... parts) const {
    if (!condition) fail(parts...);
  }

 protected:
  explicit ParamReader(const jw_kernel_schema& schema) : schema_(schema) {}
  virtual std::string context() const = 0;

 private:
  const jw_kernel_schema& schema_;
};

// a * b and a + b in int64, or a message naming `what` when they overflow.
int64_t checked_mul(const ParamReader& reader, int64_t a, int64_t b,
                    std::string_view what);
int64_t checked_add(const ParamReader& reader, int64_t a, int64_t b,
                    std::string_view what);

// ---------------------------------------------------------------------------
// Compile keys
// ---------------------------------------------------------------------------

// The target of a key, split. Only "cpu" with an architecture the reference
// knows is accepted (JW_ERROR_UNSUPPORTED otherwise).
struct CpuTarget {
  std::string text;  // "cpu:x86_64"
  std::string arch;  // "x86_64"
};

// A compile key checked against its schema: every parameter present, in
// schema order, with the schema's name and kind; tensor dtypes allowed and
// equal where the schema says so; scalars passed as an integer or a float.
class KeyReader final : public ParamReader {
 public:
  KeyReader(const jw_kernel_schema& schema, const jw_compile_key_view& key);

  jw_dtype tensor_dtype(uint32_t index) const override;
  int64_t constexpr_int(uint32_t index) const override;
  jw_scalar_kind scalar_kind(uint32_t index) const override;

  const CpuTarget& target() const { return target_; }
  std::string_view text() const { return text_; }

 protected:
  std::string context() const override;

 private:
  const jw_param_spec& spec(uint32_t index) const { return key_.params[index]; }

  const jw_compile_key_view& key_;
  std::string text_;
  CpuTarget target_;
};

// ---------------------------------------------------------------------------
// Launch arguments
// ---------------------------------------------------------------------------

// A tensor argument in host memory, checked against its schema entry.
struct HostTensor {
  const char* name = "";
  jw_dtype dtype = JW_DTYPE_INVALID;
  uint32_t rank = 0;
  std::array<int64_t, JW_MAX_RANK> shape{};
  // In elements; the compact row-major strides when the meta has none.
  std::array<int64_t, JW_MAX_RANK> strides{};
  void* data = nullptr;

  int64_t dim(uint32_t axis) const { return shape[axis]; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// Launch arguments in schema order. Trailing parameters that have a
// default may be omitted (the core fills them, direct callers need not).
class KernelArgs final : public ParamReader {
 public:
  KernelArgs(const jw_kernel_schema& schema,
             std::span<const jw_arg_value> args);

  // Checks kind, struct sizes, dtype (allowed by the schema), rank, layout
  // (compact, or unit inner stride) and that data is present when the
  // tensor has elements; host memory only (device_index -1 or 0).
  HostTensor tensor(uint32_t index) const;
  // tensor(index), and its dtype must be kDtypeOf<T>: an instantiation for
  // one dtype never reads another's memory.
  template <typename T>
  HostTensor typed_tensor(uint32_t index) const;
  // An integer that fits int64 (JW_SCALAR_INT, or UINT up to 2^63 - 1).
  int64_t integer(uint32_t index) const;
  // A float (integers are accepted and converted, as the core accepts them).
  double floating(uint32_t index) const;
  const jw_scalar& scalar(uint32_t index) const;

  jw_dtype tensor_dtype(uint32_t index) const override;
  int64_t constexpr_int(uint32_t index) const override;
  jw_scalar_kind scalar_kind(uint32_t index) const override;

 protected:
  std::string context() const override;

 private:
  static constexpr uint32_t kMaxParams = 16;
  std::array<jw_arg_value, kMaxParams> values_{};
};

// The row stride a kernel receives as an integer parameter must be the
// tensor's own row stride whenever more than one non-empty row exists, so
// indexing with it stays inside the tensor's memory.
void require_row_stride_matches(const KernelArgs& args,
                                const HostTensor& tensor, int64_t stride,
                                uint32_t stride_param);

template <typename T>
HostTensor KernelArgs::typed_tensor(uint32_t index) const {
  HostTensor tensor_value = tensor(index);
  require(tensor_value.dtype == kDtypeOf<T>, "parameter '", tensor_value.name,
          "' has dtype ", dtype_name(tensor_value.dtype),
          " but this instantiation takes ", dtype_name(kDtypeOf<T>));
  return tensor_value;
}

}  // namespace jitwarm::reference_cpu
