// The descriptor expression language as its stages see it: the two scopes
// and three types, the names an expression may use, the checked tree the
// parser makes (expression_parser.cpp) and the table of built-in functions. The
// compiler (expression_compiler.cpp) turns the tree into a program, the
// diagnostics (expression_diagnostics.cpp) name its nodes in messages. Nothing
// here evaluates: expression_program.hpp's program does, everywhere.
#pragma once

#include <jitwarm/jitwarm.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

namespace expr {

enum NodeKind : uint8_t {
  kConstant,  // value (integer or boolean), or a dtype literal (text)
  kParam,     // value = schema position
  kLet,       // value = let index
  kNegate,
  kNot,
  kBinary,  // function = the operator (BinaryOp)
  kCall,    // function = Function
};

enum BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

// What a function's argument must be.
enum class Arg : uint8_t {
  integer,
  boolean,
  any,      // integer, boolean or text (if's branches)
  tensor,   // a tensor parameter's name
  intp,     // an integer (or scalar) parameter's name
  floatp,   // a float (or scalar) parameter's name
  scalarp,  // a scalar parameter's name
  dtype,    // a dtype name as text ("float32")
};

// A parameter named as an argument: only its schema position is used (a
// handle), it is not read as a value.
constexpr bool names_a_parameter(Arg arg) {
  return arg == Arg::tensor || arg == Arg::intp || arg == Arg::floatp ||
         arg == Arg::scalarp;
}

enum Function : uint8_t {
  // Both scopes
  kMin,
  kMax,
  kClamp,
  kCeilDiv,
  kRoundUp,
  kNextPow2,
  kIf,
  kDtypeBytes,
  kIsDtype,
  kWarpSize,
  // Compile scope
  kElement,
  kStorage,
  kAligned,
  kIntType,
  kIntClass,
  kDiv16,
  kIsOne,
  kFloatType,
  kScalarIsFloat,
  // Launch scope
  kShape,
  kStride,
  kSmCount,
  kMaxThreads,
  kMaxGridX,
  kMaxGridY,
  kMaxGridZ,
  kThreadsCap,
  kBlockThreads,
  kLanesFor,
  kFitsDtype,
};

struct FunctionInfo {
  const char* name;
  Function function;
  std::array<Arg, 3> args;
  uint8_t min_args, max_args;  // max 255: variadic over the first kind
  ExprType result;             // for kIf: the branches' type
  int8_t scope;                // -1 both, 0 compile, 1 launch
};

inline constexpr uint8_t kVariadic = 255;

// What argument `i` (0-based) of `f` must be.
constexpr Arg argument_kind(const FunctionInfo& f, std::size_t i) {
  return f.args[std::min<std::size_t>(i, f.max_args == kVariadic ? 0 : 2)];
}

// The built-in functions (docs/kernel-descriptors.md, "Functions").
inline constexpr FunctionInfo kFunctions[] = {
    {"min", kMin, {Arg::integer}, 2, kVariadic, ExprType::integer, -1},
    {"max", kMax, {Arg::integer}, 2, kVariadic, ExprType::integer, -1},
    {"clamp",
     kClamp,
     {Arg::integer, Arg::integer, Arg::integer},
     3,
     3,
     ExprType::integer,
     -1},
    {"ceil_div",
     kCeilDiv,
     {Arg::integer, Arg::integer},
     2,
     2,
     ExprType::integer,
     -1},
    {"round_up",
     kRoundUp,
     {Arg::integer, Arg::integer},
     2,
     2,
     ExprType::integer,
     -1},
    {"next_pow2", kNextPow2, {Arg::integer}, 1, 1, ExprType::integer, -1},
    {"if",
     kIf,
     {Arg::boolean, Arg::any, Arg::any},
     3,
     3,
     ExprType::integer,
     -1},
    {"dtype_bytes", kDtypeBytes, {Arg::tensor}, 1, 1, ExprType::integer, -1},
    {"is_dtype",
     kIsDtype,
     {Arg::tensor, Arg::dtype},
     2,
     2,
     ExprType::boolean,
     -1},
    {"warp_size", kWarpSize, {}, 0, 0, ExprType::integer, -1},
    {"element", kElement, {Arg::tensor}, 1, 1, ExprType::text, 0},
    {"storage", kStorage, {Arg::tensor}, 1, 1, ExprType::text, 0},
    {"aligned", kAligned, {Arg::tensor}, 1, 1, ExprType::boolean, 0},
    {"int_type", kIntType, {Arg::intp}, 1, 1, ExprType::text, 0},
    {"int_class", kIntClass, {Arg::intp}, 1, 1, ExprType::integer, 0},
    {"div16", kDiv16, {Arg::intp}, 1, 1, ExprType::boolean, 0},
    {"is_one", kIsOne, {Arg::intp}, 1, 1, ExprType::boolean, 0},
    {"float_type", kFloatType, {Arg::floatp}, 1, 1, ExprType::text, 0},
    {"scalar_is_float",
     kScalarIsFloat,
     {Arg::scalarp},
     1,
     1,
     ExprType::boolean,
     0},
    {"shape", kShape, {Arg::tensor, Arg::integer}, 2, 2, ExprType::integer, 1},
    {"stride",
     kStride,
     {Arg::tensor, Arg::integer},
     2,
     2,
     ExprType::integer,
     1},
    {"sm_count", kSmCount, {}, 0, 0, ExprType::integer, 1},
    {"max_threads", kMaxThreads, {}, 0, 0, ExprType::integer, 1},
    {"max_grid_x", kMaxGridX, {}, 0, 0, ExprType::integer, 1},
    {"max_grid_y", kMaxGridY, {}, 0, 0, ExprType::integer, 1},
    {"max_grid_z", kMaxGridZ, {}, 0, 0, ExprType::integer, 1},
    {"threads_cap", kThreadsCap, {Arg::integer}, 1, 1, ExprType::integer, -1},
    {"block_threads",
     kBlockThreads,
     {Arg::integer, Arg::integer},
     2,
     2,
     ExprType::integer,
     -1},
    {"lanes_for", kLanesFor, {Arg::integer}, 1, 1, ExprType::integer, 1},
    {"fits_dtype",
     kFitsDtype,
     {Arg::intp, Arg::tensor},
     2,
     2,
     ExprType::boolean,
     1},
};

inline const FunctionInfo* find_function(std::string_view name) {
  for (const FunctionInfo& f : kFunctions) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// One node of a parsed expression (children are indices into
// Tree::children, which index Tree::nodes).
struct Node {
  uint8_t kind = 0;      // NodeKind
  uint8_t function = 0;  // its Function (kCall) or BinaryOp (kBinary)
  ExprType type = ExprType::integer;
  int64_t value = 0;  // constant, parameter index or let index
  uint32_t first_child = 0;
  uint32_t child_count = 0;
  uint32_t column = 0;  // where it starts (1-based), for messages
  uint32_t length = 0;  // of its text
};

// A parsed, type-checked expression. varies[i]: whether node i can differ
// between launches of one prepared launch (launch scope;
// KernelExpression::node_varies).
struct Tree {
  std::vector<Node> nodes;
  std::vector<uint32_t> children;
  std::vector<uint8_t> varies;
  uint32_t root = 0;

  const Node& node(uint32_t i) const { return nodes[i]; }
  uint32_t child(const Node& n, uint32_t k) const {
    return children[n.first_child + k];
  }
};

// Parses and type-checks `text` (expression_parser.cpp): an unknown name, a
// wrong argument or a function of the other scope throws ExpressionError
// naming the column. The tree's varies are set for the launch scope.
Tree parse(std::string_view text, const ExprNames& names, ExprScope scope);

}  // namespace expr
}  // namespace jitwarm::gpu
