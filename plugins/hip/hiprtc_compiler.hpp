// HiprtcCompiler: the in-process RtcCompiler of the HIP plugin, for the
// ISAs hiprtc's comgr lists. hiprtc is opened with dlopen (libhiprtc of
// ROCm 6/7, or libamdhip64, which holds hiprtc in ROCm 5 and Debian)
// through typed wrappers, so the plugin loads without it and a missing
// symbol is an error naming it. Needs no GPU, no /dev/kfd and no HIP
// runtime initialization.
//
// Debian's hiprtc 5.2 aborts the process for an ISA (or feature) its comgr
// does not know, so compile() refuses every target ID comgr does not list
// exactly, before any hiprtc call: such a target never reaches hiprtc. It
// also aborts when two threads compile at once, so compiles are serialized
// process-wide (parallel warmup uses worker processes instead).
#pragma once

#include "code_object.hpp"
#include "comgr_isa_list.hpp"
#include "dynamic_library.hpp"
#include "rtc_compiler.hpp"

#include <hip/hiprtc.h>

#include <memory>
#include <string>
#include <vector>

namespace jitwarm::hip {

// The hiprtc entry points the plugin uses, resolved from the library.
struct HiprtcApi {
  explicit HiprtcApi(const gpu::DynamicLibrary& library);
  // The symbols that did not resolve (empty when all did).
  std::vector<std::string> missing() const;

#define JW_HIPRTC_FUNCTIONS(X) \
  X(hiprtcVersion)             \
  X(hiprtcGetErrorString)      \
  X(hiprtcCreateProgram)       \
  X(hiprtcDestroyProgram)      \
  X(hiprtcAddNameExpression)   \
  X(hiprtcCompileProgram)      \
  X(hiprtcGetProgramLogSize)   \
  X(hiprtcGetProgramLog)       \
  X(hiprtcGetLoweredName)      \
  X(hiprtcGetCodeSize)         \
  X(hiprtcGetCode)

#define JW_DECLARE_HIPRTC_FUNCTION(name) \
  gpu::LibraryFunction<decltype(&::name)> name;
  JW_HIPRTC_FUNCTIONS(JW_DECLARE_HIPRTC_FUNCTION)
#undef JW_DECLARE_HIPRTC_FUNCTION
};

class HiprtcCompiler final : public gpu::RtcCompiler {
 public:
  // The compiler, or nullptr with `why_not` set when no library with every
  // hiprtc symbol opens, or when comgr's ISA list cannot be read (without
  // it no target could be sent to hiprtc safely).
  static std::unique_ptr<HiprtcCompiler> open(std::string& why_not);
  // hiprtc from `library` gated by `isas` (tests give a narrower list).
  HiprtcCompiler(gpu::DynamicLibrary library, ComgrIsaList isas);

  // "hiprtc 5.2.21153 (/usr/lib/.../libamdhip64.so.5.2.21153, comgr 2.4)"
  std::string identity() const override;
  std::vector<std::string> options_for(
      const gpu::GpuTarget& target) const override;
  // Throws PluginError(JW_ERROR_UNSUPPORTED) for a target comgr does not
  // list, without calling hiprtc.
  gpu::CompiledProgram compile(const gpu::RtcProgram& program,
                               const gpu::GpuTarget& target) const override;

  // Whether hiprtc may be given this target (comgr lists target.arch).
  bool knows(const gpu::GpuTarget& target) const;
  const ComgrIsaList& isas() const { return isas_; }
  // The file the hiprtc symbols came from, resolved ("/usr/lib/...so.5.2.x").
  const std::string& library_path() const { return library_path_; }

 private:
  // When hiprtc can lower the expression, its lowered name must be the
  // kernel found in the code object (throws PluginError otherwise).
  void check_lowered_name(hiprtcProgram program, const std::string& expression,
                          const std::string& kernel) const;
  // Throws PluginError(JW_ERROR_INTERNAL, or OUT_OF_MEMORY) naming the call.
  void check(hiprtcResult result, const char* call) const;

  gpu::DynamicLibrary library_;
  HiprtcApi api_;
  ComgrIsaList isas_;
  std::string library_path_;
  std::string identity_;
};

}  // namespace jitwarm::hip
