// LaunchProgram: a prepared launch's varying expressions, folded and
// compiled together, run at every launch the plan cache does not remember.
#include "launch_program.hpp"

#include "kernel_expression.hpp"

#include <cstring>
#include <optional>

namespace jitwarm::gpu {
namespace expr {
namespace {

// The stack a launch keeps for the program (a run allocates nothing).
constexpr uint32_t kMaxProgramStack = 16;

// Whether a launch's run can execute `op`: it passes the arguments, the
// slots and the device's warp size and thread limit, nothing else (what
// reads the key, the lets or the other limits never varies, so it is
// folded).
bool runs_at_launch(uint8_t op) {
  switch (op) {
    case pLet:
    case pSpellingLet:
    case pConstexpr:
    case pDtypeBytes:
    case pIsDtype:
    case pFitsArgDtype:
    case pWarpSize:
    case pSmCount:
    case pMaxThreads:
    case pMaxGridX:
    case pMaxGridY:
    case pMaxGridZ:
    case pAligned:
    case pScalarIsFloat:
    case pIntClass:
    case pDiv16:
    case pIsOne:
    case pElement:
    case pStorage:
    case pIntType:
    case pFloatType: return false;
    default: return true;
  }
}

}  // namespace
}  // namespace expr

using expr::Inputs;
using expr::Instruction;

bool LaunchProgram::append(const KernelExpression& e, const LaunchInputs& in,
                           Instruction last) {
  // A node that is the same at every launch: its value now is its value
  // then. If it fails now it is compiled as it is (it may sit in a branch
  // that is never taken).
  const ProgramInputs filling(in);
  const Inputs& now = filling.inputs();
  expr::Folding folding;
  folding.value = [&](uint32_t node) -> std::optional<int64_t> {
    if (e.node_varies(node)) return std::nullopt;
    return e.node_value(node, now);
  };
  folding.dtype = [&](uint16_t tensor) {
    return in.args[tensor].value.tensor->meta.dtype;
  };
  folding.compile_lets = static_cast<uint32_t>(in.compile_lets.size());
  expr::Code code;
  expr::compile(e.tree(), ExprScope::launch, &folding, code);
  if (code.depth > expr::kMaxProgramStack) return false;
  for (const Instruction& i : code.instructions) {
    if (!expr::runs_at_launch(i.op) ||
        (i.op == expr::pLoad && i.target >= kMaxSlots)) {
      return false;
    }
  }
  code.instructions.push_back(last);
  code_.insert(code_.end(), code.instructions.begin(), code.instructions.end());
  warp_ = now.warp;
  thread_limit_ = now.thread_limit;
  return true;
}

bool LaunchProgram::store(const KernelExpression& e, const LaunchInputs& in,
                          uint32_t slot) {
  if (slot >= kMaxSlots) return false;
  Instruction store;
  store.op = expr::pStore;
  store.target = slot;
  return append(e, in, store);
}

bool LaunchProgram::require(const KernelExpression& e, const LaunchInputs& in) {
  Instruction require;
  require.op = expr::pRequire;
  return append(e, in, require);
}

bool LaunchProgram::run(std::span<const jw_arg_value> args,
                        std::array<int64_t, kMaxSlots>& out) const {
  std::array<int64_t, expr::kMaxProgramStack + 1> stack;
  Inputs in;
  in.args = args;
  in.warp = warp_;
  in.thread_limit = thread_limit_;
  in.slots = out.data();
  expr::Failure failure;
  return expr::run(code_, in, stack, failure);
}

bool LaunchProgram::index_inputs(uint32_t max_words) {
  inputs_.clear();
  input_words_ = 0;
  const auto add = [&](Input::Kind kind, uint16_t param, int64_t dimension) {
    for (const Input& known : inputs_) {
      if (known.kind == kind && known.param == param &&
          known.dimension == dimension) {
        return;
      }
    }
    inputs_.push_back(Input{kind, param, dimension});
    input_words_ += kind == Input::Kind::scalar ? 2 : 1;
  };
  for (const Instruction& i : code_) {
    switch (i.op) {
      case expr::pIntParam:
      case expr::pFitsDtype: add(Input::Kind::scalar, i.param, 0); break;
      case expr::pShapeAt: add(Input::Kind::shape, i.param, i.value); break;
      case expr::pStrideAt: add(Input::Kind::stride, i.param, i.value); break;
      case expr::pShape:
      case expr::pStride:
        inputs_.clear();
        input_words_ = 0;
        return false;
      default: break;
    }
  }
  if (input_words_ > max_words) {
    inputs_.clear();
    input_words_ = 0;
    return false;
  }
  return true;
}

bool LaunchProgram::read_inputs(std::span<const jw_arg_value> args,
                                std::span<uint64_t> words) const {
  std::size_t w = 0;
  for (const Input& input : inputs_) {
    const jw_arg_value& arg = args[input.param];
    if (input.kind == Input::Kind::scalar) {
      words[w++] = arg.value.scalar.kind;
      std::memcpy(&words[w++], &arg.value.scalar.value, sizeof(uint64_t));
      continue;
    }
    int64_t value = 0;
    if (!expr::tensor_dimension(arg.value.tensor->meta,
                                input.kind == Input::Kind::shape,
                                input.dimension, value)) {
      return false;
    }
    words[w++] = static_cast<uint64_t>(value);
  }
  return true;
}

}  // namespace jitwarm::gpu
