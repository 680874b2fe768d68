// scale_cpu.cpp — libjitwarm-example-scale-cpu.so: the CPU implementation of
// the example kernel example.kernels.scale (scale.toml, scale.cu beside
// this file). A kernel from source gets its GPU implementations from its
// descriptor; its CPU implementation is a plugin of its own, like this one,
// and is what `jitwarm conformance` compares GPU results with (the oracle;
// docs/kernel-descriptors.md, "Conformance cases").
//
// It defines no schema: the descriptor does, when a kernel directory holding
// it is loaded; until then the registry keeps this implementation pending.
// It reads its arguments in schema order (out, x, n, factor), and the core
// has validated them against the schema before the call.
#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin.hpp>

#include <string>
#include <string_view>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace example_scale {
namespace {

using jitwarm::plugin::guarded;
using jitwarm::plugin::PluginError;

constexpr const char* kKernel = "example.kernels.scale";
constexpr const char* kImplName = "example-scale-cpu";

[[noreturn]] void invalid(const std::string& message) {
  throw PluginError(JW_ERROR_INVALID_ARGUMENT, "example-scale-cpu: " + message);
}

// A host function compiles nothing: the artifact only names it
// (JW_IMPL_COMPILES_NOTHING keeps it out of compile counts and the JIT
// monitor).
jw_status compile(void*, const jw_compile_key_view* key,
                  const jw_artifact_sink* out) {
  return guarded([&] {
    if (key == nullptr || out == nullptr || out->emit == nullptr) {
      invalid("compile: null key or sink");
    }
    jw_artifact_desc artifact{};
    artifact.struct_size = sizeof artifact;
    artifact.binary = kImplName;
    artifact.binary_size = std::string_view(kImplName).size();
    artifact.format = "host-function";
    artifact.entry_point = kImplName;
    const jw_status status = out->emit(out->ctx, &artifact);
    if (status != JW_OK) throw PluginError(status, "emit failed");
  });
}

// out[i] = x[i] * factor for i in [0, n): float32, as the schema allows.
jw_status launch(void*, const jw_artifact_view*, const jw_arg_value* args,
                 uint32_t num_args, void*) {
  return guarded([&] {
    if (num_args != 4 || args[0].kind != JW_VALUE_TENSOR ||
        args[1].kind != JW_VALUE_TENSOR || args[2].kind != JW_VALUE_SCALAR ||
        args[3].kind != JW_VALUE_SCALAR) {
      invalid("expected (out, x, n, factor)");
    }
    auto* out = static_cast<float*>(args[0].value.tensor->data);
    const auto* x = static_cast<const float*>(args[1].value.tensor->data);
    const jw_scalar& n = args[2].value.scalar;
    const int64_t count =
        n.kind == JW_SCALAR_UINT ? static_cast<int64_t>(n.value.u) : n.value.i;
    const jw_scalar& f = args[3].value.scalar;
    const auto factor = static_cast<float>(
        f.kind == JW_SCALAR_FLOAT ? f.value.f : static_cast<double>(f.value.i));
    for (int64_t i = 0; i < count; ++i) out[i] = x[i] * factor;
  });
}

jw_status register_all(const jw_host_api* host) {
  return jitwarm::plugin::register_with_host(host, kImplName, [&] {
    jw_kernel_impl impl{};
    impl.struct_size = sizeof impl;
    impl.kernel_name = kKernel;
    impl.platform = "cpu";
    impl.impl_name = kImplName;
    impl.compile = &compile;
    impl.launch = &launch;
    impl.flags = JW_IMPL_COMPILES_NOTHING;
    jitwarm::plugin::check_host(host->register_impl(host->host_ctx, &impl),
                                "register_impl");
  });
}

void unregister_all(const jw_host_api* host) {
  jitwarm::plugin::host_tables().detach(host);
}

const jw_plugin_api kPlugin = [] {
  jw_plugin_api api{};
  api.struct_size = sizeof(jw_plugin_api);
  api.name = "jitwarm-example-scale-cpu";
  api.version = "0.1.0";
  api.register_all = &register_all;
  api.unregister_all = &unregister_all;
  return api;
}();

}  // namespace
}  // namespace example_scale

extern "C" JITWARM_EXPORT jw_status
jitwarm_plugin_negotiate(jw_plugin_negotiation* negotiation) {
  return jitwarm::plugin::answer_negotiation(negotiation,
                                             &example_scale::kPlugin);
}
