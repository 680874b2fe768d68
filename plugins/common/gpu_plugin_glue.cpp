// The plugin glue of the GPU plugins: the C tables of each implementation
// and of the platform, the backend installed per host table, and kernels
// from source. Every callback runs inside plugin::guarded, so no exception
// crosses the C ABI.
#include "gpu_plugin_glue.hpp"

#include <jitwarm/plugin.hpp>

#include "gpu_compiler.hpp"
#include "gpu_launcher.hpp"
#include "kernel_descriptor.hpp"
#include "kernel_set.hpp"
#include "kernel_tuning.hpp"
#include "required_argument.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitwarm::gpu {
namespace {

using Descriptor = GpuCompiler::Descriptor;

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

// The platform's callbacks; user_data is the backend.
struct PlatformCallbacks {
  static GpuBackend& backend_of(void* user_data) {
    return *static_cast<GpuBackend*>(user_data);
  }

  // Platform
  static jw_status capabilities(void* user_data, uint32_t* out_flags,
                                const jw_text_sink* detail) {
    return plugin::guarded([&] {
      require_argument(out_flags != nullptr, "out_flags");
      std::string text;
      *out_flags = backend_of(user_data).capabilities(text);
      plugin::append(detail, text);
    });
  }
  static jw_status device_count(void* user_data, int32_t* out_count) {
    return plugin::guarded([&] {
      require_argument(out_count != nullptr, "out_count");
      *out_count = backend_of(user_data).driver().device_count();
    });
  }
  static jw_status device_target(void* user_data, int32_t device,
                                 const jw_text_sink* out) {
    return plugin::guarded([&] {
      GpuBackend& backend = backend_of(user_data);
      plugin::append(out, backend.description().platform + ":" +
                              backend.driver().device_arch(device));
    });
  }
  static jw_status device_name(void* user_data, int32_t device,
                               const jw_text_sink* out) {
    return plugin::guarded([&] {
      plugin::append(out, backend_of(user_data).driver().device_name(device));
    });
  }
  static jw_status allocate(void* user_data, int32_t device, size_t bytes,
                            void** out_ptr) {
    return plugin::guarded([&] {
      require_argument(out_ptr != nullptr, "out_ptr");
      *out_ptr = backend_of(user_data).driver().allocate(device, bytes);
    });
  }
  static jw_status free_memory(void* user_data, int32_t device, void* ptr) {
    return plugin::guarded(
        [&] { backend_of(user_data).driver().free_memory(device, ptr); });
  }
  static jw_status copy(void* user_data, int32_t device, void* dst,
                        const void* src, size_t bytes, jw_copy_direction dir,
                        void* stream) {
    return plugin::guarded([&] {
      backend_of(user_data).driver().copy(device, dst, src, bytes, dir, stream);
    });
  }
  static jw_status synchronize(void* user_data, int32_t device, void* stream) {
    return plugin::guarded(
        [&] { backend_of(user_data).driver().synchronize(device, stream); });
  }
};

// The callbacks of an implementation; user_data is its ImplEntry.
struct KernelCallbacks {
  using Entry = ImplEntry;

