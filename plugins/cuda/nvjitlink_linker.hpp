// NvJitLinker: the cubin of one kernel of a batch, linked from the batch's
// LTO IR with nvJitLink (CUDA 13's entry points), so that a batch compiles
// its source once and still gives each key a binary of its own kernel only.
// libnvJitLink is opened with dlopen like libnvrtc; without it (or with a
// version older than NVRTC's, which could not read NVRTC's LTO IR) batches
// compile to one shared cubin as before. Needs no GPU and no driver.
#pragma once

#include "dynamic_library.hpp"

#include <nvJitLink.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::cuda {

// The entry points nvJitLink.h's inline wrappers call for CUDA 13.0.
struct NvJitLinkApi {
  explicit NvJitLinkApi(const gpu::DynamicLibrary& library);
  std::vector<std::string> missing() const;

  gpu::LibraryFunction<decltype(&::nvJitLinkVersion)> version;
  gpu::LibraryFunction<decltype(&::__nvJitLinkCreate_13_0)> create;
  gpu::LibraryFunction<decltype(&::__nvJitLinkDestroy_13_0)> destroy;
  gpu::LibraryFunction<decltype(&::__nvJitLinkAddData_13_0)> add_data;
  gpu::LibraryFunction<decltype(&::__nvJitLinkComplete_13_0)> complete;
  gpu::LibraryFunction<decltype(&::__nvJitLinkGetLinkedCubinSize_13_0)>
      linked_cubin_size;
  gpu::LibraryFunction<decltype(&::__nvJitLinkGetLinkedCubin_13_0)>
      linked_cubin;
  gpu::LibraryFunction<decltype(&::__nvJitLinkGetErrorLogSize_13_0)>
      error_log_size;
  gpu::LibraryFunction<decltype(&::__nvJitLinkGetErrorLog_13_0)> error_log;
};

class NvJitLinker {
 public:
  // The linker, or nullptr with `why_not` set when libnvJitLink cannot be
  // opened, lacks an entry point, or is older than NVRTC `nvrtc_major`.
  // `nvrtc_minor`.
  static std::unique_ptr<NvJitLinker> open(int nvrtc_major, int nvrtc_minor,
                                           std::string& why_not);

  // "nvjitlink 13.0": part of the fingerprint of every key whose batch it
  // links.
  std::string identity() const;
  const std::string& library_name() const { return library_.name(); }
  // Which file, and how it was found.
  std::string library_origin() const { return library_.origin(); }

  // The cubin for `arch` (sm_90, ...) of `kernel` (a lowered name in
  // `ltoir`) alone: the other kernels of the LTO IR are left out. Thread-
  // safe: one nvJitLink handle per call. Throws gpu::RtcCompileError with
  // nvJitLink's log when the link fails.
  std::string link(std::string_view ltoir, const std::string& kernel,
                   const std::string& arch) const;

 private:
  explicit NvJitLinker(gpu::DynamicLibrary library);

  gpu::DynamicLibrary library_;
  NvJitLinkApi api_;
  unsigned major_ = 0;
  unsigned minor_ = 0;
};

}  // namespace jitwarm::cuda
