// The one evaluator of the descriptor expression language: every
// expression, of either scope, is compiled to a flat postfix program when it
// is parsed (expression_compiler.cpp), and running that program
// (expression_interpreter.cpp) is how an expression is evaluated anywhere:
// compile checks, values, template arguments and defines, launch checks,
// values, block, grid, shared memory and extra arguments. The launch
// planner's per-device program (launch_program.hpp) is the same instruction
// set, compiled with what does not vary folded into constants.
//
// A run computes exactly what the language defines
// (docs/kernel-descriptors.md) or stops at the first instruction whose
// operation fails, in the order the language evaluates (left to right,
// && || and if only what they need), saying which instruction and why
// (Failure). It allocates nothing and builds no text: the message is made
// afterwards from the failure, the expression's text and the inputs
// (expression_diagnostics.cpp).
//
// Values are 64-bit integers; booleans are 0 or 1; a text value (compile
// scope: element(x), int_type(n), ...) is a spelling code, which names a
// table and an entry (a dtype, an integer or a float type) and is spelled
// once the run is done (spelling_of).
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "expression_syntax.hpp"

namespace jitwarm::gpu {

struct DeviceLimits;  // launch_plan.hpp

// The value of a let while evaluating (indexed like ExprNames::lets).
struct ExprSlot {
  int64_t integer = 0;
  bool boolean = false;
};

namespace expr {

enum Opcode : uint8_t {
  // Values (push one)
  pConst,         // value
  pLoad,          // slots[target] (a launch program's varying launch let)
  pLet,           // let `target` (value: 1 boolean, 0 integer)
  pSpellingLet,   // fails: a spelling let is only ever written where it is
  pIntParam,      // launch: scalar argument `param` as an integer
  pConstexpr,     // compile: the key's value of constexpr `param`
  pShapeAt,       // shape(param, value)
  pStrideAt,      // stride(param, value)
  pDtypeBytes,    // bytes of tensor `param`'s dtype
  pIsDtype,       // tensor `param` has dtype `value`
  pFitsDtype,     // scalar argument `param` fits dtype `value`
  pFitsArgDtype,  // scalar argument `param` fits tensor `target`'s dtype
  pWarpSize,
  pSmCount,
  pMaxThreads,
  pMaxGridX,
  pMaxGridY,
  pMaxGridZ,
  pAligned,        // compile: tensor `param` is 16-byte aligned
  pScalarIsFloat,  // compile: scalar `param` was passed a float
  pIntClass,       // compile: integer `param`'s class
  pDiv16,
  pIsOne,
  pElement,    // compile: spelling of tensor `param`'s element type
  pStorage,    // compile: spelling of its storage type
  pIntType,    // compile: spelling of integer `param`'s type
  pFloatType,  // compile: spelling of float `param`'s type
  // Operators (pop their operands, push the result)
  pShape,   // pop d; push shape(param, d)
  pStride,  // pop d; push stride(param, d)
  pNegate,
  pNot,
  pAdd,
  pSub,
  pMul,
  pDiv,
  pMod,
  pEq,
  pNe,
  pLt,
  pLe,
  pGt,
  pGe,
  pMin,
  pMax,
  pClampBounds,  // lo, hi on top: fails when they cross, pops nothing
  pClamp,        // pop x, hi, lo
  pCeilDiv,
  pRoundUp,
  pNextPow2,
  pThreadsCap,
  pAccessesFit,  // block_threads' first operand on top: fails when it
                 // overflows a whole warp, pops nothing
  pBlockThreads,
  pLanesFor,
  // Control
  pAndJump,      // top false: jump by target keeping it; else pop
  pOrJump,       // top true: jump by target keeping it; else pop
  pJumpIfFalse,  // pop; false: jump by target
  pJump,
  pStore,    // pop into slots[target]
  pRequire,  // pop; false: the run fails
};

struct Instruction {
  uint8_t op = 0;       // Opcode
  uint16_t param = 0;   // a parameter's schema position
  uint32_t target = 0;  // a jump's distance, a slot, a let, a tensor
  int64_t value = 0;    // a constant, a dimension, a dtype
};

// What only an expression's own program reads: the key (compile scope),
// the device's limits (launch scope) and the lets, compile lets first among
// the let indices (as in ExprNames). A launch program has all of it folded.
struct Context {
  const jw_compile_key_view* key = nullptr;  // params in schema order
  const DeviceLimits* limits = nullptr;
  std::span<const ExprSlot> compile_lets;
  std::span<const ExprSlot> launch_lets;
};

// What a run reads: a launch program's, its arguments, slots and the
// device's warp size and thread limit; an expression's own, its context too.
struct Inputs {
  std::span<const jw_arg_value> args;  // schema order, validated
  int64_t* slots = nullptr;            // pLoad, pStore
  int64_t warp = 32;                   // warp_size (at least 1 at launch)
  int64_t thread_limit = INT64_MAX;    // threads_cap's (launch: max_threads)
  const Context* context = nullptr;
};

// Why a run stopped, at which instruction (an index into its code).
struct Failure {
  enum class Reason : uint8_t {
    overflow,  // of a 64-bit integer (the whole expression's)
    divides_by_zero,
    value_too_large,  // an argument or a constexpr above 2^63-1
    not_an_integer,   // a float argument read as an integer
    float_constexpr,  // a constexpr the key holds as a float
    spelling_let,
    not_integer_in_key,  // int_type(p) etc. of a scalar passed a float
    not_float_in_key,    // float_type(p) of a scalar passed an integer
    bounds_cross,        // clamp
    divisor,             // ceil_div, round_up: not positive
    negative_count,      // ceil_div, round_up
    overflows,           // next_pow2, block_threads
    rank,                // shape, stride: no such dimension
    check,               // pRequire
  };
  // Written only when a run fails.
  uint32_t at;
  Reason reason;
};

// An expression's program: its instructions, and what messages need of
// them. Each node's code is one run of instructions (its operands' code,
// then its own), so a node can be run alone: values() shows the values an
// expression read, and a launch program folds what does not vary.
struct Code {
  struct Range {
    uint32_t begin = 0, end = 0;  // empty: no code (a handle, a literal
                                  // an instruction holds)
  };
  std::vector<Instruction> instructions;
  std::vector<uint32_t> origin;  // per instruction: the node it computes
  std::vector<Range> node_code;  // per node
  uint32_t depth = 0;            // the most values on the stack at once
};

// Runs `code` with `stack` holding at least its depth + 1 values. On
// success the value it computes, if it leaves one, is stack[1]; on failure
// `failure` says where (an index into `code`) and why. Jumps are forward
// and relative, so any node's code runs alone as well.
bool run(std::span<const Instruction> code, const Inputs& in,
         std::span<int64_t> stack, Failure& failure);

// Shape or stride `d` of a tensor (compact row-major when it has no
// strides) into `value`; false when it has no dimension `d` or the stride
// overflows. Inline: a shape is what launch programs read most.
// tensor_stride: for a `d` below the rank.
bool tensor_stride(const jw_tensor_meta& m, int64_t d, int64_t& value);
inline bool tensor_dimension(const jw_tensor_meta& m, bool shape, int64_t d,
                             int64_t& value) {
  if (d < 0 || d >= static_cast<int64_t>(m.rank)) return false;
  if (!shape) return tensor_stride(m, d, value);
  value = m.shape[d];
  return true;
}

// What the compiler may take as known when every run of the program it
// compiles has the same values for some nodes (a launch program, compiled
// for one prepared launch on one device). An expression's own program
// knows nothing: it runs with any inputs.
struct Folding {
  // The value node `node` has at every run, if it has one.
  std::function<std::optional<int64_t>(uint32_t node)> value;
  // The dtype of tensor parameter `tensor` (the key's).
  std::function<jw_dtype(uint16_t tensor)> dtype;
  // Lets below this index are compile lets, always known; launch let i
  // (the let index less this) is read from slot i.
  uint32_t compile_lets = 0;
};

// Compiles `tree` (of `scope`) into `out`; with `folding`, what it knows
// is compiled as constants and branches it decides are left out.
void compile(const Tree& tree, ExprScope scope, const Folding* folding,
             Code& out);

// Text values: a spelling code names one of these tables and an entry.
enum class Spelling : uint8_t { element, storage, int_type, float_type };
constexpr int64_t spelling_code(Spelling table, int64_t entry) {
  return static_cast<int64_t>(table) << 32 | entry;
}
// The C++ spelling of a code (kernel_instantiation.hpp's tables); throws
// plugin::PluginError as they do, for a dtype no kernel takes.
std::string_view spelling_of(int64_t code);

}  // namespace expr
}  // namespace jitwarm::gpu
