// The descriptor expression language's one evaluator
// (plugins/common/kernel_expression.hpp): every expression runs as its
// program, a failed run says what the language says, in the order the
// language evaluates, text values are spelled by the program, and values()
// reads each value by its own code.
#include <jitwarm/plugin.hpp>

#include "kernel_expression.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace gpu = jitwarm::gpu;
using jitwarm::plugin::PluginError;

namespace {

jw_scalar int_scalar(int64_t v) {
  return {JW_SCALAR_INT, {.i = v}};
}
jw_scalar uint_scalar(uint64_t v) {
  return {JW_SCALAR_UINT, {.u = v}};
}
jw_scalar float_scalar(double v) {
  return {JW_SCALAR_FLOAT, {.f = v}};
}

// A launch of (x: float32 [4, 8], y: int32 [1, 2^32, 2^32], n, s, N) with
// the compile value `compiled` = 11 and the launch value `fixed` = 8.
struct Launch {
  std::vector<gpu::ExprParam> params{{"x", JW_PARAM_TENSOR},
                                     {"y", JW_PARAM_TENSOR},
                                     {"n", JW_PARAM_INT},
                                     {"s", JW_PARAM_SCALAR},
                                     {"N", JW_PARAM_CONSTEXPR}};
  std::vector<gpu::ExprLet> lets{
      {"compiled", gpu::ExprType::integer, gpu::ExprScope::compile, false},
      {"fixed", gpu::ExprType::integer, gpu::ExprScope::launch, false}};
  std::vector<gpu::ExprSlot> compile_lets{{11, false}};
  std::vector<gpu::ExprSlot> launch_lets{{8, false}};
  jw_tensor x{}, y{};
  std::vector<jw_arg_value> args{5};
  gpu::DeviceLimits limits;

  Launch() {
    x.struct_size = y.struct_size = sizeof(jw_tensor);
    x.meta.dtype = JW_DTYPE_FLOAT32;
    x.meta.rank = 2;
    x.meta.shape[0] = 4;
    x.meta.shape[1] = 8;
    y.meta.dtype = JW_DTYPE_INT32;
    y.meta.rank = 3;
    y.meta.shape[0] = 1;
    y.meta.shape[1] = y.meta.shape[2] = int64_t{1} << 32;
    for (jw_arg_value& a : args) {
      a.struct_size = sizeof(jw_arg_value);
      a.kind = JW_VALUE_SCALAR;
    }
    args[0].kind = args[1].kind = JW_VALUE_TENSOR;
    args[0].value.tensor = &x;
    args[1].value.tensor = &y;
    set(int_scalar(0), int_scalar(0));
    args[4].value.scalar = int_scalar(4);
  }
  Launch& set(jw_scalar n, jw_scalar s) {
    args[2].value.scalar = n;
    args[3].value.scalar = s;
    return *this;
  }
  gpu::LaunchInputs inputs() const {
    gpu::LaunchInputs in;
    in.args = args;
    in.limits = &limits;
    in.compile_lets = compile_lets;
    in.lets = launch_lets;
    return in;
  }
  gpu::KernelExpression parse(std::string_view text) const {
    return gpu::KernelExpression::parse(text, gpu::ExprNames{params, lets},
                                        gpu::ExprScope::launch);
  }
  // Evaluates `text` ("" when it does not throw, else what it says).
  std::string failure_of(std::string_view text) const {
    const gpu::KernelExpression e = parse(text);
    try {
      if (e.type() == gpu::ExprType::boolean) {
        e.boolean(inputs());
      } else {
        e.integer(inputs());
      }
    } catch (const PluginError& error) {
      return error.what();
    }
    return "";
  }
};

// A compile key of (x, n, s, f, N) and the compile values `compiled` and
// the spelling `T`.
struct Key {
  std::vector<gpu::ExprParam> params{{"x", JW_PARAM_TENSOR},
                                     {"n", JW_PARAM_INT},
                                     {"s", JW_PARAM_SCALAR},
                                     {"f", JW_PARAM_FLOAT},
                                     {"N", JW_PARAM_CONSTEXPR}};
  std::vector<gpu::ExprLet> lets{
      {"compiled", gpu::ExprType::integer, gpu::ExprScope::compile, false},
      {"T", gpu::ExprType::text, gpu::ExprScope::compile, false}};
  std::vector<gpu::ExprSlot> values{{11, false}, {}};
  std::vector<jw_param_spec> specs{5};
  jw_compile_key_view view{};

