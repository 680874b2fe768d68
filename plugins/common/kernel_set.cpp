// Lookups over the kernel set's tables (kernel_set_schemas.cpp, generated
// from the descriptors by generate_kernel_set.py).
#include "kernel_set.hpp"

namespace jitwarm::kernel_set {

const jw_kernel_schema* find_schema(std::string_view name) {
  for (const auto& s : schemas()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::span<const char* const> param_names(std::string_view name) {
  const std::span<const jw_kernel_schema> all = schemas();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (name == all[i].name) return detail::param_names_in_order()[i];
  }
  return {};
}

}  // namespace jitwarm::kernel_set
