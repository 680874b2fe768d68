// The compiler: a checked expression tree becomes a flat postfix program
// (expression_program.hpp). Operands are compiled in the order the language
// evaluates them, so a run fails where and as the language says; where a
// function checks its first operands before it evaluates the others (clamp's
// bounds, block_threads' count), that check is an instruction of its own
// between them, unless the later operands are known and cannot fail.
#include "expression_program.hpp"

#include <algorithm>
#include <optional>

namespace jitwarm::gpu::expr {
namespace {

class Compiler {
 public:
  Compiler(const Tree& tree, ExprScope scope, const Folding* folding, Code& out)
      : tree_(tree), scope_(scope), folding_(folding), out_(out) {}

  void compile() {
    out_ = Code{};
    out_.node_code.resize(tree_.nodes.size());
    emit(tree_.root);
    out_.depth = max_depth_;
  }

 private:
  // Appends the code of node `index` and records where it is.
  void emit(uint32_t index) {
    const auto begin = static_cast<uint32_t>(out_.instructions.size());
    emit_node(index, tree_.node(index));
    out_.node_code[index] = {begin,
                             static_cast<uint32_t>(out_.instructions.size())};
  }

  uint32_t child(const Node& n, uint32_t k) const { return tree_.child(n, k); }
  // The schema position of a parameter named as an argument.
  uint16_t handle(const Node& n, uint32_t k) const {
    return static_cast<uint16_t>(tree_.node(child(n, k)).value);
  }

  void push(uint32_t node, Instruction instruction, int delta) {
    out_.instructions.push_back(instruction);
    out_.origin.push_back(node);
    depth_ = static_cast<uint32_t>(static_cast<int>(depth_) + delta);
    max_depth_ = std::max(max_depth_, depth_);
  }
  void push(uint32_t node, uint8_t op, int delta) {
    Instruction instruction;
    instruction.op = op;
    push(node, instruction, delta);
  }
  // An instruction reading parameter `param`, pushing one value.
  void read(uint32_t node, uint8_t op, uint16_t param, int64_t value = 0) {
    Instruction instruction;
    instruction.op = op;
    instruction.param = param;
    instruction.value = value;
    push(node, instruction, +1);
  }
  void constant(uint32_t node, int64_t value) {
    Instruction instruction;
    instruction.op = pConst;
    instruction.value = value;
    push(node, instruction, +1);
  }
  // A jump whose distance patch() sets, to the end of the code so far.
  std::size_t jump(uint32_t node, uint8_t op, int delta) {
    push(node, op, delta);
    return out_.instructions.size() - 1;
  }
  void patch(std::size_t jump) {
    out_.instructions[jump].target =
        static_cast<uint32_t>(out_.instructions.size() - jump);
  }

  // The value a node has at every run, which the program may then compute
  // as a constant (only when folding: an expression's own program keeps
  // every node's code, so that each node can run alone).
  std::optional<int64_t> folded(uint32_t index) const {
    if (folding_ == nullptr || tree_.node(index).type == ExprType::text) {
      return std::nullopt;
    }
    return folding_->value(index);
  }
  // Known before the run: a literal, or folded. An instruction may hold it
  // (shape(x, 0)), and a check it makes needless is left out.
  std::optional<int64_t> known(uint32_t index) const {
    const Node& n = tree_.node(index);
    if (n.kind == kConstant && n.type != ExprType::text) return n.value;
    return folded(index);
  }

  void emit_node(uint32_t index, const Node& n) {
    if (const std::optional<int64_t> value = folded(index)) {
      constant(index, *value);
      return;
    }
    switch (n.kind) {
      case kConstant: constant(index, n.value); return;
      case kParam:
        read(index, scope_ == ExprScope::launch ? pIntParam : pConstexpr,
             static_cast<uint16_t>(n.value));
        return;
      case kLet: emit_let(index, n); return;
      case kNegate:
      case kNot:
        emit(child(n, 0));
        push(index, n.kind == kNegate ? pNegate : pNot, 0);
        return;
      case kBinary: emit_binary(index, n); return;
      case kCall: emit_call(index, n); return;
      default: return;
    }
  }

  void emit_let(uint32_t index, const Node& n) {
    if (n.type == ExprType::text) {  // a spelling let: only ever written
      push(index, pSpellingLet, +1);
      return;
    }
    Instruction load;
    if (folding_ != nullptr) {  // a varying launch let: its slot
      load.op = pLoad;
      load.target = static_cast<uint32_t>(n.value) - folding_->compile_lets;
    } else {
      load.op = pLet;
      load.target = static_cast<uint32_t>(n.value);
      load.value = n.type == ExprType::boolean ? 1 : 0;
    }
    push(index, load, +1);
  }