  Key() {
    specs[0].kind = JW_PARAM_TENSOR;
    specs[0].dtype = JW_DTYPE_BFLOAT16;
    specs[1].kind = JW_PARAM_INT;
    specs[1].int_spec = {JW_INT_I64, JW_INT_CLASS_DIV16};
    specs[2].kind = JW_PARAM_SCALAR;
    specs[2].scalar_kind = JW_SCALAR_FLOAT;
    specs[2].float_type = JW_FLOAT_F32;
    specs[3].kind = JW_PARAM_FLOAT;
    specs[3].float_type = JW_FLOAT_F64;
    specs[4].kind = JW_PARAM_CONSTEXPR;
    specs[4].constexpr_value = int_scalar(3);
    view.struct_size = sizeof(view);
    view.params = specs.data();
    view.num_params = static_cast<uint32_t>(specs.size());
  }
  gpu::CompileInputs inputs() const {
    gpu::CompileInputs in;
    in.key = &view;
    in.lets = values;
    return in;
  }
  gpu::KernelExpression parse(std::string_view text) const {
    return gpu::KernelExpression::parse(text, gpu::ExprNames{params, lets},
                                        gpu::ExprScope::compile);
  }
  std::string spelling(std::string_view text) const {
    return parse(text).spelling(inputs());
  }
  std::string failure_of(std::string_view text) const {
    try {
      spelling(text);
    } catch (const PluginError& error) {
      return error.what();
    }
    return "";
  }
};

}  // namespace

TEST_CASE(
    "given launch expressions that cannot be evaluated, then each says what "
    "failed, as the language evaluates: left to right, a function's checks "
    "before the operands it evaluates after them") {
  Launch launch;
  launch.set(int_scalar(1), int_scalar(0));
  CHECK(launch.failure_of("n + 9223372036854775807") ==
        "'n + 9223372036854775807' overflows a 64-bit integer");
  CHECK(launch.failure_of("1 + n / (n - 1)") ==
        "'n / (n - 1)' divides by zero");
  CHECK(launch.failure_of("-9223372036854775807 - n - n") ==
        "'-9223372036854775807 - n - n' overflows a 64-bit integer");
  CHECK(launch.failure_of("shape(x, n + 1)") ==
        "'shape(x, n + 1)': the tensor has rank 2");
  CHECK(launch.failure_of("stride(y, 0)") ==
        "'stride(y, 0)' overflows a 64-bit integer");
  CHECK(launch.failure_of("ceil_div(n, 0)") ==
        "'ceil_div(n, 0)' needs a positive divisor");
  CHECK(launch.failure_of("round_up(-n, 4)") ==
        "'round_up(-n, 4)' needs a count, not a negative");
  CHECK(launch.failure_of("next_pow2(9223372036854775807 - n)") ==
        "'next_pow2(9223372036854775807 - n)' overflows");
  CHECK(launch.failure_of("clamp(n, 5, 1)") ==
        "'clamp(n, 5, 1)': the bounds cross");
  // clamp checks its bounds before the value, block_threads its count
  // before the cap.
  CHECK(launch.failure_of("clamp(n / 0, n + 1, n)") ==
        "'clamp(n / 0, n + 1, n)': the bounds cross");
  CHECK(
      launch.failure_of("block_threads(9223372036854775807 - n + 1, n / 0)") ==
      "'block_threads(9223372036854775807 - n + 1, n / 0)' overflows");
  CHECK(launch.failure_of("block_threads(n, n / 0)") ==
        "'n / 0' divides by zero");
  // && and if evaluate only what they need.
  CHECK(launch.failure_of("n == 1 || n / 0 > 1").empty());
  CHECK(launch.failure_of("if(n > 0, 1, n / 0)").empty());
  // Arguments read as integers.
  launch.set(uint_scalar((uint64_t{1} << 63) + 1), float_scalar(0.5));
  CHECK(launch.failure_of("n") ==
        "'n' = 9223372036854775809 is too large for an expression");
  CHECK(launch.failure_of("s + 1") == "'s' is not an integer here");
  CHECK(launch.failure_of("fits_dtype(n, x) && !fits_dtype(s, y)").empty());
  // C++ division: INT64_MIN % -1 is 0, INT64_MIN / -1 overflows.
  launch.set(int_scalar(INT64_MIN), int_scalar(-1));
  CHECK(launch.parse("n % s").integer(launch.inputs()) == 0);
  CHECK(launch.failure_of("n / s") == "'n / s' overflows a 64-bit integer");
}

