// kernel_definitions.hpp — the reference's table of kernels and their C++
// template instantiations.
//
// Owns: which instantiations exist per kernel, how a compile key (or a set
// of launch arguments) selects one, and the constexpr rules a key must meet.
// Each kernel's semantics live in its own file under kernels/ (pack_seq and
// unpack_seq, each the other's inverse, share one); docs/kernels.md is
// the specification. The schemas themselves are the built-in descriptors'
// [[param]] tables (plugins/common/kernels/*.toml, through kernel_set.hpp)
// and are only read here.
#pragma once

#include <jitwarm/jitwarm.h>

#include <span>
#include <string_view>

#include "param_reader.hpp"

namespace jitwarm::reference_cpu {

// One C++ template instantiation of a kernel: what a "cpu-instantiation"
// artifact names and what launch runs.
struct Instantiation {
  std::string_view name;  // e.g. "rms_norm<bf16>"; the artifact entry point
  void (*run)(const KernelArgs& args);
};

struct KernelDefinition {
  std::string_view kernel_name;  // the schema's fully qualified name
  // Checks what the schema's generic rules cannot (constexpr values, dtype
  // combinations) and picks the instantiation. Reads only what a compile
  // key holds, so the key and the arguments it was derived from select the
  // same instantiation.
  const Instantiation& (*select)(const ParamReader& reader);
  // What the choice depends on, in words, for describe().
  std::string_view selected_by;
  std::span<const Instantiation> instantiations;

  const jw_kernel_schema& schema() const;
  // nullptr when this kernel has no instantiation of that name.
  const Instantiation* find(std::string_view name) const;
};

// One per kernel of docs/kernels.md, defined in the kernel's own file.
const KernelDefinition& compute_slot_mapping_definition();
const KernelDefinition& expand_definition();
const KernelDefinition& batch_memcpy_definition();
const KernelDefinition& zero_kv_blocks_definition();
const KernelDefinition& scatter_states_definition();
const KernelDefinition& pack_seq_definition();
const KernelDefinition& unpack_seq_definition();
const KernelDefinition& prepare_pos_seq_lens_definition();
const KernelDefinition& rms_norm_definition();
const KernelDefinition& silu_and_mul_definition();

// All ten, in the order of kernel_set::schemas().
std::span<const KernelDefinition* const> kernel_definitions();
// nullptr for a name outside the kernel set.
const KernelDefinition* find_kernel_definition(std::string_view kernel_name);

// The instantiation for the dtype of tensor parameter `tensor`: choices[i]
// serves dtypes[i]; another dtype fails, naming the ones the kernel takes.
const Instantiation& select_by_dtype(const ParamReader& reader, uint32_t tensor,
                                     std::span<const jw_dtype> dtypes,
                                     std::span<const Instantiation> choices);

// A constexpr that must be at least `minimum` (block sizes, world sizes).
int64_t constexpr_at_least(const ParamReader& reader, uint32_t index,
                           int64_t minimum);

}  // namespace jitwarm::reference_cpu
