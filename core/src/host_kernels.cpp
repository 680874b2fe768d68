// register_kernels: host overrides, all or nothing, removed by the handle;
// and host-function kernels (a C++ function as an implementation), which
// compile nothing (JW_IMPL_COMPILES_NOTHING), so the JIT monitor lets them
// launch after seal.
#include <jitwarm/jitwarm.hpp>

#include "errors.hpp"
#include "host_kernels.hpp"

namespace jitwarm::detail {
namespace {

struct HostKernelState {
  HostKernel kernel;
};

jw_kernel_impl host_kernel_impl(const std::string& kernel_name,
                                HostKernelState* state) {
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(impl);
  impl.kernel_name = kernel_name.c_str();
  impl.platform = state->kernel.platform.c_str();
  impl.impl_name = state->kernel.impl_name.c_str();
  impl.user_data = state;
  impl.flags = JW_IMPL_COMPILES_NOTHING;
  impl.compile = [](void* user, const jw_compile_key_view*,
                    const jw_artifact_sink* out) {
    // A host function has nothing to compile; its artifact names it.
    auto* s = static_cast<HostKernelState*>(user);
    jw_artifact_desc a{};
    a.struct_size = sizeof(a);
    a.binary = s->kernel.impl_name.data();
    a.binary_size = s->kernel.impl_name.size();
    a.format = "host-function";
    a.entry_point = s->kernel.impl_name.c_str();
    return out->emit(out->ctx, &a);
  };
  impl.launch = [](void* user, const jw_artifact_view*,
                   const jw_arg_value* args, uint32_t n, void* stream) {
    return c_guard([&] {
      static_cast<HostKernelState*>(user)->kernel.launch(
          std::span<const jw_arg_value>(args, n), stream);
    });
  };
  impl.destroy = [](void* user) { delete static_cast<HostKernelState*>(user); };
  return impl;
}

// What the host said, without a "host" prefix of its own, so the origin
// reads "host: <what it said>" once however it was spelled.
std::string_view host_words(std::string_view origin) {
  const auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == ':'))
      s.remove_prefix(1);
    return s;
  };
  origin = trim(origin);
  if (origin.rfind("host", 0) == 0) {
    const std::string_view rest = origin.substr(4);
    if (rest.empty() || rest.front() == ':' || rest.front() == ' ')
      origin = trim(rest);
  }
  return origin;
}

}  // namespace

std::vector<uint64_t> register_host_kernels(
    Registry& registry, std::vector<KernelOverride> overrides,
    const std::string& origin) {
  const std::string_view said = host_words(origin);
  const std::string full_origin =
      said.empty() ? std::string("host") : fmt::format("host: {}", said);
  const std::string default_impl_name =
      said.empty() ? std::string("host") : fmt::format("host:{}", said);
  std::vector<std::shared_ptr<ImplRecord>> records;
  for (auto& o : overrides) {
    if (o.impl.has_value() == o.host.has_value()) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "register_kernels: override of '{}' needs exactly one of impl or "
           "host",
           o.kernel_name);
    }
    // A full or a short name, as every API that names a kernel takes it.
    if (o.impl && o.impl->kernel_name != nullptr) {
      o.kernel_name = o.impl->kernel_name;
    }
    try {
      o.kernel_name = registry.resolve(o.kernel_name)->name;
    } catch (const Error& e) {
      fail(e.status(), "register_kernels: {}", e.what());
    }
    if (o.impl) {
      jw_kernel_impl c = *o.impl;
      c.kernel_name = o.kernel_name.c_str();
      records.push_back(ImplRecord::from_c(c, full_origin, nullptr));
    } else {
      if (!o.host->launch) {
        fail(JW_ERROR_INVALID_ARGUMENT,
             "register_kernels: '{}' has no launch function", o.kernel_name);
      }
      auto* state = new HostKernelState{std::move(*o.host)};
      if (state->kernel.impl_name.empty())
        state->kernel.impl_name = default_impl_name;
      std::vector<const char*> names;
      for (const auto& n : state->kernel.param_names)
        names.push_back(n.c_str());
      jw_kernel_impl c = host_kernel_impl(o.kernel_name, state);
      c.param_names = names.empty() ? nullptr : names.data();
      c.num_param_names = static_cast<uint32_t>(names.size());
      try {
        records.push_back(ImplRecord::from_c(c, full_origin, nullptr));
      } catch (...) {
        delete state;
        throw;
      }
    }
  }
  return registry.add_batch(std::move(records));
}

}  // namespace jitwarm::detail
