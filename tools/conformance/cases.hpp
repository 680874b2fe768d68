// cases.hpp — which conformance cases exist for each kernel, as named
// recipes built on demand: for the portable set (docs/kernels.md) the
// generated catalogue, then the [[case]] tables of the kernel's descriptor
// (source_kernel_cases.hpp); for a kernel from source its descriptor's.
//
// Owns: the catalogue, and the rule that it covers what "What a backend
// must get right" asks for: every listed dtype, every specialization class
// (1, multiple of 16, other) of every non-dns integer, aligned and
// unaligned tensors, empty inputs, odd sizes, and (with CaseOptions::large)
// sizes in the millions of elements. Each kernel's generators live in one
// cases_*.cpp file, grouped as the kernels are in docs/kernels.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "case_model.hpp"

namespace jitwarm::conformance {

// A named case that is built only when it runs, so listing and planning
// never generate data (large cases hold hundreds of megabytes). A case is
// a kernel's arguments with their buffers, as device_args models them
// (case_model.hpp, shared with `jitwarm tune`).
struct CaseRecipe {
  std::string name;
  bool large = false;  // only with --large
  std::function<device_args::Case()> build;
};

struct CaseOptions {
  uint64_t seed = device_args::kDefaultSeed;
  bool large = false;  // also the large recipes
};

// Whether the catalogue has cases for this kernel.
bool has_cases(std::string_view kernel);

// Every recipe of a kernel: the catalogue's in its order (large ones only
// with options.large), then its descriptor's (descriptor_case_recipes).
// Empty for a kernel without cases.
std::vector<CaseRecipe> case_recipes(std::string_view kernel,
                                     const CaseOptions& options);

// Only the catalogue's recipes of a kernel of the portable set (empty for
// any other kernel).
std::vector<CaseRecipe> generated_case_recipes(std::string_view kernel,
                                               const CaseOptions& options);

namespace detail {

// The generators write their cases in device_args' model.
using device_args::AddressSlot;
using device_args::Buffer;
using device_args::Case;
using device_args::CaseBuilder;
using device_args::Comparison;
using device_args::random_bytes;
using device_args::random_floats;
using device_args::random_values;
using device_args::Rng;
using device_args::storage_elements;
using device_args::to_bytes;

// Collects one kernel's recipes; each recipe's random source is seeded by
// (run seed, kernel, case name), so a case's data never depends on which
// other cases are generated.
class RecipeList {
 public:
  RecipeList(std::string_view kernel, const CaseOptions& options)
      : kernel_(kernel), options_(options) {}

  const std::string& kernel() const { return kernel_; }
  void add(std::string name, std::function<Case(CaseBuilder&, Rng&)> make,
           bool large = false);
  std::vector<CaseRecipe> take() { return std::move(recipes_); }

 private:
  std::string kernel_;
  CaseOptions options_;
  std::vector<CaseRecipe> recipes_;
};

void add_compute_slot_mapping_cases(RecipeList& list);
void add_zero_kv_blocks_cases(RecipeList& list);
void add_prepare_pos_seq_lens_cases(RecipeList& list);
void add_expand_cases(RecipeList& list);
void add_batch_memcpy_cases(RecipeList& list);
void add_scatter_states_cases(RecipeList& list);
void add_pack_seq_cases(RecipeList& list);
void add_unpack_seq_cases(RecipeList& list);
void add_rms_norm_cases(RecipeList& list);
void add_silu_and_mul_cases(RecipeList& list);

}  // namespace detail
}  // namespace jitwarm::conformance
