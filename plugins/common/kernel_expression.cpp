// Evaluating a KernelExpression is running its program: the value it
// leaves, or, when the run fails, the message the diagnostics make of the
// failure. A text value is spelled once the run is done (nothing runs after
// one: a text is only ever an if branch or the whole expression).
#include "kernel_expression.hpp"

#include <jitwarm/plugin.hpp>

#include "expression_diagnostics.hpp"
#include "kernel_instantiation.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace jitwarm::gpu {

ProgramInputs::ProgramInputs(const CompileInputs& in) {
  context_.key = in.key;
  context_.compile_lets = in.lets;
  inputs_.warp = in.warp_size;
  inputs_.context = &context_;
}

ProgramInputs::ProgramInputs(const LaunchInputs& in) {
  context_.limits = in.limits;
  context_.compile_lets = in.compile_lets;
  context_.launch_lets = in.lets;
  inputs_.args = in.args;
  if (in.limits != nullptr) {
    inputs_.warp = std::max<uint32_t>(in.limits->warp_size, 1);
    inputs_.thread_limit = in.limits->max_threads_per_block;
  }
  inputs_.context = &context_;
}

KernelExpression KernelExpression::parse(std::string_view text,
                                         const ExprNames& names,
                                         ExprScope scope) {
  KernelExpression e;
  e.text_ = std::string(text);
  e.tree_ = expr::parse(e.text_, names, scope);
  e.type_ = e.tree_.node(e.tree_.root).type;
  e.varies_ = scope == ExprScope::launch && e.node_varies(e.tree_.root);
  expr::compile(e.tree_, scope, nullptr, e.code_);
  return e;
}

bool KernelExpression::run(expr::Code::Range code, const expr::Inputs& in,
                           int64_t& result, expr::Failure& failure) const {
  // A stack on the stack: only an expression nested deeper than any
  // descriptor's takes one from the heap.
  std::array<int64_t, 64> local;
  std::vector<int64_t> deep;
  std::span<int64_t> stack(local);
  if (code_.depth >= local.size()) {
    deep.resize(code_.depth + 1);
    stack = deep;
  }
  const std::span<const expr::Instruction> instructions(code_.instructions);
  if (!expr::run(instructions.subspan(code.begin, code.end - code.begin), in,
                 stack, failure)) {
    return false;
  }
  result = stack[1];
  return true;
}

int64_t KernelExpression::evaluate(const expr::Inputs& in) const {
  int64_t result = 0;
  expr::Failure failure;
  const expr::Code::Range all{0,
                              static_cast<uint32_t>(code_.instructions.size())};
  if (!run(all, in, result, failure)) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              expr::failure_message(*this, failure, in));
  }
  return result;
}

std::optional<int64_t> KernelExpression::node_value(
    uint32_t node, const expr::Inputs& in) const {
  const expr::Node& n = tree_.node(node);
  if (n.kind == expr::kConstant) return n.value;
  const expr::Code::Range code = code_.node_code[node];
  int64_t result = 0;
  expr::Failure failure;
  if (code.begin == code.end || !run(code, in, result, failure)) {
    return std::nullopt;
  }
  return result;
}

int64_t KernelExpression::integer(const CompileInputs& in) const {
  return evaluate(ProgramInputs(in).inputs());
}
bool KernelExpression::boolean(const CompileInputs& in) const {
  return evaluate(ProgramInputs(in).inputs()) != 0;
}
std::string KernelExpression::spelling(const CompileInputs& in) const {
  const int64_t value = evaluate(ProgramInputs(in).inputs());
  switch (type_) {
    case ExprType::integer: return std::to_string(value);
    case ExprType::boolean: return value != 0 ? "true" : "false";
    case ExprType::text: break;
  }
  return std::string(expr::spelling_of(value));
}
int64_t KernelExpression::integer(const LaunchInputs& in) const {
  return evaluate(ProgramInputs(in).inputs());
}
bool KernelExpression::boolean(const LaunchInputs& in) const {
  return evaluate(ProgramInputs(in).inputs()) != 0;
}
std::string KernelExpression::values(const LaunchInputs& in) const {
  return expr::read_values(*this, ProgramInputs(in).inputs());
}
std::string KernelExpression::values(const CompileInputs& in) const {
  return expr::read_values(*this, ProgramInputs(in).inputs());
}

std::string_view expr::spelling_of(int64_t code) {
  const auto entry = static_cast<int>(code & 0xffffffff);
  switch (static_cast<Spelling>(code >> 32)) {
    case Spelling::element:
      return element_type_spelling(static_cast<jw_dtype>(entry));
    case Spelling::storage:
      return storage_type_spelling(static_cast<jw_dtype>(entry));
    case Spelling::int_type:
      return int_type_spelling(static_cast<jw_int_type>(entry));
    case Spelling::float_type:
      return entry == JW_FLOAT_F64 ? "double" : "float";
  }
  throw plugin::PluginError(JW_ERROR_INTERNAL, "unknown spelling");
}

}  // namespace jitwarm::gpu
