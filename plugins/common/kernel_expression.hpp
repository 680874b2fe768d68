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

#include <array>
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
  // The same for one node (LaunchProgram folds the nodes that do not).
  bool node_varies(uint32_t node) const { return node_varies_[node] != 0; }

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
  std::vector<uint8_t> node_varies_;  // per node, launch scope
  std::vector<Node> nodes_;
  std::vector<uint32_t> children_;
  uint32_t root_ = 0;
  bool varies(uint32_t index, const ExprNames& names) const;
  friend class ExpressionParser;
  friend struct Evaluator;
  friend class LaunchProgram;
};

// Launch-scope expressions compiled for the launches of one prepared
// launch on one device (launch_plan.cpp's LaunchPlanCache): what does not
// vary per launch is folded into constants, evaluated once with the inputs
// of the launch that fills the cache; what varies (shapes, strides, scalar
// arguments and what is computed from them) becomes a flat postfix program
// that a launch runs with no recursion, allocation or text.
//
// A run computes exactly what the expressions would, or stops with false
// where their evaluation would fail (an overflow, a division by zero, a
// dimension out of range, a failed check): the caller then evaluates the
// expressions themselves, which say why. So the program never needs error
// text of its own, and the order it reads in does not matter.
class LaunchProgram {
 public:
  // Output slots. A varying launch let read by a later expression is read
  // from its slot, so launch let i must be stored in slot i.
  static constexpr uint32_t kMaxSlots = 48;

  // Appends code that stores `e`'s value in `slot` (booleans as 0 or 1).
  // False (appending nothing) when `e` uses what the program cannot
  // express; the caller then keeps evaluating `e` itself.
  bool store(const KernelExpression& e, const LaunchInputs& in, uint32_t slot);
  // Appends code that ends run() with false when boolean `e` is false.
  bool require(const KernelExpression& e, const LaunchInputs& in);

  // Runs the program on one launch's arguments (schema order, validated by
  // the core), writing its slots into `out`.
  bool run(std::span<const jw_arg_value> args,
           std::array<int64_t, kMaxSlots>& out) const;
  bool empty() const { return code_.empty(); }

  // What a run reads of the arguments, so that a caller may keep a run's
  // results for the next launch whose reads are the same
  // (launch_plan.hpp's LaunchPlanCache): two runs whose reads give equal
  // words compute the same slots, or both fail. index_inputs() lists the
  // reads of the finished program, each once; false when what it reads
  // depends on a value it computes (a dimension) or needs more than
  // `max_words` words.
  bool index_inputs(uint32_t max_words);
  uint32_t input_words() const { return input_words_; }
  // The reads' words for one launch's arguments (input_words() of them);
  // false when one cannot be read (the run would fail).
  bool read_inputs(std::span<const jw_arg_value> args,
                   std::span<uint64_t> words) const;

  struct Instruction {
    uint8_t op = 0;
    uint16_t param = 0;   // a parameter's schema position, or the warp size
    uint32_t target = 0;  // a jump's destination, or a slot
    int64_t value = 0;    // a constant, a dtype, a thread limit
  };

 private:
  // Appends node `node` of `e`; false if it cannot.
  bool emit(const KernelExpression& e, uint32_t node, const LaunchInputs& in,
            std::vector<Instruction>& code, uint32_t& depth,
            uint32_t& max_depth) const;
  bool append(const KernelExpression& e, const LaunchInputs& in,
              Instruction last);
  std::vector<Instruction> code_;
  struct Input {
    enum class Kind : uint8_t { scalar, shape, stride };
    Kind kind = Kind::scalar;
    uint16_t param = 0;
    int64_t dimension = 0;  // shape and stride
  };
  std::vector<Input> inputs_;
  uint32_t input_words_ = 0;  // a scalar reads two: its kind and bits
};

}  // namespace jitwarm::gpu
