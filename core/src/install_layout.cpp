// Where an installation's files are: the bundled plugins, the kernels from
// source and the data (the conformance expectations, the kernel-set
// manifest). They are found next to the libjitwarm that is loaded, through
// the relative paths the build configured (JITWARM_*_FROM_LIBDIR), so a
// prefix copied elsewhere and a package that pip put into a virtualenv find
// their own files. A library that has no plugin directory next to it (the
// build tree, a library copied alone) uses the absolute directories of the
// prefix it was built for. One decision for all directories: a copied
// prefix never mixes its own plugins with the original's kernels.
#include <dlfcn.h>

#include <jitwarm/jitwarm.hpp>

#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "path_list.hpp"

namespace jitwarm {
namespace fs = std::filesystem;

namespace {

// The file of the libjitwarm this code was loaded from, or empty when the
// dynamic loader cannot say.
fs::path loaded_library_file() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&loaded_library_file), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code error;
  fs::path file = fs::canonical(info.dli_fname, error);
  return error ? fs::path() : file;
}

InstallLocation find_install_location() {
  InstallLocation location;
  location.library = loaded_library_file().string();
  const fs::path library_dir = fs::path(location.library).parent_path();
  std::error_code error;
  location.found_beside_library =
      !location.library.empty() &&
      fs::is_directory(library_dir / JITWARM_PLUGIN_DIR_FROM_LIBDIR, error);
  const auto pick = [&](const char* relative, const char* configured) {
    return location.found_beside_library
               ? (library_dir / relative).lexically_normal().string()
               : std::string(configured);
  };
  location.plugin_directory =
      pick(JITWARM_PLUGIN_DIR_FROM_LIBDIR, JITWARM_INSTALLED_PLUGIN_DIR);
  location.data_directory =
      pick(JITWARM_DATA_DIR_FROM_LIBDIR, JITWARM_INSTALLED_DATA_DIR);
  location.kernel_directory =
      (fs::path(location.data_directory) / "kernels").string();
  location.program =
      pick(JITWARM_PROGRAM_FROM_LIBDIR, JITWARM_INSTALLED_PROGRAM);
  return location;
}

// The directories `variable` lists, then the installed one.
std::vector<std::string> search_path(const char* variable,
                                     std::string installed) {
  const char* value = std::getenv(variable);
  std::vector<std::string> out =
      detail::split_path_list(value != nullptr ? value : "");
  out.push_back(std::move(installed));
  return out;
}

}  // namespace

std::vector<std::string> split_path_list(std::string_view list) {
  return detail::split_path_list(list);
}

const InstallLocation& install_location() {
  // Found once: the library does not move while it is loaded.
  static const InstallLocation location = find_install_location();
  return location;
}

std::string installed_plugin_directory() {
  return install_location().plugin_directory;
}

std::string installed_kernel_directory() {
  return install_location().kernel_directory;
}

std::string installed_data_directory() {
  return install_location().data_directory;
}

std::vector<std::string> default_plugin_search_path() {
  return search_path("JITWARM_PLUGIN_PATH", installed_plugin_directory());
}

std::vector<std::string> default_kernel_path() {
  return search_path("JITWARM_KERNEL_PATH", installed_kernel_directory());
}

}  // namespace jitwarm
