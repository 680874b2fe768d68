// reference_test_support.hpp — what the CPU reference tests share: host
// tensors that own their storage, argument builders, a way to capture a
// kernel's error, and a compile-key builder that follows the specialization
// rules of docs/compile-keys.md closely enough for the reference's selection
// (dtypes, scalar kinds, constexpr values).
//
// The reference tests link the reference library directly, never the core,
// so they keep building while the core changes.
#pragma once

#include <doctest/doctest.h>
#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin.hpp>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dtype_info.hpp"
#include "kernel_set.hpp"
#include "reference_cpu.hpp"

// Failed CHECKs on vectors of numbers print their elements.
namespace doctest {
template <typename T>
requires std::is_arithmetic_v<T>
struct StringMaker<std::vector<T>> {
  static String convert(const std::vector<T>& values) {
    std::string text = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(values[i]);
    }
    return (text + "}").c_str();
  }
};
}  // namespace doctest

namespace jitwarm::reference_test {

// A host tensor that owns its elements. `values` holds every element the
// strides can reach; the tensor's data points into it, so the buffer is
// neither copied nor moved.
template <typename T>
class HostBuffer {
 public:
  // Compact row-major.
  HostBuffer(std::vector<int64_t> shape, std::vector<T> initial,
             jw_dtype dtype = reference_cpu::kDtypeOf<T>)
      : values(std::move(initial)) {
    init(dtype, shape, {});
  }
  // Explicit strides (in elements); `initial` must cover them.
  HostBuffer(std::vector<int64_t> shape, std::vector<int64_t> strides,
             std::vector<T> initial,
             jw_dtype dtype = reference_cpu::kDtypeOf<T>)
      : values(std::move(initial)) {
    init(dtype, shape, strides);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  jw_arg_value arg() const {
    jw_arg_value a{};
    a.struct_size = sizeof(jw_arg_value);
    a.kind = JW_VALUE_TENSOR;
    a.value.tensor = &tensor;
    return a;
  }

  std::vector<T> values;
  jw_tensor tensor{};

 private:
  void init(jw_dtype dtype, const std::vector<int64_t>& shape,
            const std::vector<int64_t>& strides) {
    REQUIRE(shape.size() <= JW_MAX_RANK);
    tensor.struct_size = sizeof(jw_tensor);
    tensor.meta.struct_size = sizeof(jw_tensor_meta);
    tensor.meta.dtype = dtype;
    tensor.meta.rank = static_cast<uint32_t>(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) {
      tensor.meta.shape[i] = shape[i];
    }
    if (!strides.empty()) {
      REQUIRE(strides.size() == shape.size());
      tensor.meta.flags |= JW_TENSOR_HAS_STRIDES;
      for (std::size_t i = 0; i < strides.size(); ++i) {
        tensor.meta.strides[i] = strides[i];
      }
    }
    tensor.data = values.empty() ? nullptr : values.data();
    tensor.device_index = -1;
  }
};

inline jw_arg_value scalar_arg(jw_scalar scalar) {
  jw_arg_value a{};
  a.struct_size = sizeof(jw_arg_value);
  a.kind = JW_VALUE_SCALAR;
  a.value.scalar = scalar;
  return a;
}
inline jw_arg_value int_arg(int64_t value) {
  jw_scalar s{JW_SCALAR_INT, {0}};
  s.value.i = value;
  return scalar_arg(s);
}
inline jw_arg_value uint_arg(uint64_t value) {
  jw_scalar s{JW_SCALAR_UINT, {0}};
  s.value.u = value;
  return scalar_arg(s);
}
inline jw_arg_value float_arg(double value) {
  jw_scalar s{JW_SCALAR_FLOAT, {0}};
  s.value.f = value;
  return scalar_arg(s);
}

// Runs a kernel on the direct path; returns the instantiation that ran.
inline std::string run(std::string_view kernel,
                       const std::vector<jw_arg_value>& args) {
  return std::string(reference_cpu::run_kernel(kernel, args));
}

struct Failure {
  jw_status status = JW_OK;
  std::string message;
};

// Runs a kernel that must fail and returns how it failed (a test failure
// when it succeeds).
inline Failure failure_of(std::string_view kernel,
                          const std::vector<jw_arg_value>& args) {
  try {
    reference_cpu::run_kernel(kernel, args);
  } catch (const plugin::PluginError& e) {
    return Failure{e.status(), e.what()};
  }
  FAIL("the kernel accepted arguments it should have refused");
  return {};
}

// Checks a refusal: JW_ERROR_INVALID_ARGUMENT and a message containing
// every fragment (the parameter and the value it names).
inline void check_refused(std::string_view kernel,
                          const std::vector<jw_arg_value>& args,
                          std::initializer_list<std::string_view> fragments) {
  const Failure failure = failure_of(kernel, args);
  CHECK(failure.status == JW_ERROR_INVALID_ARGUMENT);
  for (std::string_view fragment : fragments) {
    INFO("message: ", failure.message);
    CHECK_MESSAGE(failure.message.find(fragment) != std::string::npos,
                  "expected '", std::string(fragment), "' in the message");
  }
}

// A compile key built from arguments the way derive_key builds one: tensor
// dtype and alignment, integer type and value class (none for
// do_not_specialize), float type, scalar kind, exact constexprs (defaults
// for omitted trailing ones).
class TestKey {
 public:
  TestKey(std::string_view kernel_name, const std::vector<jw_arg_value>& args,
          std::string target = std::string(reference_cpu::host_target()))
      : kernel_(kernel_name), target_(std::move(target)) {
    const jw_kernel_schema* schema = kernel_set::find_schema(kernel_name);
    REQUIRE(schema != nullptr);
    text_ = std::string(kernel_name) + "[" + target_ + "]";
    for (uint32_t i = 0; i < schema->num_params; ++i) {
      const jw_param_desc& desc = schema->params[i];
      jw_arg_value value{};
      if (i < args.size()) {
        value = args[i];
      } else {
        REQUIRE((desc.flags & JW_PARAM_HAS_DEFAULT) != 0);
        value = scalar_arg(desc.default_value);
      }
      jw_param_spec spec{};
      spec.struct_size = sizeof(jw_param_spec);
      spec.name = desc.name;
      spec.kind = desc.kind;
      switch (desc.kind) {
        case JW_PARAM_TENSOR:
          REQUIRE(value.kind == JW_VALUE_TENSOR);
          spec.dtype = value.value.tensor->meta.dtype;
          spec.alignment =
              reinterpret_cast<uintptr_t>(value.value.tensor->data) % 16 == 0
                  ? JW_ALIGN_16
                  : JW_ALIGN_NONE;
          break;
        case JW_PARAM_INT:
          spec.int_spec =
              int_spec_of(value.value.scalar,
                          (desc.flags & JW_PARAM_DO_NOT_SPECIALIZE) != 0);
          break;
        case JW_PARAM_FLOAT: spec.float_type = JW_FLOAT_F32; break;
        case JW_PARAM_SCALAR:
          if (value.value.scalar.kind == JW_SCALAR_FLOAT) {
            spec.scalar_kind = JW_SCALAR_FLOAT;
            spec.float_type = JW_FLOAT_F32;
          } else {
            spec.scalar_kind = JW_SCALAR_INT;
            spec.int_spec = int_spec_of(value.value.scalar, true);
          }
          break;
        case JW_PARAM_CONSTEXPR:
          spec.constexpr_value = value.value.scalar;
          break;
      }
      specs_.push_back(spec);
    }
    rebuild_view();
  }
  TestKey(const TestKey&) = delete;
  TestKey& operator=(const TestKey&) = delete;

