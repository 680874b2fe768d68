// open_vendor_library: the search order of vendor_library.hpp.
#include "vendor_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "path_list.hpp"

namespace jitwarm::gpu {
namespace {

namespace fs = std::filesystem;

std::string environment(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr ? value : "";
}

// Whether `file`'s name is one of `names`, or one of them with more
// version digits ("libnvrtc.so.13.0.88" for "libnvrtc.so.13").
bool names_match(std::string_view file, const std::vector<std::string>& names) {
  const std::string_view base = file.substr(file.rfind('/') + 1);
  for (const std::string& name : names) {
    if (base == name || (base.starts_with(name) && base.size() > name.size() &&
                         base[name.size()] == '.')) {
      return true;
    }
  }
  return false;
}

// The files of the loaded objects whose names match, in load order.
std::vector<std::string> loaded_copies(const std::vector<std::string>& names) {
  struct Scan {
    const std::vector<std::string>* names;
    std::vector<std::string> found;
  } scan{&names, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Scan*>(data);
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' &&
            names_match(info->dlpi_name, *s->names)) {
          s->found.emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &scan);
  return scan.found;
}

}  // namespace

std::vector<VendorLibraryCandidate> vendor_library_candidates(
    const VendorLibrarySearch& search) {
  std::vector<VendorLibraryCandidate> out;
  for (std::string& file : loaded_copies(search.names)) {
    out.push_back({std::move(file), "already loaded in the process"});
  }
  for (const std::string& name : search.names) {
    out.push_back({name, "found by the dynamic loader"});
  }
  const std::pair<std::string, std::string> toolkits[] = {
      {environment("CUDA_HOME"), "found in $CUDA_HOME"},
      {environment("CUDA_PATH"), "found in $CUDA_PATH"},
      {"/usr/local/cuda", "found in /usr/local/cuda"}};
  std::vector<std::string> roots_seen;
  for (const auto& [root, label] : toolkits) {
    if (root.empty() || std::find(roots_seen.begin(), roots_seen.end(), root) !=
                            roots_seen.end()) {
      continue;
    }
    roots_seen.push_back(root);
    for (const char* sub : {"lib64", "lib"}) {
      for (const std::string& name : search.names) {
        out.push_back({(fs::path(root) / sub / name).string(), label});
      }
    }
  }
  for (const std::string& directory :
       detail::split_path_list(environment(kVendorLibraryPathVariable))) {
    for (const std::string& name : search.names) {
      out.push_back({(fs::path(directory) / name).string(),
                     std::string("found in ") + kVendorLibraryPathVariable});
    }
  }
  return out;
}

DynamicLibrary open_vendor_library(
    const VendorLibrarySearch& search,
    std::vector<std::string> (*missing_entry_points)(const DynamicLibrary&),
    std::string& why_not) {
  // Step 1: the named file, alone.
  if (const std::string file = environment(search.file_variable.c_str());
      !file.empty()) {
    DynamicLibrary library = DynamicLibrary::open(file);
    if (!library.is_open()) {
      why_not = search.what + " not found: " + search.file_variable + "=" +
                file + " does not open (" + library.error() + ")";
      return DynamicLibrary();
    }
    if (const auto missing = missing_entry_points(library); !missing.empty()) {
      why_not = search.file_variable + "=" + file + ": " +
                lacks(library.name(), missing);
      return DynamicLibrary();
    }
    library.set_found_by("named by " + search.file_variable);
    return library;
  }
  std::string passed_over;  // libraries that opened without the API
  std::string loader_error;
  for (const VendorLibraryCandidate& candidate :
       vendor_library_candidates(search)) {
    const bool loaded = candidate.found_by.starts_with("already loaded");
    const bool by_path = candidate.file.find('/') != std::string::npos;
    if (by_path && !loaded) {
      std::error_code error;
      if (!fs::exists(candidate.file, error)) continue;
    }
    DynamicLibrary library =
        DynamicLibrary::open(candidate.file, loaded ? RTLD_NOLOAD : 0);
    if (!library.is_open()) {
      if (!by_path && loader_error.empty()) loader_error = library.error();
      if (by_path) passed_over += "; " + library.error();
      continue;
    }
    if (const auto missing = missing_entry_points(library); !missing.empty()) {
      passed_over +=
          "; " + lacks(library.path().empty() ? library.name() : library.path(),
                       missing);
      continue;
    }
    library.set_found_by(candidate.found_by);
    return library;
  }
  std::string names;
  for (const std::string& name : search.names) {
    names += (names.empty() ? "" : ", ") + name;
  }
  why_not = search.what + " not found (" + names +
            ": not loaded, not found by the dynamic loader (" + loader_error +
            "), nor in $CUDA_HOME, $CUDA_PATH, /usr/local/cuda or " +
            kVendorLibraryPathVariable + passed_over + ")";
  return DynamicLibrary();
}

}  // namespace jitwarm::gpu
