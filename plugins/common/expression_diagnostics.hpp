// What a failed run of an expression's program, or a failed check, says:
// the message of the failure (the node's text, or the whole expression's
// for an overflow, and the value it could not take) and the values the
// expression read. Made only after a run failed: evaluation builds no text.
#pragma once

#include <string>

#include "expression_program.hpp"

namespace jitwarm::gpu {

class KernelExpression;  // kernel_expression.hpp

namespace expr {

// "'n / d' divides by zero", "'shape(x, 2)': the tensor has rank 2", ...:
// why the run of `e`'s program with `in` failed as `failure` says.
std::string failure_message(const KernelExpression& e, const Failure& failure,
                            const Inputs& in);

// "shape(x, 1) = 99, H = 100": every parameter, let and call `e` reads
// (once each, a parameter named as an argument left out) with its value
// under `in`, each computed by its own code ("?" where that fails).
std::string read_values(const KernelExpression& e, const Inputs& in);

}  // namespace expr
}  // namespace jitwarm::gpu
