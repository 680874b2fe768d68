// HipCompiler: the RtcCompiler the HIP plugin hands to the shared GPU
// backend. It picks, per target, one of two compilers of the same sources:
//
//   1. hiprtc, in-process, when its comgr lists the target ID exactly
//      (Debian's hiprtc 5.2: gfx600 ... gfx90a, gfx1010 ... gfx1036);
//   2. otherwise clang, out of process, when a clang here lists the
//      processor (clang 19: also gfx940/gfx942, gfx1100 ... gfx1201);
//   3. otherwise the target is refused (JW_ERROR_UNSUPPORTED) with what
//      was tried. No target comgr does not list ever reaches hiprtc: that
//      would abort the host process.
//
// The choice is a function of the target and of what is installed, so it
// is the same for every key of a target in a process; the chosen
// compiler's identity (name, version, path) is in every fingerprint and
// its options in every program, so cached code objects of one compiler are
// never taken for the other's.
#pragma once

#include "clang_hip_compiler.hpp"
#include "hiprtc_compiler.hpp"
#include "rtc_compiler.hpp"

#include <memory>
#include <string>

namespace jitwarm::hip {

class HipCompiler final : public gpu::RtcCompiler {
 public:
  // Either compiler may be null (not installed); `hiprtc_missing` and
  // `clang_missing` say why, for messages.
  HipCompiler(std::unique_ptr<HiprtcCompiler> hiprtc,
              std::string hiprtc_missing,
              std::unique_ptr<ClangHipCompiler> clang,
              std::string clang_missing);

  struct Choice {
    const gpu::RtcCompiler* compiler = nullptr;
    const char* name = "";  // "hiprtc" or "clang"
  };
  // Throws PluginError(JW_ERROR_UNSUPPORTED) naming both compilers and why
  // neither compiles the target.
  Choice choose(const gpu::GpuTarget& target) const;

  // Both compilers, for the load report and describe().
  std::string identity() const override;
  std::string identity_for(const gpu::GpuTarget& target) const override;
  std::vector<std::string> options_for(
      const gpu::GpuTarget& target) const override;
  gpu::CompiledProgram compile(const gpu::RtcProgram& program,
                               const gpu::GpuTarget& target) const override;

  const HiprtcCompiler* hiprtc() const { return hiprtc_.get(); }
  const ClangHipCompiler* clang() const { return clang_.get(); }
  // One line for the load report: which compiler serves which targets.
  std::string summary() const;

 private:
  std::unique_ptr<HiprtcCompiler> hiprtc_;
  std::string hiprtc_missing_;
  std::unique_ptr<ClangHipCompiler> clang_;
  std::string clang_missing_;
};

}  // namespace jitwarm::hip
