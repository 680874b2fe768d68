// Compile key -> kernel instantiation, for any kernel descriptor
// (kernel_descriptor.hpp): which source, which function, which template
// arguments and defines, and the compile values the launch reads. Shared by
// the CUDA and the HIP plugin; it knows nothing of either compiler.
//
// A descriptor spells each template argument as a compile-scope expression
// over the key (kernel_expression.hpp): a tensor's dtype becomes an element
// or storage type, an integer's type its C++ type and its class a template
// value (1 folds the value, "divisible by 16" becomes an assumption;
// kernel_support.cuh), a float's type float or double, a constexpr its
// exact value; alignment is folded with sizes into values such as a vector
// mode, so keys that differ only in an alignment that cannot be used share
// one binary. Kernel function parameters are the schema's non-constexpr
// parameters in schema order, then the descriptor's extra arguments
// (launch_plan.hpp packs them that way).
#pragma once

#include <jitwarm/jitwarm.h>

#include "gpu_target.hpp"
#include "kernel_descriptor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitwarm::gpu {

struct TemplateArgument {
  std::string spelling;  // as written in the name expression
  std::string reason;    // the descriptor's expression, for describe()
};

// One compile key's instantiation of a kernel.
struct KernelInstantiation {
  std::shared_ptr<const KernelDescriptor> descriptor;
  std::string source_file;        // e.g. "rms_norm.cuh"
  std::string function_template;  // e.g. "jw::kernels::rms_norm"
  std::vector<TemplateArgument> template_arguments;
  std::vector<std::pair<std::string, std::string>> defines;  // NAME, value
  // The descriptor's compile values for this key, which launch
  // expressions read (e.g. the block size baked into the binary).
  std::vector<ExprSlot> values;

  // "jw::kernels::rms_norm<jw::bf16, jw::i32, 2, ...>" (the function alone
  // when it takes no template arguments): what the compiler instantiates
  // and lowers (nvrtcAddNameExpression / hiprtc likewise).
  std::string name_expression() const;
  // The compile value `name` of the descriptor (booleans as 0 or 1), e.g.
  // the block size baked into the binary; throws when there is none.
  int64_t value(std::string_view name) const;
  // "-DNAME=value" for each define.
  std::vector<std::string> define_options() const;
  // One line per template argument and define: spelling and reason.
  std::string explain() const;
};

// Throws PluginError(JW_ERROR_INVALID_ARGUMENT) for a key whose parameters
// do not match the descriptor's schema, or that fails a compile check
// (naming the key, the check and the descriptor's file:line).
KernelInstantiation instantiate_kernel(
    const std::shared_ptr<const KernelDescriptor>& descriptor,
    const jw_compile_key_view& key, const GpuTarget& target);
// The built-in kernel the key names (JW_ERROR_NOT_FOUND otherwise).
KernelInstantiation instantiate_kernel(const jw_compile_key_view& key,
                                       const GpuTarget& target);

// C++ spellings shared with kernel_support.cuh.
std::string_view int_type_spelling(jw_int_type type);
// Element type of a dtype the kernels compute with (float, jw::f16, ...);
// throws for dtypes no kernel takes as elements.
std::string_view element_type_spelling(jw_dtype dtype);
// Unsigned storage type of the dtype's size (jw::u8 ... jw::u64).
std::string_view storage_type_spelling(jw_dtype dtype);

}  // namespace jitwarm::gpu
