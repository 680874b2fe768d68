// NvrtcCompiler: the RtcCompiler of the CUDA plugin. libnvrtc is opened with
// dlopen (libnvrtc.so.13, then .12, then libnvrtc.so) through typed
// wrappers, so the plugin loads without it and a missing symbol is an error
// naming the symbol. Compiles in-process, needs no GPU and no driver.
#pragma once

#include "dynamic_library.hpp"
#include "nvjitlink_linker.hpp"
#include "rtc_compiler.hpp"

#include <nvrtc.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::cuda {

// The NVRTC entry points the plugin uses, resolved from the library.
struct NvrtcApi {
  explicit NvrtcApi(const gpu::DynamicLibrary& library);
  // The symbols that did not resolve (empty when all did).
  std::vector<std::string> missing() const;

  gpu::LibraryFunction<decltype(&::nvrtcVersion)> nvrtcVersion;
  gpu::LibraryFunction<decltype(&::nvrtcGetErrorString)> nvrtcGetErrorString;
  gpu::LibraryFunction<decltype(&::nvrtcGetNumSupportedArchs)>
      nvrtcGetNumSupportedArchs;
  gpu::LibraryFunction<decltype(&::nvrtcGetSupportedArchs)>
      nvrtcGetSupportedArchs;
  gpu::LibraryFunction<decltype(&::nvrtcCreateProgram)> nvrtcCreateProgram;
  gpu::LibraryFunction<decltype(&::nvrtcDestroyProgram)> nvrtcDestroyProgram;
  gpu::LibraryFunction<decltype(&::nvrtcAddNameExpression)>
      nvrtcAddNameExpression;
  gpu::LibraryFunction<decltype(&::nvrtcCompileProgram)> nvrtcCompileProgram;
  gpu::LibraryFunction<decltype(&::nvrtcGetProgramLogSize)>
      nvrtcGetProgramLogSize;
  gpu::LibraryFunction<decltype(&::nvrtcGetProgramLog)> nvrtcGetProgramLog;
  gpu::LibraryFunction<decltype(&::nvrtcGetLoweredName)> nvrtcGetLoweredName;
  gpu::LibraryFunction<decltype(&::nvrtcGetCUBINSize)> nvrtcGetCUBINSize;
  gpu::LibraryFunction<decltype(&::nvrtcGetCUBIN)> nvrtcGetCUBIN;
  gpu::LibraryFunction<decltype(&::nvrtcGetPTXSize)> nvrtcGetPTXSize;
  gpu::LibraryFunction<decltype(&::nvrtcGetPTX)> nvrtcGetPTX;
  // Optional (CUDA 12.0 and later): the LTO IR of a -dlto compile, for
  // batches linked per kernel. Without them batches share one cubin.
  gpu::LibraryFunction<decltype(&::nvrtcGetLTOIRSize)> nvrtcGetLTOIRSize;
  gpu::LibraryFunction<decltype(&::nvrtcGetLTOIR)> nvrtcGetLTOIR;
};

class NvrtcCompiler final : public gpu::RtcCompiler {
 public:
  // The compiler, or nullptr with `why_not` set when libnvrtc cannot be
  // opened or lacks a symbol the plugin needs.
  static std::unique_ptr<NvrtcCompiler> open(std::string& why_not);

  // NVRTC's --Ofast-compile level (CUDA 12.8 and later): "off" (the
  // default) passes no option; "min", "mid" and "max" compile 1.5 to 2.5
  // times faster but cost the kernels bandwidth (silu_and_mul 0.94x ->
  // 0.65x of a copy with "min" on an H200: docs/results/cuda-h200.md), so
  // they are for warming what speed does not matter for. Set from
  // JITWARM_CUDA_FAST_COMPILE (docs/cli.md). Throws PluginError for another
  // value. Part of options_for, so of every fingerprint.
  void set_fast_compile(std::string_view level);
  const std::string& fast_compile() const { return fast_compile_; }

