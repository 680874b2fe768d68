// RtcCompiler: the compiler-agnostic interface to a run-time compiler
// (NVRTC in plugins/cuda, hiprtc or an out-of-process clang, chosen per
// target, in plugins/hip).
// A program is one source text, the headers it includes, the name
// expressions to instantiate and the options; the result is the binary for
// the target, the lowered (mangled) name of each expression and the log.
#pragma once

#include "gpu_target.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace jitwarm::gpu {

struct RtcHeader {
  std::string name;  // as written in #include "..."
  std::string text;
};

struct RtcProgram {
  std::string source_name;  // e.g. "rms_norm.cuh", for diagnostics
  std::string source_text;
  std::vector<RtcHeader> headers;
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;
};

struct CompiledProgram {
  std::string binary;  // CUBIN, PTX (NUL-terminated) or code object
  std::string format;  // "cubin", "ptx", "hsaco"
  std::vector<std::string> lowered_names;  // one per name expression
  // One per name expression when the compiler built each expression's
  // kernel into a binary of its own (then `binary` is empty); empty when
  // `binary` holds every expression's kernel.
  std::vector<std::string> binaries;
  std::string log;  // warnings, possibly empty
};

// The compiler rejected the program; what() is a one-line summary, log()
// the compiler's full output.
class RtcCompileError : public std::runtime_error {
 public:
  RtcCompileError(const std::string& summary, std::string log)
      : std::runtime_error(summary), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

class RtcCompiler {
 public:
  virtual ~RtcCompiler() = default;
  // Name and version, e.g. "nvrtc 13.0". Part of every fingerprint: a new
  // compiler version must not reuse binaries of the old one.
  virtual std::string identity() const = 0;
  // The identity of the compiler that builds `target`, for fingerprints
  // and describe(). The same as identity() unless a backend picks its
  // compiler per target (HIP: hiprtc or clang); may throw PluginError
  // (JW_ERROR_UNSUPPORTED) when no compiler builds the target.
  virtual std::string identity_for(const GpuTarget& target) const {
    static_cast<void>(target);
    return identity();
  }
  // The options for `target`, in the order they are passed (fingerprinted
  // and shown by describe()).
  virtual std::vector<std::string> options_for(
      const GpuTarget& target) const = 0;
  // An option for a program that includes only jitwarm's own headers (the
  // built-in kernels: plugins/common/kernels), which the compiler may then
  // compile with fewer declarations of its own; empty for none.
  virtual std::string own_headers_option() const { return {}; }
  // How many keys for `target` this compiler takes best in one batch (a
  // program of several name expressions); 0: no preference (the core's
  // default). jw_kernel_impl.preferred_batch_size.
  virtual unsigned preferred_batch_size(const GpuTarget& target) const {
    static_cast<void>(target);
    return 0;
  }
  // Which libraries it runs and where they were found, for the load report:
  // "nvrtc 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13, found by the dynamic
  // loader)"; empty when there is nothing to say.
  virtual std::string libraries() const { return {}; }
  // Thread-safe. Throws RtcCompileError when the source is rejected and
  // plugin::PluginError for anything else (e.g. an unknown architecture).
  virtual CompiledProgram compile(const RtcProgram& program,
                                  const GpuTarget& target) const = 0;
};

}  // namespace jitwarm::gpu