  static void check_kernel(const Entry& entry, const jw_compile_key_view& key) {
    const std::string_view expected = entry.descriptor->kernel_name;
    if (key.kernel_name == nullptr || expected != key.kernel_name) {
      throw plugin::PluginError(
          JW_ERROR_INVALID_ARGUMENT,
          "the " + std::string(expected) +
              " implementation was given a key for " +
              (key.kernel_name != nullptr ? key.kernel_name : "(null)"));
    }
  }
  static jw_status compile(void* user_data, const jw_compile_key_view* key,
                           const jw_artifact_sink* out) {
    return plugin::guarded([&] {
      require_argument(key != nullptr, "the compile key");
      require_argument(out != nullptr && out->emit != nullptr,
                       "the artifact sink");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      check_kernel(entry, *key);
      const std::shared_ptr<const CompiledKernel> compiled =
          entry.backend->compiler().compile(entry.descriptor, *key);
      jw_artifact_desc artifact{};
      artifact.struct_size = sizeof(jw_artifact_desc);
      artifact.binary = compiled->binary.data();
      artifact.binary_size = compiled->binary.size();
      artifact.format = compiled->format.c_str();
      artifact.entry_point = compiled->entry_point.c_str();
      plugin::check_host(out->emit(out->ctx, &artifact),
                         "handing the artifact to the core");
    });
  }
  static jw_status compile_batch(void* user_data,
                                 const jw_compile_key_view* const* keys,
                                 uint32_t num_keys,
                                 const jw_batch_artifact_sink* out) {
    return plugin::guarded([&] {
      require_argument(keys != nullptr || num_keys == 0, "the keys");
      require_argument(
          out != nullptr && out->emit != nullptr && out->fail != nullptr,
          "the batch sink");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      for (uint32_t i = 0; i < num_keys; ++i) {
        require_argument(keys[i] != nullptr, "a key of the batch");
        check_kernel(entry, *keys[i]);
      }
      const std::vector<GpuCompiler::BatchResult> results =
          entry.backend->compiler().compile_batch(entry.descriptor,
                                                  std::span(keys, num_keys));
      for (uint32_t i = 0; i < num_keys; ++i) {
        if (results[i].compiled) {
          const CompiledKernel& compiled = *results[i].compiled;
          jw_artifact_desc artifact{};
          artifact.struct_size = sizeof(jw_artifact_desc);
          artifact.binary = compiled.binary.data();
          artifact.binary_size = compiled.binary.size();
          artifact.format = compiled.format.c_str();
          artifact.entry_point = compiled.entry_point.c_str();
          plugin::check_host(out->emit(out->ctx, i, &artifact),
                             "handing an artifact of the batch to the core");
        } else {
          const plugin::PluginError& error = *results[i].error;
          plugin::check_host(
              out->fail(out->ctx, i, error.status(), error.what()),
              "handing a failure of the batch to the core");
        }
      }
    });
  }
  static jw_status launch(void* user_data, const jw_artifact_view* artifact,
                          const jw_arg_value* args, uint32_t num_args,
                          void* stream) {
    return plugin::guarded([&] {
      require_argument(artifact != nullptr, "the artifact");
      require_argument(args != nullptr || num_args == 0, "the arguments");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      if (artifact->key != nullptr) check_kernel(entry, *artifact->key);
      entry.backend->launcher().launch(entry.descriptor, *artifact,
                                       std::span(args, num_args), stream);
    });
  }
  static jw_status prepare(void* user_data, const jw_artifact_view* artifact,
                           void** out_prepared) {
    return plugin::guarded([&] {
      require_argument(artifact != nullptr, "the artifact");
      require_argument(out_prepared != nullptr,
                       "the prepared launch's out pointer");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      if (artifact->key != nullptr) check_kernel(entry, *artifact->key);
      *out_prepared = entry.backend->launcher()
                          .prepare(entry.descriptor, *artifact)
                          .release();
    });
  }
  static jw_status launch_prepared(void* user_data, void* prepared,
                                   const jw_arg_value* args, uint32_t num_args,
                                   void* stream) {
    return plugin::guarded([&] {
      const Entry& entry = *static_cast<const Entry*>(user_data);
      entry.backend->launcher().launch_prepared(
          *static_cast<GpuPreparedLaunch*>(prepared), std::span(args, num_args),
          stream);
    });
  }
  static void release_prepared(void*, void* prepared) {
    GpuPreparedLaunchDeleter()(static_cast<GpuPreparedLaunch*>(prepared));
  }
  static jw_status describe(void* user_data, const jw_compile_key_view* key,
                            const jw_text_sink* out) {
    return plugin::guarded([&] {
      require_argument(key != nullptr, "the compile key");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      check_kernel(entry, *key);
      plugin::append(
          out, entry.backend->compiler().describe(entry.descriptor, *key));
    });
  }
  static jw_status preferred_batch_size(void* user_data, const char* target,
                                        uint32_t* out_size) {
    return plugin::guarded([&] {
      require_argument(target != nullptr, "the target");
      require_argument(out_size != nullptr, "the batch size's out pointer");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      *out_size = entry.backend->compiler().preferred_batch_size(target);
    });
  }
  static jw_status tune_candidates(void* user_data,
                                   const jw_compile_key_view* key,
                                   const jw_tune_config_sink* out) {
    return plugin::guarded([&] {
      require_argument(key != nullptr, "the compile key");
      require_argument(out != nullptr && out->emit != nullptr,
                       "the config sink");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      check_kernel(entry, *key);
      const KernelDescriptor& d = *entry.descriptor;
      const GpuTarget target = entry.backend->compiler().parse_target(*key);
      std::vector<jw_tune_value> config(d.tune_choices.size());
      for (const ChoiceValues& values : gpu::tune_candidates(d, *key, target)) {
        for (std::size_t i = 0; i < values.size(); ++i) {
          config[i] = jw_tune_value{d.tune_choices[i].name.c_str(), values[i]};
        }
        plugin::check_host(out->emit(out->ctx, config.data(),
                                     static_cast<uint32_t>(config.size())),
                           "handing a tune candidate to the core");
      }
    });
  }
  static jw_status fingerprint(void* user_data, const jw_compile_key_view* key,
                               const jw_text_sink* out) {
    return plugin::guarded([&] {
      require_argument(key != nullptr, "the compile key");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      check_kernel(entry, *key);
      plugin::append(
          out, entry.backend->compiler().fingerprint(entry.descriptor, *key));
    });
  }
};

// The C table of `entry`'s implementation; `names` holds its parameter
// names and must live as long as the table is read.
jw_kernel_impl impl_table(ImplEntry& entry, std::vector<const char*>& names) {
  names.clear();
  for (const ExprParam& p : entry.descriptor->params) {
    names.push_back(p.name.c_str());
  }
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(jw_kernel_impl);
  impl.kernel_name = entry.descriptor->kernel_name.c_str();
  impl.platform = entry.backend->description().platform.c_str();
  impl.impl_name = entry.impl_name.c_str();
  impl.param_names = names.data();
  impl.num_param_names = static_cast<uint32_t>(names.size());
  impl.user_data = &entry;
  impl.compile = &KernelCallbacks::compile;
  impl.compile_batch = &KernelCallbacks::compile_batch;
  impl.launch = &KernelCallbacks::launch;
  impl.describe = &KernelCallbacks::describe;
  impl.fingerprint = &KernelCallbacks::fingerprint;
  impl.preferred_batch_size = &KernelCallbacks::preferred_batch_size;
  impl.tune_candidates = &KernelCallbacks::tune_candidates;
  impl.prepare = &KernelCallbacks::prepare;
  impl.launch_prepared = &KernelCallbacks::launch_prepared;
  impl.release_prepared = &KernelCallbacks::release_prepared;
  return impl;
}

// A kernel from source: its entry owns its descriptor (and files) and the
// parameter names its table points to; the core destroys it with the
// implementation.
struct SourceEntry {
  ImplEntry entry;
  std::vector<const char*> names;
};

// implement_source_kernel (gpu_plugin_glue.hpp) on `backend`, throwing.
jw_kernel_impl source_kernel_impl(GpuBackend& backend,
                                  const jw_source_kernel& kernel,
                                  const jw_kernel_schema** schema) {
  const GpuBackendDescription& description = backend.description();
  require_argument(kernel.struct_size >=
                       offsetof(jw_source_kernel, num_files) + sizeof(uint32_t),
                   "a complete jw_source_kernel");
  require_argument(kernel.descriptor != nullptr, "the kernel's descriptor");
  require_argument(kernel.files != nullptr || kernel.num_files == 0,
                   "the kernel's files");
  const std::string origin = kernel.origin != nullptr ? kernel.origin : "host";
  auto files = std::make_shared<SourceFiles>();
  for (uint32_t i = 0; i < kernel.num_files; ++i) {
    const jw_source_file& f = kernel.files[i];
    require_argument(f.name != nullptr && (f.text != nullptr || f.size == 0),
                     "a kernel file's name and text");
    files->add(f.name, std::string(f.text != nullptr ? f.text : "", f.size));
  }
  // jitwarm's own headers (portability.cuh, kernel_support.cuh) for
  // kernels that include them; a file of the kernel's own name wins.
  for (const EmbeddedSource& header : backend.compiler().sources()) {
    if (!header.name.ends_with(".cuh")) continue;
    if (std::find(files->names.begin(), files->names.end(), header.name) ==
        files->names.end()) {
      files->add(std::string(header.name), std::string(header.text));
    }
  }
  Descriptor descriptor = parse_kernel_descriptor(
      std::string_view(kernel.descriptor, kernel.descriptor_size), origin,
      [](std::string_view name) { return kernel_set::find_schema(name); },
      nullptr, std::move(files));
  if (!descriptor->platforms.empty() &&
      std::find(descriptor->platforms.begin(), descriptor->platforms.end(),
                description.platform) == descriptor->platforms.end()) {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        origin + ": not written for " + description.platform);
  }
  std::string contents(kernel.descriptor, kernel.descriptor_size);
  for (uint32_t i = 0; i < kernel.num_files; ++i) {
    const jw_source_file& f = kernel.files[i];
    contents += '\0' + std::string(f.name) + '\0' +
                std::string(f.text != nullptr ? f.text : "", f.size);
  }
  auto* source =
      new SourceEntry{ImplEntry{&backend, descriptor,
                                description.impl_name + "+" +
                                    content_hash(contents).substr(0, 8)},
                      {}};
  jw_kernel_impl impl = impl_table(source->entry, source->names);
  impl.destroy = [](void* user_data) {
    // user_data is the entry, the first member of its SourceEntry.
    delete reinterpret_cast<SourceEntry*>(user_data);
  };
  if (schema != nullptr) {
    *schema =
        descriptor->schema != nullptr ? &descriptor->schema->c() : nullptr;
  }
  return impl;
}

