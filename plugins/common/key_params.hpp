// KeyParams: checked access to the parameters of a compile key, by schema
// position (the kernel descriptor's schema). Both the instantiation and the
// launch planner read keys through it, so a key that does not match the schema
// is rejected in one place, with the key text and the parameter name in the
// message.
#pragma once

#include <jitwarm/jitwarm.h>

#include "kernel_descriptor.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace jitwarm::gpu {

class KeyParams {
 public:
  // Checks the key names the descriptor's kernel and carries its schema's
  // parameters in order (names and kinds). Throws JW_ERROR_INVALID_ARGUMENT.
  KeyParams(const jw_compile_key_view& key, const KernelDescriptor& kernel);
  // The same for a built-in kernel (JW_ERROR_NOT_FOUND for another name).
  KeyParams(const jw_compile_key_view& key, std::string_view schema_name);

  const jw_compile_key_view& key() const { return key_; }
  // The key's readable text (or its kernel name when the text is missing).
  std::string_view text() const;

  const jw_param_spec& param(uint32_t index) const;
  std::string_view name(uint32_t index) const;

  // Tensors
  jw_dtype dtype(uint32_t index) const;
  // True only for JW_ALIGN_16; unknown (not specialized) counts as unaligned.
  bool aligned16(uint32_t index) const;

  // Integers (JW_PARAM_INT, or JW_PARAM_SCALAR passed an integer)
  jw_int_spec int_spec(uint32_t index) const;

  // Floats (JW_PARAM_FLOAT, or JW_PARAM_SCALAR passed a float)
  jw_float_type float_type(uint32_t index) const;
  // JW_SCALAR_INT or JW_SCALAR_FLOAT for a JW_PARAM_SCALAR.
  jw_scalar_kind scalar_kind(uint32_t index) const;

  // A constexpr's integer value, required in [min, max] (bools count as
  // 0/1). Throws naming the parameter otherwise.
  int64_t constexpr_int(uint32_t index, int64_t min, int64_t max) const;

  // "kernel key <text>: parameter 'name' <problem>" as a PluginError.
  [[noreturn]] void fail(uint32_t index, const std::string& problem) const;

 private:
  const jw_param_spec& checked(uint32_t index, jw_param_kind kind) const;

  const jw_compile_key_view& key_;
};

}  // namespace jitwarm::gpu
