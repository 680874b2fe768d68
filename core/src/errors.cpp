#include "errors.hpp"

namespace jitwarm::detail {
namespace {
thread_local std::string t_last_error;
}  // namespace

void set_last_error(std::string message) {
  t_last_error = std::move(message);
}

void clear_last_error() {
  t_last_error.clear();  // keeps its buffer: no allocation on the launch path
}

const char* last_error() {
  return t_last_error.c_str();
}

void check_plugin_status(jw_status status, std::string_view what) {
  if (status == JW_OK) return;
  std::string detail = t_last_error;
  t_last_error.clear();
  if (detail.empty()) detail = "no detail given";
  throw Error(status,
              fmt::format("{}: {} ({})", what, detail, jw_status_name(status)));
}

jw_text_sink TextCollector::sink() {
  jw_text_sink s{};
  s.struct_size = sizeof(jw_text_sink);
  s.ctx = this;
  s.append = [](void* ctx, const char* text, size_t length) {
    // A plugin calls this: nothing may be thrown into it (out of memory
    // cuts the text short instead).
    try {
      if (text != nullptr)
        static_cast<TextCollector*>(ctx)->text.append(text, length);
    } catch (...) {
    }
  };
  return s;
}

}  // namespace jitwarm::detail

extern "C" {

JITWARM_EXPORT const char* jw_last_error(void) {
  return jitwarm::detail::last_error();
}

JITWARM_EXPORT const char* jw_status_name(jw_status status) {
  switch (status) {
    case JW_OK: return "ok";
    case JW_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case JW_ERROR_NOT_FOUND: return "not found";
    case JW_ERROR_ALREADY_EXISTS: return "already exists";
    case JW_ERROR_UNSUPPORTED: return "unsupported";
    case JW_ERROR_COMPILE_FAILED: return "compile failed";
    case JW_ERROR_LAUNCH_FAILED: return "launch failed";
    case JW_ERROR_NO_DEVICE: return "no device";
    case JW_ERROR_ABI_MISMATCH: return "ABI mismatch";
    case JW_ERROR_OUT_OF_MEMORY: return "out of memory";
    case JW_ERROR_JIT_REFUSED: return "JIT compile refused";
    case JW_ERROR_IO: return "I/O error";
    case JW_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

JITWARM_EXPORT uint32_t jw_abi_version(void) {
  return JITWARM_ABI_VERSION;
}

}  // extern "C"