TEST_CASE(
    "given compile expressions, then the program spells text values, and a "
    "key they cannot be evaluated for says why") {
  Key key;
  CHECK(key.spelling("element(x)") == "jw::bf16");
  CHECK(key.spelling("storage(x)") == "jw::u16");
  CHECK(key.spelling("int_type(n)") == "jw::i64");
  CHECK(key.spelling("float_type(s)") == "float");
  CHECK(key.spelling("if(is_dtype(x, \"bfloat16\"), float_type(f), "
                     "element(x))") == "double");
  CHECK(key.spelling("int_class(n) * 10 + compiled") == "31");
  CHECK(key.spelling("div16(n) && !is_one(n) && scalar_is_float(s)") == "true");
  CHECK(key.spelling("N * warp_size + dtype_bytes(x)") == "98");
  CHECK(key.failure_of("int_type(s)") == "'s' is not an integer in this key");
  CHECK(key.failure_of("if(N > 5, element(x), T)") ==
        "'T' is a spelling let; use it only once");
  CHECK(key.failure_of("if(N > 1, element(x), T)").empty());
  key.specs[2].scalar_kind = JW_SCALAR_INT;
  CHECK(key.failure_of("float_type(s)") == "'s' is not a float in this key");
  key.specs[0].dtype = JW_DTYPE_BOOL;
  CHECK(key.failure_of("element(x)") ==
        "no GPU element type for dtype " + std::to_string(JW_DTYPE_BOOL));
  key.specs[4].constexpr_value = uint_scalar((uint64_t{1} << 63) + 1);
  CHECK(key.failure_of("N") == "'N' is too large for an expression");
  key.specs[4].constexpr_value = float_scalar(2.0);
  CHECK(key.failure_of("N + 1") == "'N' is a float; expressions use integers");
}

TEST_CASE(
    "given a check, then values() lists every value it reads, each computed "
    "by its own code, also where the check did not need it") {
  Launch launch;
  launch.set(int_scalar(5), int_scalar(2));
  const auto values = [&](std::string_view text) {
    return launch.parse(text).values(launch.inputs());
  };
  CHECK(values("n > 0 && shape(x, 1) == n") == "n = 5, shape(x, 1) = 8");
  CHECK(values("n < 0 && shape(x, 0) > 100 + fixed") ==
        "n = 5, shape(x, 0) = 4, fixed = 8");
  CHECK(values("shape(x, n) >= compiled") == "shape(x, n) = ?, compiled = 11");
  CHECK(values("fits_dtype(s, y) && min(n, s) == s") ==
        "fits_dtype(s, y) = true, n = 5, s = 2");
}

TEST_CASE(
    "given an expression nested deeper than the evaluator's stack on the "
    "stack, then it evaluates all the same") {
  Launch launch;
  launch.set(int_scalar(7), int_scalar(0));
  std::string text = "n";
  for (int depth = 0; depth < 200; ++depth) text = "1 + (" + text + ")";
  CHECK(launch.parse(text).integer(launch.inputs()) == 207);
  CHECK(launch.failure_of("1 + (" + text + ") / (n - 7)") ==
        "'(" + text + ") / (n - 7)' divides by zero");
}
