// GpuBackend: the plugin glue shared by the CUDA and HIP plugins. Given a
// run-time compiler, a device driver and the embedded kernel sources, it
// registers the ten kernel implementations and the platform with the host,
// and runs the pipeline behind their C callbacks:
//
//   compile key -> KernelInstantiation -> RtcProgram (source)
//     -> CompiledKernel (memoized per program) -> artifact
//   artifact + args -> KernelArguments + LoadedKernel (per artifact and
//     context) -> LaunchGeometry -> ConfiguredLaunch -> driver launch
//
// Everything that crosses the C ABI goes through plugin::guarded, so no
// exception escapes. A backend owns its state (compiler, driver, memo,
// loaded modules); the plugin keeps one per runtime registered with it, from
// that runtime's register_all to its unregister_all (the compiler and
// driver libraries they open are shared process-wide by the dynamic loader).
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/error.hpp>

#include "compiled_kernel_memo.hpp"
#include "device_driver.hpp"
#include "embedded_kernel_sources.hpp"
#include "gpu_target.hpp"
#include "kernel_descriptor.hpp"
#include "kernel_instantiation.hpp"
#include "rtc_compiler.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jitwarm::gpu {

struct GpuBackendDescription {
  std::string plugin_name;  // "jitwarm-cuda", for messages
  std::string platform;     // "cuda": jw_kernel_impl.platform and target prefix
  std::string impl_name;    // "cuda-nvrtc": jw_kernel_impl.impl_name
  std::string compiler_label;  // "NVRTC": names the compiler in messages
  // Parses a key's target; throws PluginError(JW_ERROR_UNSUPPORTED) for a
  // target this backend cannot compile for.
  std::function<GpuTarget(std::string_view target)> parse_target;
};

class GpuBackend {
 public:
  // `compiler` may be null (its library is missing): compile, describe's
  // options and fingerprint then fail with `compiler_unavailable`, while
  // launches of cached artifacts still work. `sources` must outlive the
  // backend (the embedded set is static).
  GpuBackend(
      GpuBackendDescription description, std::unique_ptr<RtcCompiler> compiler,
      std::string compiler_unavailable, std::unique_ptr<DeviceDriver> driver,
      std::span<const EmbeddedSource> sources = embedded_kernel_sources());
  ~GpuBackend();
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  // Registers an implementation of every built-in kernel descriptor and the
  // platform. Throws PluginError when the host refuses one.
  void register_with(const jw_host_api& host);

  // The backends of this plugin library, one per host table (runtime):
  // `install` registers `backend` with `host` and keeps it until
  // `uninstall(host)` (unregister_all) or `shutdown_installed` (shutdown).
  // A second install for one table is an error. Deliberately not static
  // objects with destructors: at process exit the vendor driver may already
  // be torn down, and unloading modules then could crash.
  static void install(std::unique_ptr<GpuBackend> backend,
                      const jw_host_api& host);
  static bool installed(const jw_host_api& host);
  static std::size_t installed_count();
  // jw_plugin_api.implement_source_kernel of a GPU plugin: the installed
  // backend of `host` implements the kernel.
  static jw_status implement_source_kernel_callback(
      const jw_host_api* host, const jw_source_kernel* kernel,
      const jw_kernel_schema** out_schema, jw_kernel_impl* out);
  // Shuts the backend of `host` down and destroys it (unregister_all).
  static void uninstall(const jw_host_api& host);
  // Shuts every installed backend down and destroys it (plugin shutdown).
  static void shutdown_installed();

