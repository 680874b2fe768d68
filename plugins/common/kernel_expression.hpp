// KernelExpression: the small expression language of kernel descriptors
// (kernel_descriptor.hpp; docs/kernel-descriptors.md has the reference).
// A descriptor says with expressions how a compile key becomes template
// arguments and defines (compile scope) and how a launch's grid, block,
// checks and extra parameters come from its arguments (launch scope).
//
//   integers  1024, -3          booleans  true, false      text "float32"
//   operators + - * / % == != < <= > >= && || ! and ( )
//   if(c, a, b) evaluates only the branch it takes; min, max, clamp,
//   ceil_div, round_up, next_pow2; parameter names; earlier `let` names;
//   built-in functions of each scope (the table in kernel_expression.cpp).
//
// Expressions are parsed and type-checked once, when the descriptor is
// read: an unknown name, a wrong argument or a function of the other scope
// is an error naming the column. Evaluation allocates nothing, builds no
// text (except compile-scope text values, which are spellings) and checks
// integer overflow; a failure throws plugin::PluginError.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "launch_plan.hpp"

namespace jitwarm::gpu {

enum class ExprScope { compile, launch };
enum class ExprType { integer, boolean, text };

// A parse or type error; column is 1-based within the expression text.
class ExpressionError : public std::runtime_error {
 public:
  ExpressionError(std::size_t column, const std::string& message)
      : std::runtime_error(message), column_(column) {}
  std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

// What names an expression may use: the schema's parameters (by position)
// and the `let` values defined before it.
struct ExprParam {
  std::string name;
  jw_param_kind kind;
};
struct ExprLet {
  std::string name;
  ExprType type;
  ExprScope scope;  // compile lets are read at launch too (integers, bools)
  // A launch let whose value can differ between launches of one prepared
  // launch (KernelExpression::varies_per_launch). Compile lets never do.
  bool varies = false;
};
struct ExprNames {
  std::span<const ExprParam> params;
  std::span<const ExprLet> lets;
};

// The value of a let while evaluating (indexed like ExprNames::lets).
struct ExprSlot {
  int64_t integer = 0;
  bool boolean = false;
};

// What compile-scope expressions read.
struct CompileInputs {
  const jw_compile_key_view* key = nullptr;  // params in schema order
  uint32_t warp_size = 32;
  std::span<const ExprSlot> lets;
};

// What launch-scope expressions read.
struct LaunchInputs {
  std::span<const jw_arg_value> args;  // schema order, validated by the core
  const DeviceLimits* limits = nullptr;
  std::span<const ExprSlot> compile_lets;  // from the instantiation
  std::span<const ExprSlot> lets;          // launch lets so far
};

class KernelExpression {
 public:
  KernelExpression() = default;
  // Throws ExpressionError.
  static KernelExpression parse(std::string_view text, const ExprNames& names,
                                ExprScope scope);

  ExprType type() const { return type_; }
  const std::string& text() const { return text_; }
  // Launch scope: whether the value can differ between launches of one
  // artifact on one device. False when it reads only constants, constexprs
  // (their values are the key's), compile values, dtypes (the key's too),
  // the device's limits and launch values that do not vary themselves; true
  // when it reads a shape, a stride or a scalar argument. The launch planner
  // evaluates the others once per prepared launch and device
  // (launch_plan.hpp, LaunchPlanCache).
  bool varies_per_launch() const { return varies_; }

  // Compile scope. Text values are spellings (element(x) -> "jw::bf16").
  int64_t integer(const CompileInputs& in) const;
  bool boolean(const CompileInputs& in) const;
  std::string spelling(const CompileInputs& in) const;
  // Launch scope.
  int64_t integer(const LaunchInputs& in) const;
  bool boolean(const LaunchInputs& in) const;

  // For messages when a check fails: "shape(x, 1) = 99, H = 100", the
  // values of the parameters and calls the expression reads.
  std::string values(const LaunchInputs& in) const;
  std::string values(const CompileInputs& in) const;

  // One node of the parsed expression (children are indices into
  // children_, which index nodes_).
  struct Node {
    uint8_t op = 0;        // kernel_expression.cpp's Op
    uint8_t function = 0;  // its Function, for calls
    ExprType type = ExprType::integer;
    int64_t value = 0;  // constant, parameter index or let index
    uint32_t first_child = 0;
    uint32_t child_count = 0;
    uint32_t column = 0;  // where it starts, for messages
    uint32_t length = 0;  // of its text
  };

 private:
  std::string text_;
  ExprType type_ = ExprType::integer;
  ExprScope scope_ = ExprScope::compile;
  bool varies_ = true;
  std::vector<Node> nodes_;
  std::vector<uint32_t> children_;
  uint32_t root_ = 0;
  bool varies(uint32_t index, const ExprNames& names) const;
  friend class ExpressionParser;
  friend struct Evaluator;
};

}  // namespace jitwarm::gpu
