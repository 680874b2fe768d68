// The guards around calls into plugin code (see plugin_calls.hpp).
#include "plugin_calls.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <new>
#include <typeinfo>

#include "errors.hpp"
#include "registry.hpp"

namespace jitwarm::detail {
namespace {

std::string demangled(const char* mangled) {
  if (mangled == nullptr) return "(unknown type)";
  int status = 0;
  char* name = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || name == nullptr) return mangled;
  std::string text(name);
  std::free(name);
  return text;
}

// What a throw from each callback becomes: the status the callback would
// return for a failure of its own, so callers handle it as they handle
// that failure.
constexpr jw_status kCompileThrew = JW_ERROR_COMPILE_FAILED;
constexpr jw_status kLaunchThrew = JW_ERROR_LAUNCH_FAILED;
constexpr jw_status kDiagnosticsThrew = JW_ERROR_UNSUPPORTED;
constexpr jw_status kDeviceQueryThrew = JW_ERROR_NO_DEVICE;
constexpr jw_status kMemoryServiceThrew = JW_ERROR_LAUNCH_FAILED;

// The record every guarded callback of an implementation is given as its
// user_data.
const ImplRecord& impl_record_of(void* user_data) {
  return *static_cast<const ImplRecord*>(user_data);
}

std::string impl_who(const ImplRecord& impl) {
  return fmt::format("implementation '{}' of {} on {} (from {})",
                     impl.impl_name, impl.kernel_name, impl.platform,
                     impl.origin);
}

// The implementation's who-text is built only when it threw.
template <typename Call>
jw_status guarded_impl_call(const ImplRecord& impl, const char* what,
                            jw_status on_throw, Call&& call) noexcept {
  try {
    return call();
  } catch (...) {
    std::string who;
    try {
      who = impl_who(impl);
    } catch (...) {
      return JW_ERROR_OUT_OF_MEMORY;
    }
    return plugin_threw(who, what, on_throw);
  }
}

jw_status impl_compile(void* user_data, const jw_compile_key_view* key,
                       const jw_artifact_sink* out) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "compile", kCompileThrew, [&] {
    return impl.plugin.compile(impl.plugin.user_data, key, out);
  });
}

jw_status impl_compile_batch(void* user_data,
                             const jw_compile_key_view* const* keys,
                             uint32_t num_keys,
                             const jw_batch_artifact_sink* out) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "compile_batch", kCompileThrew, [&] {
    return impl.plugin.compile_batch(impl.plugin.user_data, keys, num_keys,
                                     out);
  });
}

jw_status impl_preferred_batch_size(void* user_data, const char* target,
                                    uint32_t* out_size) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "preferred_batch_size", kDiagnosticsThrew,
                           [&] {
                             return impl.plugin.preferred_batch_size(
                                 impl.plugin.user_data, target, out_size);
                           });
}

jw_status impl_tune_candidates(void* user_data, const jw_compile_key_view* key,
                               const jw_tune_config_sink* out) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "tune_candidates", kDiagnosticsThrew, [&] {
    return impl.plugin.tune_candidates(impl.plugin.user_data, key, out);
  });
}

jw_status impl_launch(void* user_data, const jw_artifact_view* artifact,
                      const jw_arg_value* args, uint32_t num_args,
                      void* stream) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "launch", kLaunchThrew, [&] {
    return impl.plugin.launch(impl.plugin.user_data, artifact, args, num_args,
                              stream);
  });
}

jw_status impl_describe(void* user_data, const jw_compile_key_view* key,
                        const jw_text_sink* out) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "describe", kDiagnosticsThrew, [&] {
    return impl.plugin.describe(impl.plugin.user_data, key, out);
  });
}

jw_status impl_fingerprint(void* user_data, const jw_compile_key_view* key,
                           const jw_text_sink* out) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "fingerprint", kDiagnosticsThrew, [&] {
    return impl.plugin.fingerprint(impl.plugin.user_data, key, out);
  });
}

jw_status impl_prepare(void* user_data, const jw_artifact_view* artifact,
                       void** out_prepared) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "prepare", kLaunchThrew, [&] {
    return impl.plugin.prepare(impl.plugin.user_data, artifact, out_prepared);
  });
}

