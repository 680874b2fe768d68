#include "mapped_libraries.hpp"

namespace jitwarm::detail {

MappedLibraries& MappedLibraries::instance() {
  static MappedLibraries* const table = new MappedLibraries();
  return *table;
}

boost::dll::shared_library& MappedLibraries::open(const std::string& path) {
  auto library = std::make_unique<boost::dll::shared_library>(
      boost::dll::fs::path(path),
      boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  std::lock_guard lock(mutex_);
  auto& kept = opened_[library->native()];
  if (!kept) kept = std::move(library);
  return *kept;
}

}  // namespace jitwarm::detail
