// Compile key -> kernel instantiation: which embedded source, which function
// template, which template arguments, for each of the ten kernels of
// plugins/common/kernel_set (KERNELS.md). Shared by the CUDA and the HIP
// plugin; it knows nothing of either compiler.
//
// The mapping, per parameter kind of a key:
//   tensor dtype      -> a template type argument (element or storage type);
//   tensor alignment  -> folded, with divisible-by-16 sizes, into one
//                        VectorMode per kernel (16-byte accesses never, after
//                        a run-time size check, or always), so keys that
//                        differ only in an alignment that cannot be used
//                        share one binary;
//   integer type      -> the C++ type of that kernel parameter (i32/i64/u64);
//   integer class     -> a template argument: 1 folds the value, "divisible
//                        by 16" becomes an assumption (kernel_support.cuh);
//   float type        -> float or double;
//   constexpr         -> a template argument with the exact value.
// Kernel function parameters are the schema's non-constexpr parameters in
// schema order (launch_plan.hpp packs them that way).
#pragma once

#include <jitwarm/jitwarm.h>

#include "gpu_target.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::gpu {

enum class GpuKernel : uint32_t {
  compute_slot_mapping,
  expand,
  batch_memcpy,
  zero_kv_blocks,
  scatter_states,
  pack_seq,
  unpack_seq,
  prepare_pos_seq_lens,
  rms_norm,
  silu_and_mul,
};

inline constexpr std::array kAllGpuKernels{
    GpuKernel::compute_slot_mapping,
    GpuKernel::expand,
    GpuKernel::batch_memcpy,
    GpuKernel::zero_kv_blocks,
    GpuKernel::scatter_states,
    GpuKernel::pack_seq,
    GpuKernel::unpack_seq,
    GpuKernel::prepare_pos_seq_lens,
    GpuKernel::rms_norm,
    GpuKernel::silu_and_mul,
};

// The fully qualified schema name, e.g.
// "vllm.model_executor.layers.layernorm.rms_norm".
std::string_view schema_name(GpuKernel kernel);
std::optional<GpuKernel> find_gpu_kernel(std::string_view schema_name);

// How an instantiation uses 16-byte vectors (kernel_support.cuh's
// kVectorNever / kVectorIfSizesAllow / kVectorAlways, same numbering).
enum class VectorMode : int {
  never = 0,           // some tensor is not proven 16-byte aligned
  if_sizes_allow = 1,  // pointers proven aligned; sizes checked at run time
  always = 2,          // pointers and row sizes proven
};

struct TemplateArgument {
  std::string spelling;  // as written in the name expression
  std::string reason;    // which key parameter decided it, for describe()
};

// One compile key's instantiation of a kernel template.
struct KernelInstantiation {
  GpuKernel kernel = GpuKernel::compute_slot_mapping;
  std::string source_file;        // embedded file, e.g. "rms_norm.cuh"
  std::string function_template;  // e.g. "jw::kernels::rms_norm"
  std::vector<TemplateArgument> template_arguments;
  // Compile-time choices the launch planner must agree with:
  VectorMode vector_mode = VectorMode::never;
  uint32_t fixed_block_threads =
      0;  // block size baked in; 0 = chosen at launch

  // "jw::kernels::rms_norm<jw::bf16, jw::i32, 2, ...>": what the compiler
  // instantiates and lowers (nvrtcAddNameExpression / hiprtc likewise).
  std::string name_expression() const;
  // One line per template argument: spelling and reason.
  std::string explain() const;
};

// Throws PluginError: JW_ERROR_NOT_FOUND for a kernel outside the set,
// JW_ERROR_INVALID_ARGUMENT for a key whose parameters do not match the
// schema or whose constexprs are out of range (naming key and parameter).
KernelInstantiation instantiate_kernel(const jw_compile_key_view& key,
                                       const GpuTarget& target);

// C++ spellings shared with kernel_support.cuh.
std::string_view int_type_spelling(jw_int_type type);
// Element type of a dtype the kernels compute with (float, jw::f16, ...);
// throws for dtypes no kernel takes as elements.
std::string_view element_type_spelling(jw_dtype dtype);
// Unsigned storage type of the dtype's size (jw::u8 ... jw::u64).
std::string_view storage_type_spelling(jw_dtype dtype);
// Bytes per element; 0 for an invalid dtype.
uint32_t dtype_bytes(jw_dtype dtype);

}  // namespace jitwarm::gpu
