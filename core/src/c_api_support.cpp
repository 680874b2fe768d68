// What the C entry points share (c_api_support.hpp): argument checks, the
// one reading of jw_runtime_options, and the strings the core hands out
// (jitwarm.h, "Ownership (R5)").
#include "c_api_support.hpp"

#include <chrono>
#include <cstdlib>
#include <new>

#include "c_api_trust.hpp"

namespace jitwarm::detail::c_api {
namespace {

struct OwnedStringList : jw_string_list {
  std::vector<std::string> strings;
  std::vector<const char*> pointers;
};

}  // namespace

void require_all(std::initializer_list<Required> arguments) {
  for (const Required& argument : arguments) {
    if (argument.pointer == nullptr && !argument.may_be_null)
      fail(JW_ERROR_INVALID_ARGUMENT, "{} is null", argument.name);
  }
}

RuntimeOptions runtime_options_of(const jw_runtime_options* options) {
  const jw_runtime_options c = read_sized(options, "runtime options");
  RuntimeOptions o;
  if (c.cache_dir != nullptr) o.cache_dir = c.cache_dir;
  o.jit_monitor = monitor_mode_of(c.jit_monitor, /*allow_default=*/true);
  if (c.jit_record_path != nullptr) o.jit_record_path = c.jit_record_path;
  if (c.log != nullptr) {
    o.log = [fn = c.log, ctx = c.log_ctx](jw_log_level level,
                                          const std::string& message) {
      fn(ctx, level, message.c_str());
    };
  }
  o.no_cache_dir = c.no_cache_dir != 0;
  if (c.system_cache_dir != nullptr) o.system_cache_dir = c.system_cache_dir;
  if (c.cache_max_bytes != 0) o.cache_max_bytes = c.cache_max_bytes;
  if (c.remote_cache != nullptr) o.remote_cache = c.remote_cache;
  o.no_remote_cache = c.no_remote_cache != 0;
  o.remote_timeout = std::chrono::milliseconds(c.remote_timeout_ms);
  apply_trust_options(c, o);
  return o;
}

std::optional<JitMonitorMode> monitor_mode_of(const jw_jit_monitor_mode& mode,
                                              bool allow_default) {
  switch (raw_enum(mode)) {
    case JW_JIT_MONITOR_DEFAULT:
      if (allow_default) return std::nullopt;
      break;
    case JW_JIT_MONITOR_OFF: return JitMonitorMode::off;
    case JW_JIT_MONITOR_WARN: return JitMonitorMode::warn;
    case JW_JIT_MONITOR_ERROR: return JitMonitorMode::error;
  }
  fail(JW_ERROR_INVALID_ARGUMENT,
       "unknown JIT monitor mode {} (use JW_JIT_MONITOR_OFF, _WARN or _ERROR)",
       raw_enum(mode));
}

std::vector<CompileKey> compile_keys_of(const jw_compile_key* const* keys,
                                        uint32_t count, const char* what) {
  std::vector<CompileKey> out;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (keys[i] == nullptr)
      fail(JW_ERROR_INVALID_ARGUMENT, "{}[{}] is null", what, i);
    out.push_back(keys[i]->key);
  }
  return out;
}

char* to_c(std::string_view text) {
  auto* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

jw_string_list* to_c(std::vector<std::string> strings) {
  auto list = std::make_unique<OwnedStringList>();
  list->strings = std::move(strings);
  for (const auto& s : list->strings) list->pointers.push_back(s.c_str());
  jw_string_list& c = *list;
  set_header(c);
  c.items = list->pointers.data();
  c.count = static_cast<uint32_t>(list->pointers.size());
  return list.release();
}

}  // namespace jitwarm::detail::c_api

extern "C" {

JITWARM_EXPORT void jw_string_free(char* text) {
  std::free(text);
}

JITWARM_EXPORT void jw_string_list_free(jw_string_list* list) {
  delete static_cast<jitwarm::detail::c_api::OwnedStringList*>(list);
}

}  // extern "C"
