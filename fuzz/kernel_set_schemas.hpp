// The kernel set's schemas (plugins/common/kernel_set.hpp) as the core sees
// them, built once: what the manifest harness plans against.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <vector>

#include "kernel_set.hpp"

namespace jitwarm::fuzz {

inline const std::vector<KernelSchema>& kernel_set_schemas() {
  static const std::vector<KernelSchema> schemas = [] {
    std::vector<KernelSchema> out;
    for (const jw_kernel_schema& c : kernel_set::schemas())
      out.push_back(KernelSchema::from_c(c, "kernel set"));
    return out;
  }();
  return schemas;
}

}  // namespace jitwarm::fuzz
