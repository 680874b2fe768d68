// DynamicLibrary: dlopen/dlsym with collected error messages.
#include "dynamic_library.hpp"

#include <dlfcn.h>
#include <link.h>

namespace jitwarm::gpu {

std::string lacks(const std::string& library,
                  const std::vector<std::string>& symbols) {
  std::string text = library + " lacks";
  for (const std::string& symbol : symbols) text += " " + symbol;
  return text;
}

DynamicLibrary DynamicLibrary::open(const std::string& file, int extra_flags) {
  DynamicLibrary library;
  // RTLD_LOCAL: the vendor's symbols must not leak into the host's
  // namespace (another plugin may load a different version).
  // RTLD_NODELETE: a vendor runtime stays mapped after dlclose. Its static
  // destructors and atexit handlers (libnvrtc's, libcuda's) then run at
  // process exit, after everything that may still call it, rather than in
  // the middle of a plugin unload.
  void* handle =
      dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE | extra_flags);
  if (handle == nullptr) {
    const char* message = dlerror();
    library.error_ = message != nullptr ? message : file + ": not loaded";
    return library;
  }
  library.handle_ = handle;
  library.name_ = file;
  const link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
      map->l_name != nullptr) {
    library.path_ = map->l_name;
  }
  return library;
}

DynamicLibrary DynamicLibrary::open_first(
    std::initializer_list<const char*> names) {
  DynamicLibrary library;
  for (const char* name : names) {
    DynamicLibrary attempt = open(name);
    if (attempt.is_open()) return attempt;
    if (!library.error_.empty()) library.error_ += "; ";
    library.error_ += attempt.error_;
  }
  return library;
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      name_(std::move(other.name_)),
      path_(std::move(other.path_)),
      found_by_(std::move(other.found_by_)),
      error_(std::move(other.error_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
    found_by_ = std::move(other.found_by_);
    error_ = std::move(other.error_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string DynamicLibrary::origin() const {
  std::string text = path_.empty() ? name_ : path_;
  if (!found_by_.empty()) text += ", " + found_by_;
  return text;
}

void* DynamicLibrary::find(const char* symbol) const {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, symbol);
}

}  // namespace jitwarm::gpu