// A backend installed for one host table, with the entries of its
// built-in implementations (which live as long as it does).
struct InstalledBackend {
  std::unique_ptr<GpuBackend> backend;
  std::vector<std::unique_ptr<ImplEntry>> entries;
};

// Registers an implementation of every built-in kernel descriptor and the
// platform. Throws PluginError when the host refuses one.
void register_with(InstalledBackend& installed, const jw_host_api& host) {
  GpuBackend& backend = *installed.backend;
  const GpuBackendDescription& description = backend.description();
  std::vector<const char*> names;
  for (const Descriptor& descriptor : builtin_descriptors()) {
    installed.entries.push_back(std::make_unique<ImplEntry>(
        ImplEntry{&backend, descriptor, description.impl_name}));
    // Built-in entries live as long as the backend: no destroy.
    const jw_kernel_impl impl = impl_table(*installed.entries.back(), names);
    plugin::check_host(host.register_impl(host.host_ctx, &impl),
                       "registering " + description.impl_name + " for " +
                           descriptor->kernel_name);
  }

  jw_platform_desc platform{};
  platform.struct_size = sizeof(jw_platform_desc);
  platform.name = description.platform.c_str();
  platform.user_data = &backend;
  platform.capabilities = &PlatformCallbacks::capabilities;
  platform.device_count = &PlatformCallbacks::device_count;
  platform.device_target = &PlatformCallbacks::device_target;
  platform.allocate = &PlatformCallbacks::allocate;
  platform.free_memory = &PlatformCallbacks::free_memory;
  platform.copy = &PlatformCallbacks::copy;
  platform.synchronize = &PlatformCallbacks::synchronize;
  platform.device_name = &PlatformCallbacks::device_name;
  plugin::check_host(host.register_platform(host.host_ctx, &platform),
                     "registering the " + description.platform + " platform");
}

