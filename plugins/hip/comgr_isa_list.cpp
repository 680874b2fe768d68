// ComgrIsaList: dlopen comgr, read its version and ISA names once.
#include "comgr_isa_list.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>

namespace jitwarm::hip {
namespace {

// From amd_comgr.h (comgr 2.x and 3.x): amd_comgr_status_t is an int-sized
// enum whose success value is 0.
using ComgrStatus = int;
constexpr ComgrStatus kComgrSuccess = 0;
using GetVersionFn = void (*)(std::size_t* major, std::size_t* minor);
using GetIsaCountFn = ComgrStatus (*)(std::size_t* count);
using GetIsaNameFn = ComgrStatus (*)(std::size_t index, const char** name);

constexpr std::string_view kIsaPrefix = "amdgcn-amd-amdhsa--";
// comgr 3 (ROCm 7) first: a directory holds one of them.
constexpr const char* kComgrNames[] = {"libamd_comgr.so.3",
                                       "libamd_comgr.so.2"};

// The first comgr this process already has mapped (hiprtc of ROCm 6 and 7
// links it), or "".
std::string already_loaded_comgr() {
  for (const char* name : kComgrNames) {
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle != nullptr) {
      dlclose(handle);
      return name;
    }
  }
  return "";
}

}  // namespace

ComgrIsaList ComgrIsaList::open(const std::string& companion) {
  std::vector<std::string> candidates;
  if (!companion.empty()) {
    const std::filesystem::path directory =
        std::filesystem::path(companion).parent_path();
    if (!directory.empty()) {
      for (const char* name : kComgrNames) {
        candidates.push_back((directory / name).string());
      }
    }
  }
  if (std::string loaded = already_loaded_comgr(); !loaded.empty()) {
    candidates.push_back(std::move(loaded));
  }
  for (const char* name : kComgrNames) candidates.emplace_back(name);

  ComgrIsaList list;
  std::string errors;
  for (const std::string& candidate : candidates) {
    gpu::DynamicLibrary library =
        gpu::DynamicLibrary::open_first({candidate.c_str()});
    if (!library.is_open()) {
      // A path next to the companion that does not exist is not news.
      if (candidate.find('/') == std::string::npos) {
        errors += (errors.empty() ? "" : "; ") + library.error();
      }
      continue;
    }
    list.library_handle_ = std::move(library);
    list.library_ = candidate;
    break;
  }
  if (!list.library_handle_.is_open()) {
    list.why_not_ = "comgr not found (" + errors + ")";
    return list;
  }
  const auto version = reinterpret_cast<GetVersionFn>(
      list.library_handle_.find("amd_comgr_get_version"));
  const auto count_isas = reinterpret_cast<GetIsaCountFn>(
      list.library_handle_.find("amd_comgr_get_isa_count"));
  const auto isa_name = reinterpret_cast<GetIsaNameFn>(
      list.library_handle_.find("amd_comgr_get_isa_name"));
  if (version == nullptr || count_isas == nullptr || isa_name == nullptr) {
    list.why_not_ = list.library_ +
                    " lacks amd_comgr_get_version, amd_comgr_get_isa_count "
                    "or amd_comgr_get_isa_name";
    return list;
  }
  std::size_t major = 0;
  std::size_t minor = 0;
  version(&major, &minor);
  list.version_ = std::to_string(major) + "." + std::to_string(minor);
  std::size_t count = 0;
  if (count_isas(&count) != kComgrSuccess) {
    list.why_not_ = list.library_ + ": amd_comgr_get_isa_count failed";
    return list;
  }
  for (std::size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    if (isa_name(i, &name) != kComgrSuccess || name == nullptr) continue;
    const std::string_view isa(name);
    if (isa.substr(0, kIsaPrefix.size()) == kIsaPrefix) {
      list.target_ids_.emplace_back(isa.substr(kIsaPrefix.size()));
    }
  }
  if (list.target_ids_.empty()) {
    list.why_not_ = list.library_ + " lists no amdgcn-amd-amdhsa ISA";
  }
  return list;
}

ComgrIsaList ComgrIsaList::from_names(std::vector<std::string> isa_names,
                                      std::string version) {
  ComgrIsaList list;
  list.library_ = "(test list)";
  list.version_ = std::move(version);
  list.target_ids_ = std::move(isa_names);
  if (list.target_ids_.empty()) list.why_not_ = "empty test list";
  return list;
}

bool ComgrIsaList::knows(std::string_view target_id) const {
  return std::find(target_ids_.begin(), target_ids_.end(), target_id) !=
         target_ids_.end();
}

std::string ComgrIsaList::summary() const {
  if (target_ids_.empty()) return "no ISA";
  if (target_ids_.size() == 1) return target_ids_.front();
  return std::to_string(target_ids_.size()) + " ISAs, " + target_ids_.front() +
         " ... " + target_ids_.back();
}

}  // namespace jitwarm::hip