  // Edits for negative tests; the view follows.
  jw_param_spec& spec(std::string_view name) {
    for (jw_param_spec& s : specs_) {
      if (name == s.name) return s;
    }
    FAIL("no parameter ", std::string(name));
    return specs_.front();
  }
  void set_constexpr(std::string_view name, int64_t value) {
    jw_scalar s{JW_SCALAR_INT, {0}};
    s.value.i = value;
    spec(name).constexpr_value = s;
  }
  void set_target(std::string target) {
    target_ = std::move(target);
    rebuild_view();
  }
  void set_kernel_name(std::string name) {
    kernel_ = std::move(name);
    rebuild_view();
  }
  std::vector<jw_param_spec>& specs() { return specs_; }
  void rebuild_view() {
    view_ = jw_compile_key_view{};
    view_.struct_size = sizeof(jw_compile_key_view);
    view_.kernel_name = kernel_.c_str();
    view_.impl_name = "reference-cpu";
    view_.target = target_.c_str();
    view_.params = specs_.data();
    view_.num_params = static_cast<uint32_t>(specs_.size());
    view_.text = text_.c_str();
  }
  const jw_compile_key_view& view() {
    rebuild_view();
    return view_;
  }

 private:
  static jw_int_spec int_spec_of(const jw_scalar& s, bool do_not_specialize) {
    jw_int_spec spec{JW_INT_I32, JW_INT_CLASS_NONE};
    if (s.kind == JW_SCALAR_UINT) {
      spec.type = s.value.u <= static_cast<uint64_t>(INT32_MAX)   ? JW_INT_I32
                  : s.value.u <= static_cast<uint64_t>(INT64_MAX) ? JW_INT_I64
                                                                  : JW_INT_U64;
      if (!do_not_specialize) {
        spec.value_class = s.value.u == 1        ? JW_INT_CLASS_ONE
                           : s.value.u % 16 == 0 ? JW_INT_CLASS_DIV16
                                                 : JW_INT_CLASS_NONE;
      }
      return spec;
    }
    const int64_t v = s.value.i;
    spec.type = v >= INT32_MIN && v <= INT32_MAX ? JW_INT_I32 : JW_INT_I64;
    if (!do_not_specialize) {
      spec.value_class = v == 1        ? JW_INT_CLASS_ONE
                         : v % 16 == 0 ? JW_INT_CLASS_DIV16
                                       : JW_INT_CLASS_NONE;
    }
    return spec;
  }

  std::string kernel_;
  std::string target_;
  std::string text_;
  std::vector<jw_param_spec> specs_;
  jw_compile_key_view view_{};
};

// Compiles a key on the C++ path and returns the failure (a test failure
// when it compiles).
inline Failure compile_failure(std::string_view kernel, TestKey& key) {
  try {
    reference_cpu::compile_instantiation(kernel, key.view());
  } catch (const plugin::PluginError& e) {
    return Failure{e.status(), e.what()};
  }
  FAIL("compile accepted a key it should have refused");
  return {};
}

inline bool contains(std::string_view text, std::string_view fragment) {
  return text.find(fragment) != std::string_view::npos;
}

}  // namespace jitwarm::reference_test