  // The operations behind the C callbacks, for the kernel of `descriptor`
  // (tests call them directly; the overloads without one take the
  // built-in kernel the key names).
  using Descriptor = std::shared_ptr<const KernelDescriptor>;
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
  void launch(const Descriptor& descriptor, const jw_artifact_view& artifact,
              std::span<const jw_arg_value> args, void* stream);
  void launch(const jw_artifact_view& artifact,
              std::span<const jw_arg_value> args, void* stream);
  // A launch prepared once per artifact (jw_kernel_impl.prepare): the key
  // checked and instantiated, how arguments pack, and the loaded function
  // per device context, so each launch only plans its grid, packs values
  // and calls the driver. `artifact` must outlive it (the core's does).
  class PreparedLaunch;
  std::unique_ptr<PreparedLaunch> prepare(const Descriptor& descriptor,
                                          const jw_artifact_view& artifact);
  std::unique_ptr<PreparedLaunch> prepare(const jw_artifact_view& artifact);
  static void release(PreparedLaunch* prepared);
  // Arguments as the core validated them against the artifact's key (P12).
  void launch_prepared(PreparedLaunch& prepared,
                       std::span<const jw_arg_value> args, void* stream);
  // JW_PLATFORM_* bits; `detail` says why a bit is missing. Never
  // initializes the driver.
  uint32_t capabilities(std::string& detail) const;

  // The program a key compiles (source, headers, name expression, options).
  RtcProgram program_for(const KernelInstantiation& instantiation,
                         const GpuTarget& target) const;
  // The compiler's options for a descriptor's programs for `target`.
  std::vector<std::string> options_of(const KernelDescriptor& descriptor,
                                      const GpuTarget& target) const;
  GpuTarget parse_target(const jw_compile_key_view& key) const;
  const GpuBackendDescription& description() const { return description_; }
  bool can_compile() const { return compiler_ != nullptr; }
  const RtcCompiler* compiler() const { return compiler_.get(); }
  DeviceDriver& driver() { return *driver_; }
  CompiledKernelMemo::Counters compile_counters() const {
    return memo_.counters();
  }

  // jw_plugin_api.implement_source_kernel: an implementation of a kernel
  // from source on this backend's platform (its destroy frees what it
  // holds), and in *schema the schema its descriptor defines, if any.
  // Throws PluginError naming the descriptor's file:line;
  // JW_ERROR_UNSUPPORTED when the kernel is not written for this platform.
  jw_kernel_impl implement_source_kernel(const jw_source_kernel& kernel,
                                         const jw_kernel_schema** schema);

  // Releases device resources (modules, contexts). For plugin shutdown.
  void shutdown();

 public:
  // What an implementation's user_data is.
  struct ImplEntry {
    GpuBackend* backend;
    Descriptor descriptor;
    // jw_kernel_impl.impl_name, part of every compile key. A kernel from
    // source adds a hash of its descriptor and files to the backend's
    // name, so two versions of one kernel (a copy of a built-in kernel
    // and the bundled one, a host's edited kernel) never share keys, and
    // so never share the in-memory cache's artifacts.
    std::string impl_name;
  };

 private:
  struct KernelCallbacks;  // the C callbacks of an implementation
  jw_kernel_impl impl_table(ImplEntry& entry,
                            std::vector<const char*>& names) const;
  const RtcCompiler& require_compiler() const;
  // The sources a descriptor's program is made of (the backend's embedded
  // set for the built-in kernels).
  std::span<const EmbeddedSource> sources_of(
      const KernelDescriptor& descriptor) const;
  std::shared_ptr<const KernelInstantiation> launch_recipe(
      const Descriptor& descriptor, const jw_artifact_view& artifact);

  GpuBackendDescription description_;
  std::unique_ptr<RtcCompiler> compiler_;
  std::string compiler_unavailable_;
  std::unique_ptr<DeviceDriver> driver_;
  std::span<const EmbeddedSource> sources_;
  CompiledKernelMemo memo_;
  std::vector<std::unique_ptr<ImplEntry>> entries_;
  // Per artifact: the instantiation its key maps to, so a launch does not
  // rebuild it (artifact ids are unique and stable for the process).
  std::shared_mutex recipes_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<const KernelInstantiation>>
      recipes_;
};

}  // namespace jitwarm::gpu
