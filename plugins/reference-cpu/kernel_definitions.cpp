// kernel_definitions.cpp — the table of the ten kernel definitions and the
// lookups over it.
#include "kernel_definitions.hpp"

#include <array>
#include <string>

#include "dtype_info.hpp"

#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {

const jw_kernel_schema& KernelDefinition::schema() const {
  const jw_kernel_schema* found = kernel_set::find_schema(kernel_name);
  if (found == nullptr) {
    // Every definition names a schema of the kernel set; a miss is a bug in
    // this plugin, not a caller error.
    throw plugin::PluginError(
        JW_ERROR_INTERNAL,
        concat("reference-cpu: no schema named '", kernel_name, "'"));
  }
  return *found;
}

const Instantiation* KernelDefinition::find(std::string_view name) const {
  for (const Instantiation& instantiation : instantiations) {
    if (instantiation.name == name) return &instantiation;
  }
  return nullptr;
}

std::span<const KernelDefinition* const> kernel_definitions() {
  static const std::array<const KernelDefinition*, 10> kDefinitions{
      &compute_slot_mapping_definition(),
      &expand_definition(),
      &batch_memcpy_definition(),
      &zero_kv_blocks_definition(),
      &scatter_states_definition(),
      &pack_seq_definition(),
      &unpack_seq_definition(),
      &prepare_pos_seq_lens_definition(),
      &rms_norm_definition(),
      &silu_and_mul_definition(),
  };
  return kDefinitions;
}

const KernelDefinition* find_kernel_definition(std::string_view kernel_name) {
  for (const KernelDefinition* definition : kernel_definitions()) {
    if (definition->kernel_name == kernel_name) return definition;
  }
  return nullptr;
}

const Instantiation& select_by_dtype(const ParamReader& reader, uint32_t tensor,
                                     std::span<const jw_dtype> dtypes,
                                     std::span<const Instantiation> choices) {
  const jw_dtype dtype = reader.tensor_dtype(tensor);
  std::string taken;
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] == dtype) return choices[i];
    if (i > 0) taken += i + 1 == dtypes.size() ? " or " : ", ";
    taken += dtype_name(dtypes[i]);
  }
  reader.fail(reader.param_name(tensor), " has dtype ", dtype_name(dtype), "; ",
              reader.kernel(), " takes ", taken);
}

int64_t constexpr_at_least(const ParamReader& reader, uint32_t index,
                           int64_t minimum) {
  const int64_t value = reader.constexpr_int(index);
  reader.require(value >= minimum, "constexpr ", reader.param_name(index),
                 " = ", value, " must be >= ", minimum);
  return value;
}

}  // namespace jitwarm::reference_cpu
