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
// A tensor takes `shape`, optionally `dtype` (default: the dtype of the
// tensor its schema ties it to, else the first it allows), `fill` (random,
// zeros, ones, iota; default random for inputs and zeros for outputs) or
// `values`, and `misaligned`. Scalars take their value; a parameter with a
// default may be left out. Outputs (the schema's `output` flag) are
// compared after the launch: exactly for integers, with the dtype's
// tolerance for floats. The oracle is the linked-in CPU reference for a
// built-in kernel, and the kernel's CPU implementation from the registry
// for a kernel from source (case_runner.cpp).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "case_model.hpp"
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

// Arguments outside a descriptor, in a [[case]]'s args format (the same
// keys, dtypes, fills and defaults): what `jitwarm tune` launches
// (docs/tuning.md). A manifest's [[tune]] tables each name a kernel and
// give its arguments:
//
//   [[tune]]
//   kernel = "rms_norm"
//   args = { out = { shape = [4096, 8192], dtype = "bfloat16" }, ... }
struct ArgumentTable {
  std::string kernel;  // as written: a full or a short name
  std::string origin;  // "manifest.toml:12", or "--args"
  // The case of these arguments for the kernel's schema, its buffers
  // filled (with_data) or all zero (for their metadata alone); a malformed
  // table throws std::runtime_error naming origin and line.
  std::function<Case(const KernelSchema&, bool with_data)> build;
};

// The [[tune]] tables of a warmup manifest (its other keys are the core
// manifest parser's to check). A malformed table throws
// std::runtime_error naming manifest:line.
std::vector<ArgumentTable> read_tune_tables(std::string_view manifest,
                                            const std::string& origin);

// Arguments given as one inline table ("{ x = { shape = [8] }, n = 8 }");
// anything else throws std::runtime_error saying the form.
ArgumentTable argument_table_from_text(std::string kernel,
                                       std::string_view args);

}  // namespace jitwarm::conformance
