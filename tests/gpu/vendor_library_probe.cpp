// Opens the stand-in vendor library (fake_vendor/) through
// open_vendor_library, as the CUDA plugin opens NVRTC, and prints which
// file it opened and how it was found, for test_vendor_library.py.
//
//   vendor_library_probe [--preload FILE] NAME...
//
// --preload dlopens FILE first (a library some other code of the process
// loaded); NAME... are the file names searched for. The named-file variable
// is JITWARM_FAKE_VENDOR_LIBRARY. Prints "found PATH | HOW | ENTRY" or
// "not found | WHY"; exits 0 either way (2 on bad usage).
#include <dlfcn.h>

#include <iostream>
#include <string>
#include <vector>

#include "dynamic_library.hpp"
#include "vendor_library.hpp"

namespace {

using jitwarm::gpu::DynamicLibrary;
using jitwarm::gpu::LibraryFunction;

struct FakeVendorApi {
  explicit FakeVendorApi(const DynamicLibrary& library)
      : entry(library, "jw_fake_vendor_entry") {}
  std::vector<std::string> missing() const {
    return jitwarm::gpu::unresolved(entry);
  }
  LibraryFunction<int (*)()> entry;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--preload" && i + 1 < argc) {
      if (dlopen(argv[++i], RTLD_NOW | RTLD_LOCAL) == nullptr) {
        std::cerr << "cannot preload " << argv[i] << ": " << dlerror() << "\n";
        return 2;
      }
    } else {
      names.push_back(arg);
    }
  }
  if (names.empty()) {
    std::cerr << "usage: vendor_library_probe [--preload FILE] NAME...\n";
    return 2;
  }
  const jitwarm::gpu::VendorLibrarySearch search{
      "the fake vendor library", "JITWARM_FAKE_VENDOR_LIBRARY", names};
  std::string why_not;
  const DynamicLibrary library =
      jitwarm::gpu::open_vendor_library<FakeVendorApi>(search, why_not);
  if (!library.is_open()) {
    std::cout << "not found | " << why_not << "\n";
    return 0;
  }
  std::cout << "found " << library.path() << " | " << library.found_by()
            << " | " << FakeVendorApi(library).entry() << "\n";
  return 0;
}
