// plugin_entry.cpp — libjitwarm-reference-cpu.so's one exported symbol,
// jitwarm_plugin_negotiate, and the C callbacks behind it: the handshake,
// register_all (ten schemas, ten implementations, the "cpu" platform) and
// the per-kernel compile / launch / describe / fingerprint.
//
// Every callback runs its body through plugin::guarded, so no exception
// crosses the C ABI; the C++ work is in reference_cpu.cpp.
#include <jitwarm/plugin.hpp>

#include <cstddef>

#include "cpu_platform.hpp"
#include "kernel_definitions.hpp"
#include "kernel_set.hpp"
#include "reference_cpu.hpp"

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace jitwarm::reference_cpu {
namespace {

using plugin::guarded;
using plugin::PluginError;

const KernelDefinition& definition_of(void* user_data) {
  if (user_data == nullptr) {
    throw PluginError(JW_ERROR_INTERNAL,
                      "reference-cpu: implementation called without its "
                      "kernel (user_data is null)");
  }
  return *static_cast<const KernelDefinition*>(user_data);
}

template <typename T>
const T& required(const T* pointer, const char* what) {
  if (pointer == nullptr) {
    throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                      concat("reference-cpu: ", what, " is null"));
  }
  return *pointer;
}

const void* required(const void* pointer, const char* what) {
  if (pointer == nullptr) {
    throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                      concat("reference-cpu: ", what, " is null"));
  }
  return pointer;
}

void** required_out(void** out) {
  if (out == nullptr) {
    throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                      "reference-cpu: prepare: the out pointer is null");
  }
  return out;
}

jw_status compile(void* user_data, const jw_compile_key_view* key,
                  const jw_artifact_sink* out) {
  jw_status emit_status = JW_OK;
  const jw_status status = guarded([&] {
    const KernelDefinition& definition = definition_of(user_data);
    const jw_artifact_sink& sink = required(out, "compile: artifact sink");
    if (sink.emit == nullptr) {
      throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                        "reference-cpu: compile: the sink has no emit");
    }
    const CompiledInstantiation compiled = compile_instantiation(
        definition.kernel_name, required(key, "compile: key"));
    const std::string format(kArtifactFormat);
    jw_artifact_desc artifact{};
    artifact.struct_size = sizeof(jw_artifact_desc);
    artifact.binary = compiled.record.data();
    artifact.binary_size = compiled.record.size();
    artifact.format = format.c_str();
    artifact.entry_point = compiled.entry_point.c_str();
    // The core copies the artifact; when it refuses, its own message stays.
    emit_status = sink.emit(sink.ctx, &artifact);
  });
  return status != JW_OK ? status : emit_status;
}

jw_status launch(void* user_data, const jw_artifact_view* artifact,
                 const jw_arg_value* args, uint32_t num_args,
                 void* /*stream: the CPU runs synchronously*/) {
  return guarded([&] {
    const KernelDefinition& definition = definition_of(user_data);
    if (args == nullptr && num_args != 0) {
      throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                        concat("reference-cpu: launch: ", num_args,
                               " arguments but the array is null"));
    }
    launch_instantiation(definition.kernel_name,
                         required(artifact, "launch: artifact"),
                         std::span<const jw_arg_value>(args, num_args));
  });
}

jw_status prepare(void* user_data, const jw_artifact_view* artifact,
                  void** out_prepared) {
  return guarded([&] {
    const KernelDefinition& definition = definition_of(user_data);
    const Instantiation& instantiation = prepare_instantiation(
        definition.kernel_name, required(artifact, "prepare: artifact"));
    // Instantiations are static: nothing to release.
    *required_out(out_prepared) = const_cast<Instantiation*>(&instantiation);
  });
}

jw_status launch_prepared(void* user_data, void* prepared,
                          const jw_arg_value* args, uint32_t num_args,
                          void* /*stream: the CPU runs synchronously*/) {
  return guarded([&] {
    const KernelDefinition& definition = definition_of(user_data);
    run_prepared(definition,
                 *static_cast<const Instantiation*>(
                     required(prepared, "launch_prepared: prepared launch")),
                 std::span<const jw_arg_value>(args, num_args));
  });
}

