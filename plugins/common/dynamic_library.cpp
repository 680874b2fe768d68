// DynamicLibrary: dlopen/dlsym with collected error messages.
#include "dynamic_library.hpp"

#include <dlfcn.h>

namespace jitwarm::gpu {

std::string lacks(const std::string& library,
                  const std::vector<std::string>& symbols) {
  std::string text = library + " lacks";
  for (const std::string& symbol : symbols) text += " " + symbol;
  return text;
}

DynamicLibrary DynamicLibrary::open_first(
    std::initializer_list<const char*> names) {
  DynamicLibrary library;
  for (const char* name : names) {
    // RTLD_LOCAL: the vendor's symbols must not leak into the host's
    // namespace (another plugin may load a different version).
    // RTLD_NODELETE: a vendor runtime stays mapped after dlclose. Its static
    // destructors and atexit handlers (libnvrtc's, libcuda's) then run at
    // process exit, after everything that may still call it, rather than in
    // the middle of a plugin unload.
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle != nullptr) {
      library.handle_ = handle;
      library.name_ = name;
      library.error_.clear();
      return library;
    }
    const char* message = dlerror();
    if (!library.error_.empty()) library.error_ += "; ";
    library.error_ += message != nullptr ? message : name;
  }
  return library;
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      name_(std::move(other.name_)),
      error_(std::move(other.error_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    error_ = std::move(other.error_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* DynamicLibrary::find(const char* symbol) const {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, symbol);
}

}  // namespace jitwarm::gpu
