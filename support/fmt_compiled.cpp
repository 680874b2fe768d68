// fmt's compiled part, for builds that link fmt in
// (-Dstatic_dependencies=true, the wheel): what Debian's libfmt.so holds,
// which Debian ships no static archive of. Every other file compiles against
// fmt's headers exactly as in a build that links libfmt.so, so the wheel's
// build reuses that build's objects through ccache; FMT_HEADER_ONLY would
// instead compile fmt's formatting code into each of them (3.5 times the
// compile time of a file that formats, measured on GCC 12). format-inl.h
// defines fmt's out-of-line functions here, once; the templates whose
// definitions only it has are instantiated below for what fmt's own library
// instantiates them for (its src/format.cc). Built with hidden visibility
// (meson.build): these definitions never leave the binary that links them.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept
    -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept
    -> dragonbox::decimal_fp<double>;

template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;

template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view,
                         basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                         locale_ref);

template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> wchar_t;
template void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
