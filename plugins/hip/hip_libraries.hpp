// Where the HIP plugin looks for AMD's libraries (hiprtc, the HIP runtime,
// comgr) and clang: the dynamic loader's search path (LD_LIBRARY_PATH,
// ld.so.cache: Debian's packages), and a ROCm install. $ROCM_PATH, when
// set, is searched first; /opt/rocm, ROCm's default prefix, last.
#pragma once

#include "dynamic_library.hpp"

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace jitwarm::hip {

// The ROCm prefix to search: $ROCM_PATH, or /opt/rocm.
std::string rocm_root();

// `names` as dlopen should try them: under $ROCM_PATH/lib first when
// ROCM_PATH is set, then the bare names, then /opt/rocm/lib (when
// ROCM_PATH is not set).
std::vector<std::string> library_candidates(
    std::initializer_list<const char*> names);

// The first candidate that opens and that `missing_symbols` finds nothing
// missing in. Otherwise a closed library, with `why_not` saying, per
// candidate that opened, which symbols it lacks, and what dlopen said.
gpu::DynamicLibrary open_library_with(
    const std::vector<std::string>& candidates,
    const std::function<std::vector<std::string>(const gpu::DynamicLibrary&)>&
        missing_symbols,
    std::string& why_not);

// The file a loaded library was mapped from, symlinks resolved
// ("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153"), found through
// one of its symbols; empty when unknown.
std::string mapped_file_of(const gpu::DynamicLibrary& library,
                           const char* symbol);

// "5.2.21153" from ".../libamdhip64.so.5.2.21153"; empty without one.
std::string soname_version(const std::string& path);

}  // namespace jitwarm::hip