jw_status impl_launch_prepared(void* user_data, void* prepared,
                               const jw_arg_value* args, uint32_t num_args,
                               void* stream) {
  const ImplRecord& impl = impl_record_of(user_data);
  return guarded_impl_call(impl, "launch_prepared", kLaunchThrew, [&] {
    return impl.plugin.launch_prepared(impl.plugin.user_data, prepared, args,
                                       num_args, stream);
  });
}

void impl_release_prepared(void* user_data, void* prepared) {
  const ImplRecord& impl = impl_record_of(user_data);
  try {
    impl.plugin.release_prepared(impl.plugin.user_data, prepared);
  } catch (...) {
    try {
      log_plugin_throw(impl.logger, impl_who(impl), "release_prepared");
    } catch (...) {
      // Out of memory while describing it: nothing more can be said.
    }
  }
}

void impl_destroy(void* user_data) {
  const ImplRecord& impl = impl_record_of(user_data);
  try {
    impl.plugin.destroy(impl.plugin.user_data);
  } catch (...) {
    try {
      log_plugin_throw(impl.logger, impl_who(impl), "destroy");
    } catch (...) {
      // Out of memory while describing it: nothing more can be said.
    }
  }
}

const GuardedPlatform& platform_of(void* user_data) {
  return *static_cast<const GuardedPlatform*>(user_data);
}

template <typename Call>
jw_status guarded_platform_call(void* user_data, const char* what,
                                jw_status on_throw, Call&& call) noexcept {
  const GuardedPlatform& platform = platform_of(user_data);
  try {
    return call(platform.plugin);
  } catch (...) {
    std::string who;
    try {
      who =
          fmt::format("platform {} (from {})", platform.name, platform.origin);
    } catch (...) {
      return JW_ERROR_OUT_OF_MEMORY;
    }
    return plugin_threw(who, what, on_throw);
  }
}

jw_status platform_capabilities(void* user_data, uint32_t* out_flags,
                                const jw_text_sink* detail) {
  return guarded_platform_call(user_data, "capabilities", kDeviceQueryThrew,
                               [&](const jw_platform_desc& p) {
                                 return p.capabilities(p.user_data, out_flags,
                                                       detail);
                               });
}

jw_status platform_device_count(void* user_data, int32_t* out_count) {
  return guarded_platform_call(user_data, "device_count", kDeviceQueryThrew,
                               [&](const jw_platform_desc& p) {
                                 return p.device_count(p.user_data, out_count);
                               });
}

jw_status platform_device_target(void* user_data, int32_t device,
                                 const jw_text_sink* out) {
  return guarded_platform_call(user_data, "device_target", kDeviceQueryThrew,
                               [&](const jw_platform_desc& p) {
                                 return p.device_target(p.user_data, device,
                                                        out);
                               });
}

jw_status platform_allocate(void* user_data, int32_t device, size_t bytes,
                            void** out_ptr) {
  return guarded_platform_call(user_data, "allocate", kMemoryServiceThrew,
                               [&](const jw_platform_desc& p) {
                                 return p.allocate(p.user_data, device, bytes,
                                                   out_ptr);
                               });
}

jw_status platform_free_memory(void* user_data, int32_t device, void* ptr) {
  return guarded_platform_call(user_data, "free_memory", kMemoryServiceThrew,
                               [&](const jw_platform_desc& p) {
                                 return p.free_memory(p.user_data, device, ptr);
                               });
}

jw_status platform_copy(void* user_data, int32_t device, void* dst,
                        const void* src, size_t bytes, jw_copy_direction dir,
                        void* stream) {
  return guarded_platform_call(
      user_data, "copy", kMemoryServiceThrew, [&](const jw_platform_desc& p) {
        return p.copy(p.user_data, device, dst, src, bytes, dir, stream);
      });
}

jw_status platform_synchronize(void* user_data, int32_t device, void* stream) {
  return guarded_platform_call(user_data, "synchronize", kMemoryServiceThrew,
                               [&](const jw_platform_desc& p) {
                                 return p.synchronize(p.user_data, device,
                                                      stream);
                               });
}