  void emit_binary(uint32_t index, const Node& n) {
    if (n.function == kAnd || n.function == kOr) {
      // A known left side decides alone or leaves the right side alone.
      if (const std::optional<int64_t> left = folded(child(n, 0))) {
        const bool decides = (*left != 0) == (n.function == kOr);
        if (decides) {
          constant(index, *left);
        } else {
          emit(child(n, 1));
        }
        return;
      }
      emit(child(n, 0));
      const std::size_t to_end =
          jump(index, n.function == kAnd ? pAndJump : pOrJump, -1);
      emit(child(n, 1));
      patch(to_end);
      return;
    }
    static constexpr uint8_t kOps[] = {pAdd, pSub, pMul, pDiv, pMod, pEq,
                                       pNe,  pLt,  pLe,  pGt,  pGe};
    emit(child(n, 0));
    emit(child(n, 1));
    push(index, kOps[n.function], -1);
  }

  void emit_call(uint32_t index, const Node& n) {
    switch (n.function) {
      case kMin:
      case kMax:
        emit(child(n, 0));
        for (uint32_t k = 1; k < n.child_count; ++k) {
          emit(child(n, k));
          push(index, n.function == kMin ? pMin : pMax, -1);
        }
        return;
      case kClamp: {
        // The bounds first, checked before the value is computed.
        emit(child(n, 1));
        emit(child(n, 2));
        const std::optional<int64_t> lo = known(child(n, 1));
        const std::optional<int64_t> hi = known(child(n, 2));
        if (!lo || !hi || *lo > *hi) push(index, pClampBounds, 0);
        emit(child(n, 0));
        push(index, pClamp, -2);
        return;
      }
      case kCeilDiv:
      case kRoundUp:
        emit(child(n, 0));
        emit(child(n, 1));
        push(index, n.function == kCeilDiv ? pCeilDiv : pRoundUp, -1);
        return;
      case kNextPow2:
        emit(child(n, 0));
        push(index, pNextPow2, 0);
        return;
      case kIf: emit_if(index, n); return;
      case kDtypeBytes: read(index, pDtypeBytes, handle(n, 0)); return;
      case kIsDtype:
        read(index, pIsDtype, handle(n, 0), tree_.node(child(n, 1)).value);
        return;
      case kWarpSize: push(index, pWarpSize, +1); return;
      case kElement: read(index, pElement, handle(n, 0)); return;
      case kStorage: read(index, pStorage, handle(n, 0)); return;
      case kAligned: read(index, pAligned, handle(n, 0)); return;
      case kIntType: read(index, pIntType, handle(n, 0)); return;
      case kIntClass: read(index, pIntClass, handle(n, 0)); return;
      case kDiv16: read(index, pDiv16, handle(n, 0)); return;
      case kIsOne: read(index, pIsOne, handle(n, 0)); return;
      case kFloatType: read(index, pFloatType, handle(n, 0)); return;
      case kScalarIsFloat: read(index, pScalarIsFloat, handle(n, 0)); return;
      case kShape:
      case kStride: {
        const bool shape = n.function == kShape;
        if (const std::optional<int64_t> d = known(child(n, 1))) {
          read(index, shape ? pShapeAt : pStrideAt, handle(n, 0), *d);
          return;
        }
        emit(child(n, 1));
        Instruction dimension;
        dimension.op = shape ? pShape : pStride;
        dimension.param = handle(n, 0);
        push(index, dimension, 0);
        return;
      }
      case kSmCount: push(index, pSmCount, +1); return;
      case kMaxThreads: push(index, pMaxThreads, +1); return;
      case kMaxGridX: push(index, pMaxGridX, +1); return;
      case kMaxGridY: push(index, pMaxGridY, +1); return;
      case kMaxGridZ: push(index, pMaxGridZ, +1); return;
      case kThreadsCap:
        emit(child(n, 0));
        push(index, pThreadsCap, 0);
        return;
      case kBlockThreads:
        // The count is checked before the cap is computed.
        emit(child(n, 0));
        if (!known(child(n, 1))) push(index, pAccessesFit, 0);
        emit(child(n, 1));
        push(index, pBlockThreads, -1);
        return;
      case kLanesFor:
        emit(child(n, 0));
        push(index, pLanesFor, 0);
        return;
      case kFitsDtype: {
        Instruction fits;
        fits.param = handle(n, 0);
        if (folding_ != nullptr) {
          fits.op = pFitsDtype;
          fits.value = folding_->dtype(handle(n, 1));
        } else {
          fits.op = pFitsArgDtype;
          fits.target = handle(n, 1);
        }
        push(index, fits, +1);
        return;
      }
      default: return;
    }
  }

  void emit_if(uint32_t index, const Node& n) {
    if (const std::optional<int64_t> condition = folded(child(n, 0))) {
      emit(child(n, *condition != 0 ? 1 : 2));
      return;
    }
    emit(child(n, 0));
    const std::size_t to_else = jump(index, pJumpIfFalse, -1);
    emit(child(n, 1));
    const std::size_t to_end = jump(index, pJump, 0);
    depth_ -= 1;  // the other branch starts where this one did
    patch(to_else);
    emit(child(n, 2));
    patch(to_end);
  }

  const Tree& tree_;
  ExprScope scope_;
  const Folding* folding_;
  Code& out_;
  uint32_t depth_ = 0;
  uint32_t max_depth_ = 0;
};

}  // namespace

void compile(const Tree& tree, ExprScope scope, const Folding* folding,
             Code& out) {
  Compiler(tree, scope, folding, out).compile();
}

}  // namespace jitwarm::gpu::expr