void release_prepared(void*, void*) {}

jw_status describe(void* user_data, const jw_compile_key_view* key,
                   const jw_text_sink* out) {
  return guarded([&] {
    const KernelDefinition& definition = definition_of(user_data);
    plugin::append(out, describe_key(definition.kernel_name,
                                     required(key, "describe: key")));
  });
}

jw_status fingerprint(void* user_data, const jw_compile_key_view* key,
                      const jw_text_sink* out) {
  return guarded([&] {
    const KernelDefinition& definition = definition_of(user_data);
    plugin::append(out, fingerprint_key(definition.kernel_name,
                                        required(key, "fingerprint: key")));
  });
}

// A host call failed: say which, through the host's log, and keep the
// host's own error detail (it knows why) by returning its status as is.
void log_host_failure(std::string_view call, std::string_view subject,
                      jw_status status) {
  plugin::log(JW_LOG_ERROR,
              concat(kPluginName, ": host ", call, " for '", subject,
                     "' failed with status ", static_cast<int>(status)));
}

jw_status register_all(const jw_host_api* host) {
  jw_status host_status = JW_OK;
  const jw_status status = plugin::register_with_host(host, kPluginName, [&] {
    for (const jw_kernel_schema& schema : kernel_set::schemas()) {
      host_status = host->define_schema(host->host_ctx, &schema);
      if (host_status != JW_OK) {
        log_host_failure("define_schema", schema.name, host_status);
        return;
      }
    }
    const std::string platform(kPlatformName);
    const std::string impl_name(kImplName);
    for (const KernelDefinition* definition : kernel_definitions()) {
      const std::string kernel_name(definition->kernel_name);
      jw_kernel_impl impl{};
      impl.struct_size = sizeof(jw_kernel_impl);
      impl.kernel_name = kernel_name.c_str();
      impl.platform = platform.c_str();
      impl.impl_name = impl_name.c_str();
      impl.param_names = nullptr;  // positional, in schema order
      impl.num_param_names = 0;
      // The definitions are static: valid for the life of the library, and
      // shared by every runtime the plugin registers with.
      impl.user_data = const_cast<KernelDefinition*>(definition);
      impl.compile = &compile;
      impl.launch = &launch;
      impl.describe = &describe;
      impl.fingerprint = &fingerprint;
      impl.destroy = nullptr;
      impl.prepare = &prepare;
      impl.launch_prepared = &launch_prepared;
      impl.release_prepared = &release_prepared;
      host_status = host->register_impl(host->host_ctx, &impl);
      if (host_status != JW_OK) {
        log_host_failure("register_impl", kernel_name, host_status);
        return;
      }
    }
    const jw_platform_desc cpu = cpu_platform_desc();
    host_status = host->register_platform(host->host_ctx, &cpu);
    if (host_status != JW_OK) {
      log_host_failure("register_platform", "cpu", host_status);
    }
  });
  if (status != JW_OK) return status;
  // The host refused something: keep its status and its own error detail.
  if (host_status != JW_OK) plugin::host_tables().detach(host);
  return host_status;
}

// Everything registered is static: a runtime's end only detaches its table.
void unregister_all(const jw_host_api* host) {
  plugin::host_tables().detach(host);
}

void shutdown() {
  plugin::host_tables().detach_all();
}

// Zero first, then the fields this plugin sets: fields appended to the ABI
// later stay zero (and compilers do not warn about missing initializers).
const jw_plugin_api kPluginApi = [] {
  jw_plugin_api api{};
  api.struct_size = sizeof(jw_plugin_api);
  api.name = kPluginName.data();
  api.version = JITWARM_REFERENCE_CPU_VERSION;
  api.register_all = &register_all;
  api.shutdown = &shutdown;
  api.unregister_all = &unregister_all;
  return api;
}();

}  // namespace
}  // namespace jitwarm::reference_cpu

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  return jitwarm::plugin::answer_negotiation(
      negotiation, &jitwarm::reference_cpu::kPluginApi);
}
