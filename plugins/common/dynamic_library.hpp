// DynamicLibrary and LibraryFunction: vendor libraries (libnvrtc, libcuda,
// libamdhip64) opened with dlopen at run time, so a plugin loads on a
// machine without them and says what is missing. A symbol that is absent is
// not fatal when the library opens: calling it throws an error that names
// the symbol and the library (jitify2's typed-wrapper habit).
#pragma once

#include <jitwarm/plugin.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jitwarm::gpu {

class DynamicLibrary {
 public:
  // Tries each name in order (dlopen, RTLD_NOW | RTLD_LOCAL |
  // RTLD_NODELETE: see dynamic_library.cpp). On failure
  // returns a library that is not open and whose error() lists every name
  // with dlerror()'s message.
  static DynamicLibrary open_first(std::initializer_list<const char*> names);
  // One file: a name for the dynamic loader or a path. `extra_flags`:
  // RTLD_NOLOAD to take only a copy that is loaded already.
  static DynamicLibrary open(const std::string& file, int extra_flags = 0);

  DynamicLibrary() = default;
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  bool is_open() const { return handle_ != nullptr; }
  // The name that opened ("libnvrtc.so.13"), or empty.
  const std::string& name() const { return name_; }
  // The file the dynamic loader mapped for it
  // ("/usr/local/cuda-13.0/lib/libnvrtc.so.13"), or empty.
  const std::string& path() const { return path_; }
  // How it was found, when a search opened it ("found by the dynamic
  // loader", "already loaded in the process").
  const std::string& found_by() const { return found_by_; }
  void set_found_by(std::string how) { found_by_ = std::move(how); }
  // "/usr/local/cuda/lib64/libnvrtc.so.13, found by the dynamic loader":
  // which file, and how, for reports.
  std::string origin() const;
  // Why it did not open.
  const std::string& error() const { return error_; }
  // The symbol's address, or nullptr.
  void* find(const char* symbol) const;

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string path_;
  std::string found_by_;
  std::string error_;
};

// A typed function pointer from a DynamicLibrary; `Fn` is a function
// pointer type such as decltype(&::nvrtcCompileProgram).
template <typename Fn>
class LibraryFunction {
 public:
  LibraryFunction() = default;
  LibraryFunction(const DynamicLibrary& library, const char* symbol)
      : function_(reinterpret_cast<Fn>(library.find(symbol))),
        symbol_(symbol),
        library_(library.is_open() ? library.name() : "(not loaded)") {}

  bool available() const { return function_ != nullptr; }
  const char* symbol() const { return symbol_; }

  template <typename... Args>
  auto operator()(Args&&... args) const {
    if (function_ == nullptr) {
      throw plugin::PluginError(
          JW_ERROR_UNSUPPORTED,
          std::string("symbol ") + symbol_ + " is missing from " + library_);
    }
    return function_(std::forward<Args>(args)...);
  }

 private:
  Fn function_ = nullptr;
  const char* symbol_ = "";
  std::string library_;
};

// The symbols of `functions` (LibraryFunctions) that did not resolve, in
// order: what an API table's missing() reports.
template <typename... Functions>
std::vector<std::string> unresolved(const Functions&... functions) {
  std::vector<std::string> names;
  (
      [&] {
        if (!functions.available()) names.emplace_back(functions.symbol());
      }(),
      ...);
  return names;
}

// "libnvrtc.so.13 lacks nvrtcFoo nvrtcBar": why a library that opened
// cannot be used.
std::string lacks(const std::string& library,
                  const std::vector<std::string>& symbols);

}  // namespace jitwarm::gpu