jw_status platform_device_name(void* user_data, int32_t device,
                               const jw_text_sink* out) {
  return guarded_platform_call(user_data, "device_name", kDeviceQueryThrew,
                               [&](const jw_platform_desc& p) {
                                 return p.device_name(p.user_data, device, out);
                               });
}

}  // namespace

std::string current_exception_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    return fmt::format("{}: {}", demangled(typeid(e).name()), e.what());
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return "an exception of type " + (type != nullptr
                                          ? demangled(type->name())
                                          : std::string("(unknown)"));
  }
}

jw_status plugin_threw(std::string_view who, std::string_view what,
                       jw_status status) noexcept {
  try {
    const bool out_of_memory = [] {
      try {
        throw;
      } catch (const std::bad_alloc&) {
        return true;
      } catch (...) {
        return false;
      }
    }();
    set_last_error(fmt::format(
        "{}: {} threw {} (a plugin must not throw across the C ABI; "
        "docs/plugin-abi.md P14)",
        who, what, current_exception_text()));
    return out_of_memory ? JW_ERROR_OUT_OF_MEMORY : status;
  } catch (...) {
    return JW_ERROR_OUT_OF_MEMORY;
  }
}

void log_plugin_throw(const Logger* logger, std::string_view who,
                      std::string_view what) noexcept {
  try {
    const std::string text = fmt::format(
        "{}: {} threw {}; ignored (a plugin must not throw across "
        "the C ABI; docs/plugin-abi.md P14)",
        who, what, current_exception_text());
    if (logger != nullptr) logger->log(JW_LOG_WARNING, text);
  } catch (...) {
    // Out of memory, or the host's log sink threw: nothing more to do.
  }
}

jw_kernel_impl guarded_impl_table(const ImplRecord& record) {
  jw_kernel_impl c = record.plugin;
  c.user_data = const_cast<ImplRecord*>(&record);
  c.compile = record.plugin.compile != nullptr ? &impl_compile : nullptr;
  c.compile_batch =
      record.plugin.compile_batch != nullptr ? &impl_compile_batch : nullptr;
  c.preferred_batch_size = record.plugin.preferred_batch_size != nullptr
                               ? &impl_preferred_batch_size
                               : nullptr;
  c.tune_candidates = record.plugin.tune_candidates != nullptr
                          ? &impl_tune_candidates
                          : nullptr;
  c.launch = record.plugin.launch != nullptr ? &impl_launch : nullptr;
  c.describe = record.plugin.describe != nullptr ? &impl_describe : nullptr;
  c.fingerprint =
      record.plugin.fingerprint != nullptr ? &impl_fingerprint : nullptr;
  c.destroy = record.plugin.destroy != nullptr ? &impl_destroy : nullptr;
  // The three prepare callbacks come together (ImplRecord::from_c).
  const bool prepares = record.plugin.prepare != nullptr;
  c.prepare = prepares ? &impl_prepare : nullptr;
  c.launch_prepared = prepares ? &impl_launch_prepared : nullptr;
  c.release_prepared = prepares ? &impl_release_prepared : nullptr;
  return c;
}

jw_platform_desc guarded_platform_table(const GuardedPlatform& guarded) {
  const jw_platform_desc& p = guarded.plugin;
  jw_platform_desc c = p;
  c.user_data = const_cast<GuardedPlatform*>(&guarded);
  const auto wrap = [](auto original, auto trampoline) {
    return original != nullptr ? trampoline : nullptr;
  };
  c.capabilities = wrap(p.capabilities, &platform_capabilities);
  c.device_count = wrap(p.device_count, &platform_device_count);
  c.device_target = wrap(p.device_target, &platform_device_target);
  c.allocate = wrap(p.allocate, &platform_allocate);
  c.free_memory = wrap(p.free_memory, &platform_free_memory);
  c.copy = wrap(p.copy, &platform_copy);
  c.synchronize = wrap(p.synchronize, &platform_synchronize);
  c.device_name = wrap(p.device_name, &platform_device_name);
  return c;
}

}  // namespace jitwarm::detail
