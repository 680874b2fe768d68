// What a person types for a name, and what it means: a kernel's full name
// from its short one ("rms_norm"), the closest spellings of a name that
// matches nothing. Runtime::kernel, explain and schema, the `jitwarm`
// command and the Python package resolve kernel names here, so they agree.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <jitwarm/jitwarm.hpp>

#include <algorithm>

namespace jitwarm {
namespace {

// Edits (insert, delete, substitute, swap two neighbours) from a to b: a
// swapped pair ("platfrom") is one typo, not two.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(
      a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    text += fmt::format("{}'{}'", text.empty() ? "" : ", ", name);
  }
  return text;
}

}  // namespace

std::vector<std::string> closest_spellings(
    std::string_view typed, const std::vector<std::string>& candidates) {
  // Close enough: a third of the word may be wrong (at least two edits), or
  // the word is the start of a candidate ("warm" for "warmup").
  const std::size_t allowed = std::max<std::size_t>(2, typed.size() / 3);
  std::size_t best = allowed + 1;
  std::vector<std::string> closest;
  for (const std::string& candidate : candidates) {
    std::size_t distance = edit_distance(typed, candidate);
    if (typed.size() >= 2 && candidate.starts_with(typed)) distance = 1;
    if (distance < best) {
      best = distance;
      closest.clear();
    }
    if (distance == best) closest.push_back(candidate);
  }
  return closest;
}

std::string did_you_mean(const std::vector<std::string>& suggestions) {
  if (suggestions.empty()) return "";
  if (suggestions.size() == 1) {
    return fmt::format("; did you mean '{}'?", suggestions.front());
  }
  return fmt::format("; did you mean one of {}?", quoted_list(suggestions));
}

std::string_view short_kernel_name(std::string_view full_name) {
  const auto dot = full_name.rfind('.');
  return dot == std::string_view::npos ? full_name : full_name.substr(dot + 1);
}

std::string resolve_kernel_name(std::string_view typed,
                                const std::vector<std::string>& kernels) {
  std::vector<std::string> by_short_name;
  for (const std::string& kernel : kernels) {
    if (kernel == typed) return kernel;
    if (short_kernel_name(kernel) == typed) by_short_name.push_back(kernel);
  }
  if (by_short_name.size() == 1) return by_short_name.front();
  if (by_short_name.size() > 1) {
    throw Error(
        JW_ERROR_INVALID_ARGUMENT,
        fmt::format("kernel name '{}' is ambiguous: {} kernels have "
                    "it as their short name ({}); give the full name",
                    typed, by_short_name.size(), quoted_list(by_short_name)));
  }
  // Suggest by the form that was typed: a full name for a dotted name, the
  // kernel's full name for a short one.
  std::vector<std::string> shorts;
  for (const std::string& kernel : kernels) {
    shorts.emplace_back(short_kernel_name(kernel));
  }
  const bool dotted = typed.find('.') != std::string_view::npos;
  std::vector<std::string> suggestions;
  for (const std::string& close :
       closest_spellings(typed, dotted ? kernels : shorts)) {
    for (const std::string& kernel : kernels) {
      if (kernel == close || short_kernel_name(kernel) == close) {
        suggestions.push_back(kernel);
      }
    }
  }
  if (!suggestions.empty()) {
    throw Error(JW_ERROR_NOT_FOUND, fmt::format("unknown kernel '{}'{}", typed,
                                                did_you_mean(suggestions)));
  }
  throw Error(JW_ERROR_NOT_FOUND,
              fmt::format("unknown kernel '{}' (known kernels: {})", typed,
                          kernels.empty()
                              ? std::string("none; load plugins first")
                              : fmt::format("{}", fmt::join(kernels, ", "))));
}

}  // namespace jitwarm
