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
//   built-in functions of each scope (expression_syntax.hpp's table).
//
// Expressions are parsed, type-checked and compiled once, when the
// descriptor is read, by stages a file each:
//
//   expression_parser.cpp       text -> checked tree (expression_syntax.hpp)
//   expression_compiler.cpp     tree -> program (expression_program.hpp)
//   expression_interpreter.cpp  runs a program
//   expression_diagnostics.cpp  a failed run -> its message; values()
//
// An unknown name, a wrong argument or a function of the other scope is an
// ExpressionError naming the column. Evaluating an expression is running
// its program, in both scopes: it allocates nothing, builds no text (except
// compile-scope text values, which are spellings) and checks integer
// overflow; a failure throws plugin::PluginError with the message the
// diagnostics make of it.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "expression_program.hpp"
#include "expression_syntax.hpp"
#include "launch_plan.hpp"

namespace jitwarm::gpu {

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

// What a run of a compile or launch expression's program reads (inputs()
// points into it, so it is neither copied nor moved).
class ProgramInputs {
 public:
  explicit ProgramInputs(const CompileInputs& in);
  explicit ProgramInputs(const LaunchInputs& in);
  ProgramInputs(const ProgramInputs&) = delete;
  ProgramInputs& operator=(const ProgramInputs&) = delete;
  const expr::Inputs& inputs() const { return inputs_; }

 private:
  expr::Context context_;
  expr::Inputs inputs_;
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
  // The same for one node (LaunchProgram folds the nodes that do not).
  bool node_varies(uint32_t node) const { return tree_.varies[node] != 0; }

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

  // What the stages read: the parsed tree and its program.
  const expr::Tree& tree() const { return tree_; }
  const expr::Code& code() const { return code_; }
  // The value of node `node`, its own code run alone; none where that run
  // fails (or the node has no code of its own: a parameter named as an
  // argument).
  std::optional<int64_t> node_value(uint32_t node,
                                    const expr::Inputs& in) const;

 private:
  // Runs the program; a failure throws its message.
  int64_t evaluate(const expr::Inputs& in) const;
  bool run(expr::Code::Range code, const expr::Inputs& in, int64_t& result,
           expr::Failure& failure) const;

  std::string text_;
  ExprType type_ = ExprType::integer;
  bool varies_ = true;
  expr::Tree tree_;
  expr::Code code_;
};

}  // namespace jitwarm::gpu
