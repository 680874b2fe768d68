// toml++ configured for untrusted input. Include this instead of
// <toml++/toml.h>, in one translation unit per binary (toml++ is used
// header-only).
//
// toml++ 3.3 checks its parser's own expectations with TOML_ASSERT, and some
// malformed documents break them ("[\x01", "a = [}"). By default a broken
// check is an assert() that aborts the process, and under NDEBUG it becomes
// an assumption the optimizer may exploit (__builtin_assume on clang:
// undefined behaviour). Here a broken check is only noted: the parser goes
// on and reports the document's error itself, with its line and column, as
// it does in GCC release builds. parse_untrusted_toml() refuses a document
// whose parse broke a check even if the parser then accepted it, so such a
// document is an error either way, never an abort. The fuzz targets
// (fuzz/) run the parser this way under ASan and UBSan.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

namespace jitwarm::detail {

// The first toml++ check that broke during the current parse on this
// thread, or nullptr.
inline thread_local const char* toml_broken_check = nullptr;

inline void note_broken_toml_check(const char* check) noexcept {
  if (toml_broken_check == nullptr) toml_broken_check = check;
}

}  // namespace jitwarm::detail

// NDEBUG would replace this TOML_ASSERT by an assumption (see above), so
// toml++ is included with it undefined.
#pragma push_macro("NDEBUG")
#undef NDEBUG
#define TOML_ASSERT(expr)        \
  ((expr) ? static_cast<void>(0) \
          : ::jitwarm::detail::note_broken_toml_check(#expr))
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>
#pragma pop_macro("NDEBUG")

namespace jitwarm::detail {

// toml::parse, plus the refusal described above. Throws toml::parse_error.
inline toml::table parse_untrusted_toml(std::string_view text,
                                        std::string_view source_name) {
  toml_broken_check = nullptr;
  toml::table table = toml::parse(text, source_name);
  if (const char* check = std::exchange(toml_broken_check, nullptr)) {
    const std::string description =
        "malformed TOML that the parser could not place (its check '" +
        std::string(check) + "' failed)";
    throw toml::parse_error(description.c_str(), toml::source_position{0, 0});
  }
  return table;
}

// "file:line:column: what" (just "file: what" when the parser could not say
// where).
inline std::string toml_error_text(std::string_view source_name,
                                   const toml::parse_error& e) {
  const toml::source_position& at = e.source().begin;
  if (at.line == 0) return fmt::format("{}: {}", source_name, e.description());
  return fmt::format("{}:{}:{}: {}", source_name, at.line, at.column,
                     e.description());
}

}  // namespace jitwarm::detail
