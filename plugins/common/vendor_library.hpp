// open_vendor_library: where a vendor's compiler library (libnvrtc,
// libnvJitLink) is looked for, in one order for every plugin, and which
// file opened. A torch virtualenv keeps them in its nvidia pip packages,
// where the dynamic loader does not look; a machine with the CUDA toolkit
// keeps them in the ld.so cache or under /usr/local/cuda. In order:
//
//   1. the file that `file_variable` names (JITWARM_NVRTC_LIBRARY), and
//      nothing else: a user who names a file means that file;
//   2. a copy the process has loaded already (torch's, say), so one
//      process never maps two builds of the library;
//   3. the dynamic loader (LD_LIBRARY_PATH, the ld.so cache);
//   4. the CUDA toolkit: $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda,
//      each in lib64/ and lib/;
//   5. the directories of JITWARM_VENDOR_LIBRARY_PATH, where `import
//      jitwarm` puts the running Python's nvidia packages
//      (python/jitwarm/_vendor_libraries.py).
//
// A library that opens but lacks an entry point of its API is passed over
// for the next place, with the reason kept for the message.
#pragma once

#include <string>
#include <vector>

#include "dynamic_library.hpp"

namespace jitwarm::gpu {

struct VendorLibrarySearch {
  std::string what;           // "NVRTC", for messages
  std::string file_variable;  // "JITWARM_NVRTC_LIBRARY"
  // File names, newest first ("libnvrtc.so.13", "libnvrtc.so.12"); a loaded
  // copy matches a name or the name with more version digits.
  std::vector<std::string> names;
};

// The directories of step 5.
inline constexpr const char* kVendorLibraryPathVariable =
    "JITWARM_VENDOR_LIBRARY_PATH";

// One place to try: a file name for the dynamic loader or a path, and the
// step it belongs to, as reports say it ("found by the dynamic loader",
// "found in $CUDA_HOME", ...).
struct VendorLibraryCandidate {
  std::string file;
  std::string found_by;
};

// Steps 2 to 5 for `search`, in order, as the environment and the process
// stand now (step 1 is the variable alone).
std::vector<VendorLibraryCandidate> vendor_library_candidates(
    const VendorLibrarySearch& search);

// Opens the first candidate whose library has every entry point of `Api`
// (an API table with missing(), such as NvrtcApi): `path()` and
// `found_by()` say which file and how. Otherwise a library that is not
// open, with `why_not` saying what was tried.
DynamicLibrary open_vendor_library(
    const VendorLibrarySearch& search,
    std::vector<std::string> (*missing_entry_points)(const DynamicLibrary&),
    std::string& why_not);

template <typename Api>
DynamicLibrary open_vendor_library(const VendorLibrarySearch& search,
                                   std::string& why_not) {
  return open_vendor_library(
      search, [](const DynamicLibrary& l) { return Api(l).missing(); },
      why_not);
}

}  // namespace jitwarm::gpu
