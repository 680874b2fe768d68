// source_kernel_cases.hpp — the conformance cases kernel descriptors carry
// (docs/kernel-descriptors.md, "Conformance cases"): the [[case]] tables of
// the built-in kernels' descriptors (kernel_set::descriptor_files()) and
// of kernels from source, turned into the same CaseRecipes the portable
// set's generators make.
//
//   [[case]]
//   name = "small"
//   args = { x = { shape = [100], fill = "random" }, n = 100, factor = 2.5 }
//
// The args table's form is device_args' (argument_tables.hpp). Outputs
// (the schema's `output` flag) are compared after the launch: exactly for
// integers, with the dtype's tolerance for floats. The oracle is the
// linked-in CPU reference for a built-in kernel, and the kernel's CPU
// implementation from the registry for a kernel from source
// (case_runner.cpp).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "cases.hpp"

namespace jitwarm::conformance {

// Reads the cases of every kernel from source `runtime` knows (their
// schemas from the runtime) and builds each once; later
// descriptor_case_recipes() calls return them. A malformed case table
// throws std::runtime_error naming descriptor:line.
void register_source_kernel_cases(const Runtime& runtime);

// Whether `kernel` is a kernel from source with registered cases.
bool is_source_kernel(std::string_view kernel);

// The recipes of `kernel`'s descriptor: a built-in kernel's, else those
// registered for a kernel from source; empty when it has none. The
// built-in descriptors are read at the first call, and a malformed table
// there throws std::runtime_error naming descriptor:line (a build error:
// the conformance tests build every case).
std::vector<CaseRecipe> descriptor_case_recipes(std::string_view kernel,
                                                const CaseOptions& options);

}  // namespace jitwarm::conformance
