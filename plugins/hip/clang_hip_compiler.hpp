// ClangHipCompiler: the out-of-process RtcCompiler of the HIP plugin, for
// the targets hiprtc's comgr does not list (with Debian's hiprtc 5.2:
// gfx940/gfx942, gfx1100 and newer). It runs a clang that knows the target
//
//   clang++ -x hip --offload-arch=gfxNNN --cuda-device-only
//     --no-gpu-bundle-output -nogpulib -nogpuinc -O3 -std=c++17
//     -fuse-cuid=none -c <program> -o <code object>
//
// on the same kernel sources (portability.cuh needs no HIP header and no
// device library), and gets a raw AMDGPU ELF code object.
//
// Lowered names: clang has no name expressions; the program instantiates
// each expression and the kernel is found in the code object
// (code_object.hpp has the rules, shared with hiprtc).
//
// Clang is looked for in this order, and each target takes the first one
// whose --print-supported-cpus lists its processor (so a newer clang,
// installed later, does not change the binaries of targets an older one
// already builds): $JITWARM_HIP_CLANG, clang++-19 (in $PATH) and
// /usr/lib/llvm-19/bin/clang++, then versions 20 to 30 alike, then a ROCm
// install's $ROCM_PATH/llvm/bin/clang++ (/opt/rocm/llvm/bin/clang++ when
// ROCM_PATH is unset). Each clang is asked for its version and processors
// once, on first use.
#pragma once

#include "rtc_compiler.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::hip {

// One clang found on this machine, probed on first use.
struct ClangInstallation {
  std::string path;          // as found, e.g. "/usr/bin/clang++-19"
  std::string version_line;  // "Debian clang version 19.1.7 (3~deb12u1)"
  std::vector<std::string> processors;  // "gfx90a", "gfx942", ...
  std::string probe_error;              // why it is unusable, if it is
  bool usable() const { return probe_error.empty(); }
  bool lists(std::string_view processor) const;
};

class ClangHipCompiler final : public gpu::RtcCompiler {
 public:
  // The clang candidates that exist here, in search order (deduplicated
  // by the file they resolve to), and a description of the search for
  // messages.
  static std::vector<std::string> find_candidates(std::string& searched);

  // `candidates` in order of preference (tests pass their own).
  ClangHipCompiler(std::vector<std::string> candidates, std::string searched);
  ~ClangHipCompiler() override;

  bool has_candidates() const { return !candidates_.empty(); }
  const std::vector<std::string>& candidates() const { return candidates_; }
  const std::string& searched() const { return searched_; }

  // The first clang that lists `processor`, or nullptr with `why_not`
  // naming every clang tried and what it lacked.
  const ClangInstallation* installation_for(std::string_view processor,
                                            std::string& why_not) const;

  // The first usable clang's version line and path (probes it).
  std::string identity() const override;
  // The version line and path of the clang that compiles `target`.
  std::string identity_for(const gpu::GpuTarget& target) const override;
  std::vector<std::string> options_for(
      const gpu::GpuTarget& target) const override;
  // Throws PluginError(JW_ERROR_UNSUPPORTED) when no clang knows the
  // target, RtcCompileError with clang's output when it rejects the
  // program.
  gpu::CompiledProgram compile(const gpu::RtcProgram& program,
                               const gpu::GpuTarget& target) const override;

 private:
  struct Probe;
  const ClangInstallation& probed(std::size_t index) const;
  const ClangInstallation& require_installation(
      const gpu::GpuTarget& target) const;

  std::vector<std::string> candidates_;
  std::string searched_;
  std::vector<std::unique_ptr<Probe>> probes_;
};

}  // namespace jitwarm::hip
