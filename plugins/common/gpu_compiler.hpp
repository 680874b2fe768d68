// GpuCompiler: the compile half of a GpuBackend (gpu_backend.hpp). Given a
// run-time compiler and the kernels' sources, it turns a compile key into
// an artifact:
//
//   compile key -> KernelInstantiation -> RtcProgram (source, headers,
//     name expression, options) -> CompiledKernel (memoized per program)
//
// and, for the same key, its description (describe), its fingerprint and
// the compiler's options; several keys at once as one program
// (compile_batch). It knows nothing of devices or of the C ABI.
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/error.hpp>

#include "compiled_kernel_memo.hpp"
#include "embedded_kernel_sources.hpp"
#include "gpu_backend_description.hpp"
#include "gpu_target.hpp"
#include "kernel_descriptor.hpp"
#include "kernel_instantiation.hpp"
#include "rtc_compiler.hpp"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::gpu {

class GpuCompiler {
 public:
  using Descriptor = std::shared_ptr<const KernelDescriptor>;

  // `compiler` may be null (its library is missing): compile, describe's
  // options and fingerprint then fail with `compiler_unavailable`, while
  // instantiating keys (for launches of cached artifacts) still works.
  // `description` and `sources` must outlive the compiler (the embedded
  // set is static).
  GpuCompiler(const GpuBackendDescription& description,
              std::unique_ptr<RtcCompiler> compiler,
              std::string compiler_unavailable,
              std::span<const EmbeddedSource> sources);
  ~GpuCompiler();
  GpuCompiler(const GpuCompiler&) = delete;
  GpuCompiler& operator=(const GpuCompiler&) = delete;

  // The built-in kernel a key names (JW_ERROR_NOT_FOUND otherwise): the
  // descriptor of the overloads below that take none.
  static const Descriptor& builtin(const jw_compile_key_view& key);

  // The compiled kernel of a key for the kernel of `descriptor`.
  std::shared_ptr<const CompiledKernel> compile(const Descriptor& descriptor,
                                                const jw_compile_key_view& key);
  std::shared_ptr<const CompiledKernel> compile(const jw_compile_key_view& key);
  // Several keys at once (jw_kernel_impl.compile_batch): keys whose
  // programs differ only in their instantiation compile as one program
  // with a name expression each, so the compiler parses and sets up once.
  // Every key's artifact is that program's binary, with its own entry
  // point. When the compiler refuses the program, each of its keys is
  // compiled alone, so a failing instantiation reports its own error and
  // costs the others nothing. One result per key, in order.
  struct BatchResult {
    std::shared_ptr<const CompiledKernel> compiled;  // or:
    std::optional<plugin::PluginError> error;
  };
  std::vector<BatchResult> compile_batch(
      const Descriptor& descriptor,
      std::span<const jw_compile_key_view* const> keys);
  std::string describe(const Descriptor& descriptor,
                       const jw_compile_key_view& key) const;
  std::string describe(const jw_compile_key_view& key) const;
  std::string fingerprint(const Descriptor& descriptor,
                          const jw_compile_key_view& key) const;
  std::string fingerprint(const jw_compile_key_view& key) const;
  // The compiler's preferred batch size for a target ("cuda:sm_90"); 0 for
  // none, or without a compiler.
  unsigned preferred_batch_size(std::string_view target) const;

  // The key's instantiation of the kernel of `descriptor` for the key's
  // target (needs no compiler: a launch prepares with it).
  KernelInstantiation instantiate(const Descriptor& descriptor,
                                  const jw_compile_key_view& key) const;
  // The program a key compiles (source, headers, name expression, options).
  RtcProgram program_for(const KernelInstantiation& instantiation,
                         const GpuTarget& target) const;
  // The compiler's options for a descriptor's programs for `target`.
  std::vector<std::string> options_of(const KernelDescriptor& descriptor,
                                      const GpuTarget& target) const;
  GpuTarget parse_target(const jw_compile_key_view& key) const;

  bool can_compile() const { return compiler_ != nullptr; }
  // The run-time compiler, or null without one.
  const RtcCompiler* rtc() const { return compiler_.get(); }
  // "NVRTC unavailable: <why>", for a backend without a compiler.
  std::string unavailable() const;
  // The backend's own kernel sources (the embedded set, or a test's).
  std::span<const EmbeddedSource> sources() const { return sources_; }
  CompiledKernelMemo::Counters counters() const { return memo_.counters(); }

 private:
  const RtcCompiler& require_compiler() const;
  // The sources a descriptor's program is made of (the backend's own set
  // for the built-in kernels).
  std::span<const EmbeddedSource> sources_of(
      const KernelDescriptor& descriptor) const;

  const GpuBackendDescription& description_;
  std::unique_ptr<RtcCompiler> compiler_;
  std::string compiler_unavailable_;
  std::span<const EmbeddedSource> sources_;
  CompiledKernelMemo memo_;
};

// XXH3-128 of `text` as 32 hex digits: how a program's files enter its
// identity and fingerprint, and a kernel from source's files its
// implementation name.
std::string content_hash(std::string_view text);

}  // namespace jitwarm::gpu
