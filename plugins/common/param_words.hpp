// The words of a descriptor's [[param]] tables (docs/kernel-descriptors.md)
// and their C ABI values, for the two readers of those tables:
//
// - the descriptor reader (kernel_descriptor.cpp), at run time;
// - the kernel set's tables (kernel_set.hpp), which generate_kernel_set.py
//   writes from the built-in descriptors in the same words: param() turns
//   them into a jw_param_desc at compile time, so the tables stay static
//   data, and a word the reader would refuse fails the build.
//
// Kinds and dtypes are the SDK's names (plugin/names.hpp, plugin/dtype.hpp);
// the flag words are here.
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/dtype.hpp>
#include <jitwarm/plugin/names.hpp>

#include <cstdint>
#include <string_view>

namespace jitwarm::param_words {

struct FlagWord {
  const char* word;
  uint32_t flag;
};
inline constexpr FlagWord kFlagWords[] = {
    {"do_not_specialize", JW_PARAM_DO_NOT_SPECIALIZE},
    {"do_not_specialize_on_alignment", JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT},
    {"output", JW_PARAM_OUTPUT},
    {"float64", JW_PARAM_FLOAT64},
    {"contiguous", JW_PARAM_CONTIGUOUS},
    {"inner_contiguous", JW_PARAM_INNER_CONTIGUOUS},
    {"specialize_strides", JW_PARAM_SPECIALIZE_STRIDES},
};

// One [[param]] table as written. Lists (dtypes, flags) are words separated
// by spaces; a key the table leaves out keeps the reader's default.
struct ParamWords {
  const char* name;
  std::string_view kind;
  std::string_view dtypes = "";  // none: any dtype
  int32_t rank = -1;             // any rank
  std::string_view flags = "";
  jw_scalar default_value = {JW_SCALAR_NONE, {0}};  // none: required
  const char* same_dtype_as = nullptr;
};

constexpr jw_scalar int_default(int64_t value) {
  jw_scalar s{JW_SCALAR_INT, {0}};
  s.value.i = value;
  return s;
}
constexpr jw_scalar float_default(double value) {
  jw_scalar s{JW_SCALAR_FLOAT, {0}};
  s.value.f = value;
  return s;
}
constexpr jw_scalar bool_default(bool value) {
  jw_scalar s{JW_SCALAR_BOOL, {0}};
  s.value.i = value ? 1 : 0;
  return s;
}

namespace detail {

// Calls `each` with every space-separated word of `list`.
template <typename Each>
constexpr void for_each_word(std::string_view list, Each each) {
  while (!list.empty()) {
    const std::size_t end = list.find(' ');
    if (end != 0) each(list.substr(0, end));
    if (end == std::string_view::npos) break;
    list.remove_prefix(end + 1);
  }
}

// Not a constant expression: evaluating one of these in param() is the
// compile error that names what was not understood.
inline void unknown_kind() {}
inline void unknown_dtype() {}
inline void unknown_flag() {}

}  // namespace detail

consteval jw_param_desc param(const ParamWords& words) {
  jw_param_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.name = words.name;
  const auto kind = plugin::param_kind_from_name(words.kind);
  if (!kind) detail::unknown_kind();
  desc.kind = kind.value_or(JW_PARAM_TENSOR);
  detail::for_each_word(words.dtypes, [&](std::string_view word) {
    const auto dtype = plugin::dtype_from_name(word);
    if (!dtype) detail::unknown_dtype();
    desc.allowed_dtypes |= JW_DTYPE_BIT(dtype.value_or(JW_DTYPE_INVALID));
  });
  desc.rank = words.rank;
  detail::for_each_word(words.flags, [&](std::string_view word) {
    bool known = false;
    for (const FlagWord& f : kFlagWords) {
      if (word == f.word) {
        desc.flags |= f.flag;
        known = true;
      }
    }
    if (!known) detail::unknown_flag();
  });
  if (words.default_value.kind != JW_SCALAR_NONE) {
    desc.flags |= JW_PARAM_HAS_DEFAULT;
    desc.default_value = words.default_value;
  }
  desc.same_dtype_as = words.same_dtype_as;
  return desc;
}

}  // namespace jitwarm::param_words