  // How many threads one compile may use: NVRTC's --split-compile (CUDA
  // 12.8 and later), which optimizes and assembles the kernels of one
  // program (a batch) on several threads. 0, the default: as many as this
  // process may use (usable_cpus.hpp: its CPU quota and affinity mask, not
  // the host's cores), which compiled the kernel set 1.5-1.7x
  // faster in one process on the H200 host and cost nothing when 16 warmup
  // processes already used every core; 1: one thread, no option passed (as
  // before this setting). Set from JITWARM_CUDA_COMPILE_THREADS
  // (docs/cli.md); throws PluginError for a value that is not a count up
  // to kMaxCompileThreads. Part of options_for, so of every fingerprint: a
  // split compile may schedule a kernel's code differently (2 of the
  // kernel set's 164 sm_90 instantiations).
  static constexpr unsigned kMaxCompileThreads = 4096;
  void set_compile_threads(std::string_view threads);
  unsigned compile_threads() const { return compile_threads_; }

  std::string identity() const override;
  // identity(), plus nvJitLink's when it links this target's batches.
  std::string identity_for(const gpu::GpuTarget& target) const override;
  std::vector<std::string> options_for(
      const gpu::GpuTarget& target) const override;
  std::string own_headers_option() const override;
  // A program of several name expressions (a batch) compiles once to LTO
  // IR (-dlto) and each kernel is linked into a cubin of its own, on up to
  // compile_threads() threads, when links_apart(target); any other program
  // compiles to one binary with the options.
  gpu::CompiledProgram compile(const gpu::RtcProgram& program,
                               const gpu::GpuTarget& target) const override;
  // Whether batches for `target` are linked per kernel: nvJitLink is there,
  // the target is a cubin, fast compile is off (nvJitLink has no such mode)
  // and more than one thread may compile (on one thread the shared cubin of
  // a split-free compile is faster: docs/results/compile-throughput.md).
  bool links_apart(const gpu::GpuTarget& target) const;
  // kLinkedBatchSize when links_apart(target), else no preference: a batch
  // linked per kernel costs no cache space, and the larger it is, the
  // fewer front ends and the more kernels link at once (the kernel set for
  // sm_90 on the H200 host, one process: 5.4-5.9 s with batches of 8,
  // 3.1-3.4 s with 32, 3.0-3.2 s with 64; docs/results/cuda-h200.md).
  static constexpr unsigned kLinkedBatchSize = 64;
  unsigned preferred_batch_size(const gpu::GpuTarget& target) const override;
  // Why batches are not linked per kernel on any target (empty when they
  // may be).
  const std::string& linker_unavailable() const { return linker_missing_; }
  // "nvjitlink 13.0 (libnvJitLink.so.13)", or empty without the linker.
  std::string linker_identity() const;

  const std::string& library_name() const { return library_.name(); }
  std::string library_origin() const { return library_.origin(); }
  std::string libraries() const override;
  int major_version() const { return major_; }
  int minor_version() const { return minor_; }
  // Architectures this NVRTC compiles for (75, 80, 86, 90, ...).
  const std::vector<int>& supported_archs() const { return supported_; }

 private:
  explicit NvrtcCompiler(gpu::DynamicLibrary library);
  // "NVRTC_ERROR_...": thrown as PluginError(JW_ERROR_INTERNAL) for calls
  // that only fail on misuse or resource exhaustion.
  void check(nvrtcResult result, const char* call) const;
  void check_arch_supported(const gpu::GpuTarget& target) const;
  // Compiles `program` with `options` (not program.options) and hands the
  // compiled nvrtcProgram to `take_output`, with the log and lowered names
  // already in the result. Throws RtcCompileError when NVRTC refuses it.
  template <typename TakeOutput>
  gpu::CompiledProgram run_nvrtc(const gpu::RtcProgram& program,
                                 const std::vector<std::string>& options,
                                 TakeOutput&& take_output) const;
  gpu::CompiledProgram compile_linked_apart(const gpu::RtcProgram& program,
                                            const gpu::GpuTarget& target) const;

  gpu::DynamicLibrary library_;
  NvrtcApi api_;
  int major_ = 0;
  int minor_ = 0;
  std::string fast_compile_ = "off";
  unsigned compile_threads_ = 0;
  std::vector<int> supported_;
  std::unique_ptr<NvJitLinker> linker_;
  std::string linker_missing_;
};

}  // namespace jitwarm::cuda