// The installed backends by host table. Never destroyed (see install).
struct InstalledBackends {
  std::mutex mutex;
  std::map<const jw_host_api*, InstalledBackend> by_host;
};
InstalledBackends& installed_backends() {
  static auto* const installed = new InstalledBackends();
  return *installed;
}

// Registers `backend` with `host` and keeps it until unregister_all or
// shutdown.
void keep_backend(std::unique_ptr<GpuBackend> backend,
                  const jw_host_api& host) {
  InstalledBackends& installed = installed_backends();
  {
    std::lock_guard<std::mutex> lock(installed.mutex);
    if (installed.by_host.count(&host) != 0) {
      throw plugin::PluginError(
          JW_ERROR_ALREADY_EXISTS,
          backend->description().plugin_name +
              ": register_all called twice with one host table");
    }
  }
  InstalledBackend made{std::move(backend), {}};
  // Registration calls into the host: not under the lock.
  register_with(made, host);
  std::lock_guard<std::mutex> lock(installed.mutex);
  installed.by_host.emplace(&host, std::move(made));
}

// One runtime is done with its backend (its own compiler, driver and
// modules); the others keep theirs.
void unregister_all(const jw_host_api* host) {
  static_cast<void>(plugin::guarded([&] {
    if (host == nullptr) return;
    InstalledBackend uninstalled;
    {
      InstalledBackends& installed = installed_backends();
      std::lock_guard<std::mutex> lock(installed.mutex);
      const auto found = installed.by_host.find(host);
      if (found == installed.by_host.end()) return;
      uninstalled = std::move(found->second);
      installed.by_host.erase(found);
    }
    uninstalled.backend->shutdown();
  }));
  plugin::host_tables().detach(host);
}

