// The messages of the expression language, from a failed run's instruction
// and reason (expression_program.hpp's Failure) and from the nodes of the
// expression's tree.
#include "expression_diagnostics.hpp"

#include <jitwarm/plugin.hpp>

#include "kernel_expression.hpp"

namespace jitwarm::gpu::expr {
namespace {

std::string text_of(const KernelExpression& e, const Node& n) {
  return e.text().substr(n.column - 1, n.length);
}

const FunctionInfo& info_of(uint8_t function) {
  for (const FunctionInfo& f : kFunctions) {
    if (f.function == function) return f;
  }
  throw plugin::PluginError(JW_ERROR_INTERNAL, "unknown expression function");
}

// A parameter passed to a function by name (not read as a value).
bool is_handle(const Tree& tree, uint32_t i) {
  for (const Node& parent : tree.nodes) {
    if (parent.kind != kCall) continue;
    const FunctionInfo& f = info_of(parent.function);
    for (uint32_t k = 0; k < parent.child_count; ++k) {
      if (tree.child(parent, k) != i) continue;
      return names_a_parameter(argument_kind(f, k));
    }
  }
  return false;
}

void collect(const KernelExpression& e, const Inputs& in, uint32_t i,
             std::string& out) {
  const Tree& tree = e.tree();
  const Node& n = tree.node(i);
  const bool leaf =
      n.kind == kParam || n.kind == kLet ||
      (n.kind == kCall && n.type != ExprType::text && n.function != kIf &&
       n.function != kMin && n.function != kMax && n.function != kClamp &&
       n.function != kCeilDiv && n.function != kRoundUp);
  if (leaf && !(n.kind == kParam && is_handle(tree, i))) {
    const std::optional<int64_t> v = e.node_value(i, in);
    const std::string value = !v ? "?"
                              : n.type == ExprType::boolean
                                  ? (*v != 0 ? "true" : "false")
                                  : std::to_string(*v);
    const std::string entry = text_of(e, n) + " = " + value;
    if (out.find(entry) == std::string::npos)
      out += (out.empty() ? "" : ", ") + entry;
    if (n.kind != kCall) return;
  }
  if (n.kind == kCall && leaf) return;
  for (uint32_t k = 0; k < n.child_count; ++k) {
    collect(e, in, tree.child(n, k), out);
  }
}

}  // namespace

std::string failure_message(const KernelExpression& e, const Failure& failure,
                            const Inputs& in) {
  const Instruction& i = e.code().instructions[failure.at];
  const Node& n = e.tree().node(e.code().origin[failure.at]);
  const std::string quoted = "'" + text_of(e, n) + "'";
  // A function of a parameter named as its first argument: that name.
  const auto named = [&] {
    return "'" + text_of(e, e.tree().node(e.tree().child(n, 0))) + "'";
  };
  using Reason = Failure::Reason;
  switch (failure.reason) {
    case Reason::overflow:
      return "'" + e.text() + "' overflows a 64-bit integer";
    case Reason::divides_by_zero: return quoted + " divides by zero";
    case Reason::value_too_large:
      if (i.op == pConstexpr) return quoted + " is too large for an expression";
      return quoted + " = " +
             std::to_string(in.args[i.param].value.scalar.value.u) +
             " is too large for an expression";
    case Reason::not_an_integer: return quoted + " is not an integer here";
    case Reason::float_constexpr:
      return quoted + " is a float; expressions use integers";
    case Reason::spelling_let:
      return quoted + " is a spelling let; use it only once";
    case Reason::not_integer_in_key:
      return named() + " is not an integer in this key";
    case Reason::not_float_in_key:
      return named() + " is not a float in this key";
    case Reason::bounds_cross: return quoted + ": the bounds cross";
    case Reason::divisor: return quoted + " needs a positive divisor";
    case Reason::negative_count:
      return quoted + " needs a count, not a negative";
    case Reason::overflows: return quoted + " overflows";
    case Reason::rank:
      return quoted + ": the tensor has rank " +
             std::to_string(in.args[i.param].value.tensor->meta.rank);
    case Reason::check: break;  // a launch program's, which says no more
  }
  return quoted + " is false";
}

std::string read_values(const KernelExpression& e, const Inputs& in) {
  std::string out;
  collect(e, in, e.tree().root, out);
  return out;
}

}  // namespace jitwarm::gpu::expr
