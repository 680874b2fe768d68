// cases.cpp — the catalogue's table: kernel name -> its generators.
#include "cases.hpp"

#include <stdexcept>
#include <utility>

#include "kernel_set.hpp"
#include "source_kernel_cases.hpp"

namespace jitwarm::conformance {
namespace {

using Generator = void (*)(detail::RecipeList&);

struct CatalogueEntry {
  std::string_view kernel;
  Generator add_cases;
};

constexpr CatalogueEntry kCatalogue[] = {
    {kernel_set::kComputeSlotMapping, &detail::add_compute_slot_mapping_cases},
    {kernel_set::kExpand, &detail::add_expand_cases},
    {kernel_set::kBatchMemcpy, &detail::add_batch_memcpy_cases},
    {kernel_set::kZeroKvBlocks, &detail::add_zero_kv_blocks_cases},
    {kernel_set::kScatterStates, &detail::add_scatter_states_cases},
    {kernel_set::kPackSeq, &detail::add_pack_seq_cases},
    {kernel_set::kUnpackSeq, &detail::add_unpack_seq_cases},
    {kernel_set::kPreparePosSeqLens, &detail::add_prepare_pos_seq_lens_cases},
    {kernel_set::kRmsNorm, &detail::add_rms_norm_cases},
    {kernel_set::kSiluAndMul, &detail::add_silu_and_mul_cases},
};

const CatalogueEntry* find_entry(std::string_view kernel) {
  for (const CatalogueEntry& entry : kCatalogue) {
    if (entry.kernel == kernel) return &entry;
  }
  return nullptr;
}

// The schema of a kernel of the portable set, which its generators build
// cases for.
const jw_kernel_schema& portable_schema(std::string_view kernel) {
  const jw_kernel_schema* schema = kernel_set::find_schema(kernel);
  if (schema == nullptr) {
    throw std::logic_error("CaseBuilder: no schema named " +
                           std::string(kernel));
  }
  return *schema;
}

}  // namespace

bool has_cases(std::string_view kernel) {
  return find_entry(kernel) != nullptr || is_source_kernel(kernel);
}

std::vector<CaseRecipe> case_recipes(std::string_view kernel,
                                     const CaseOptions& options) {
  std::vector<CaseRecipe> recipes = generated_case_recipes(kernel, options);
  for (CaseRecipe& recipe : descriptor_case_recipes(kernel, options)) {
    recipes.push_back(std::move(recipe));
  }
  return recipes;
}

std::vector<CaseRecipe> generated_case_recipes(std::string_view kernel,
                                               const CaseOptions& options) {
  const CatalogueEntry* entry = find_entry(kernel);
  if (entry == nullptr) return {};
  detail::RecipeList list(kernel, options);
  entry->add_cases(list);
  return list.take();
}

namespace detail {

void RecipeList::add(std::string name,
                     std::function<Case(CaseBuilder&, Rng&)> make, bool large) {
  if (large && !options_.large) return;
  CaseRecipe recipe;
  recipe.name = name;
  recipe.large = large;
  recipe.build = [kernel = kernel_, name, seed = options_.seed,
                  make = std::move(make)]() {
    Rng rng(device_args::case_seed(seed, kernel, name));
    CaseBuilder builder(portable_schema(kernel));
    return make(builder, rng);
  };
  recipes_.push_back(std::move(recipe));
}

}  // namespace detail
}  // namespace jitwarm::conformance
