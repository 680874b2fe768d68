// Library search for the HIP plugin: candidate names, typed opening,
// mapped-file lookup.
#include "hip_libraries.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace jitwarm::hip {

std::string rocm_root() {
  const char* root = std::getenv("ROCM_PATH");
  return root != nullptr && *root != '\0' ? root : "/opt/rocm";
}

std::vector<std::string> library_candidates(
    std::initializer_list<const char*> names) {
  const char* explicit_root = std::getenv("ROCM_PATH");
  const bool root_given = explicit_root != nullptr && *explicit_root != '\0';
  const std::filesystem::path lib = std::filesystem::path(rocm_root()) / "lib";
  std::vector<std::string> candidates;
  if (root_given) {
    for (const char* name : names) candidates.push_back((lib / name).string());
  }
  for (const char* name : names) candidates.emplace_back(name);
  if (!root_given) {
    for (const char* name : names) candidates.push_back((lib / name).string());
  }
  return candidates;
}

gpu::DynamicLibrary open_library_with(
    const std::vector<std::string>& candidates,
    const std::function<std::vector<std::string>(const gpu::DynamicLibrary&)>&
        missing_symbols,
    std::string& why_not) {
  std::string not_found;
  std::string incomplete;
  for (const std::string& candidate : candidates) {
    gpu::DynamicLibrary library =
        gpu::DynamicLibrary::open_first({candidate.c_str()});
    if (!library.is_open()) {
      // A ROCm path that does not exist is expected on most machines; the
      // bare names' dlerror() says enough.
      if (candidate.find('/') == std::string::npos) {
        not_found += (not_found.empty() ? "" : "; ") + library.error();
      }
      continue;
    }
    const std::vector<std::string> missing = missing_symbols(library);
    if (missing.empty()) return library;
    incomplete +=
        (incomplete.empty() ? "" : "; ") + gpu::lacks(candidate, missing);
  }
  why_not = incomplete.empty() ? not_found : incomplete + "; " + not_found;
  return gpu::DynamicLibrary();
}

std::string mapped_file_of(const gpu::DynamicLibrary& library,
                           const char* symbol) {
  void* address = library.find(symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  std::error_code error;
  const std::filesystem::path resolved =
      std::filesystem::canonical(info.dli_fname, error);
  return error ? std::string(info.dli_fname) : resolved.string();
}

std::string soname_version(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  const std::size_t so = file.find(".so.");
  return so == std::string::npos ? "" : file.substr(so + 4);
}

}  // namespace jitwarm::hip
