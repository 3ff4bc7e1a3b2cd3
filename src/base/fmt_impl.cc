// fmt's implementation, compiled once for the whole launcher.
//
// Debian's libfmt-dev ships fmt as a shared library, which the launcher does not link (its
// start-up is on every job's critical path: the top-level CMakeLists.txt), and as headers.
// FMT_HEADER_ONLY made every file that formats compile fmt's implementation again (3.3 s a file
// at -O2 -g here). Without it, fmt's headers only declare that implementation and this file
// defines it: the functions of format-inl.h, and the templates that format.h declares without
// defining, for the character types the launcher formats. A missing one is a link error, since
// nothing links libfmt.so to fall back on.
#include <fmt/format-inl.h>

#include <locale>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;

template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<buffer_context<char>>,
                         locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
