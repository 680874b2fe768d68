// HipCompiler: the per-target choice between hiprtc and clang.
#include "hip_compiler.hpp"

#include <jitwarm/plugin.hpp>

#include "hip_target.hpp"

namespace jitwarm::hip {

HipCompiler::HipCompiler(std::unique_ptr<HiprtcCompiler> hiprtc,
                         std::string hiprtc_missing,
                         std::unique_ptr<ClangHipCompiler> clang,
                         std::string clang_missing)
    : hiprtc_(std::move(hiprtc)),
      hiprtc_missing_(std::move(hiprtc_missing)),
      clang_(std::move(clang)),
      clang_missing_(std::move(clang_missing)) {}

HipCompiler::Choice HipCompiler::choose(const gpu::GpuTarget& target) const {
  if (hiprtc_ != nullptr && hiprtc_->knows(target)) {
    return Choice{hiprtc_.get(), "hiprtc"};
  }
  std::string clang_why_not = clang_missing_;
  if (clang_ != nullptr && clang_->installation_for(hip_processor(target.arch),
                                                    clang_why_not) != nullptr) {
    return Choice{clang_.get(), "clang"};
  }
  const std::string hiprtc_why_not =
      hiprtc_ != nullptr
          ? "comgr " + hiprtc_->isas().version() + " (" +
                hiprtc_->isas().library() + ") does not list " + target.arch +
                " (it lists " + hiprtc_->isas().summary() + ")"
          : hiprtc_missing_;
  throw plugin::PluginError(JW_ERROR_UNSUPPORTED,
                            "no HIP compiler here compiles for " + target.text +
                                ": hiprtc: " + hiprtc_why_not +
                                "; clang: " + clang_why_not);
}

std::string HipCompiler::identity() const {
  std::string text;
  if (hiprtc_ != nullptr) text = hiprtc_->identity() + " for comgr's ISAs";
  if (clang_ != nullptr && clang_->has_candidates()) {
    text += (text.empty() ? "" : "; ") + clang_->identity() +
            (hiprtc_ != nullptr ? " for the others" : "");
  }
  return text;
}

std::string HipCompiler::identity_for(const gpu::GpuTarget& target) const {
  return choose(target).compiler->identity_for(target);
}

std::vector<std::string> HipCompiler::options_for(
    const gpu::GpuTarget& target) const {
  return choose(target).compiler->options_for(target);
}

gpu::CompiledProgram HipCompiler::compile(const gpu::RtcProgram& program,
                                          const gpu::GpuTarget& target) const {
  return choose(target).compiler->compile(program, target);
}

std::string HipCompiler::summary() const {
  std::string text = hiprtc_ != nullptr
                         ? "hiprtc in-process for " +
                               hiprtc_->isas().summary() + " (" +
                               hiprtc_->library_path() + ", comgr " +
                               hiprtc_->isas().version() + ")"
                         : "no hiprtc (" + hiprtc_missing_ + ")";
  if (clang_ != nullptr && clang_->has_candidates()) {
    text += "; clang out-of-process for other targets (";
    for (std::size_t i = 0; i < clang_->candidates().size(); ++i) {
      text += (i == 0 ? "" : ", ") + clang_->candidates()[i];
    }
    text += ")";
  } else {
    text += "; no clang (" + clang_missing_ + ")";
  }
  return text;
}

}  // namespace jitwarm::hip