void shutdown() {
  static_cast<void>(plugin::guarded([] {
    std::map<const jw_host_api*, InstalledBackend> backends;
    {
      InstalledBackends& installed = installed_backends();
      std::lock_guard<std::mutex> lock(installed.mutex);
      backends.swap(installed.by_host);
    }
    for (auto& [host, installed] : backends) installed.backend->shutdown();
  }));
  plugin::host_tables().detach_all();
}

}  // namespace

void install_backend(OpenedBackend opened, const jw_host_api& host) {
  const std::string& plugin_name = opened.description.plugin_name;
  if (opened.compiler == nullptr && !opened.driver->library_available()) {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        plugin_name + " can neither compile nor launch: " +
            opened.compiler_missing + "; " + opened.driver->status().detail);
  }
  const std::string summary = plugin_name + ": " + opened.compiler_summary +
                              "; " + opened.driver->status().detail;
  keep_backend(std::make_unique<GpuBackend>(std::move(opened.description),
                                            std::move(opened.compiler),
                                            std::move(opened.compiler_missing),
                                            std::move(opened.driver)),
               host);
  plugin::log(JW_LOG_INFO, summary);
}

jw_status implement_source_kernel(const jw_host_api* host,
                                  const jw_source_kernel* kernel,
                                  const jw_kernel_schema** out_schema,
                                  jw_kernel_impl* out) {
  return plugin::guarded([&] {
    require_argument(host != nullptr && kernel != nullptr && out != nullptr,
                     "the host table, the kernel and the out implementation");
    GpuBackend* backend = nullptr;
    {
      InstalledBackends& installed = installed_backends();
      std::lock_guard<std::mutex> lock(installed.mutex);
      const auto found = installed.by_host.find(host);
      if (found != installed.by_host.end()) {
        backend = found->second.backend.get();
      }
    }
    if (backend == nullptr) {
      throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                                "implement_source_kernel: this host table "
                                "has no registered backend");
    }
    *out = source_kernel_impl(*backend, *kernel, out_schema);
  });
}

jw_plugin_api gpu_plugin_api(const char* name, const char* version,
                             jw_status (*register_all)(const jw_host_api*)) {
  // Zero first, then the fields a GPU plugin sets: compilers then do not
  // warn about missing initializers either.
  jw_plugin_api api{};
  api.struct_size = sizeof(jw_plugin_api);
  api.name = name;
  api.version = version;
  api.register_all = register_all;
  api.shutdown = &shutdown;
  api.unregister_all = &unregister_all;
  api.implement_source_kernel = &implement_source_kernel;
  return api;
}

}  // namespace jitwarm::gpu
