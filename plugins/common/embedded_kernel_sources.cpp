// Lookup and include closure over a set of kernel sources.
#include "embedded_kernel_sources.hpp"

#include <jitwarm/plugin.hpp>

#include <algorithm>
#include <string>

namespace jitwarm::gpu {
namespace {

// The quoted file names of the #include "..." lines of `text`. The kernel
// sources use only this form (system includes are not allowed there).
std::vector<std::string_view> quoted_includes(std::string_view text) {
  std::vector<std::string_view> names;
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    const std::size_t hash = line.find_first_not_of(" \t");
    if (hash == std::string_view::npos || line[hash] != '#') continue;
    line.remove_prefix(hash + 1);
    const std::size_t directive = line.find_first_not_of(" \t");
    if (directive == std::string_view::npos ||
        line.substr(directive, 7) != "include") {
      continue;
    }
    line.remove_prefix(directive + 7);
    const std::size_t open = line.find('"');
    const std::size_t close =
        open == std::string_view::npos ? open : line.find('"', open + 1);
    if (close == std::string_view::npos) continue;
    names.push_back(line.substr(open + 1, close - open - 1));
  }
  return names;
}

bool contains(const std::vector<const EmbeddedSource*>& files,
              std::string_view name) {
  return std::any_of(files.begin(), files.end(),
                     [&](const EmbeddedSource* s) { return s->name == name; });
}

// Depth-first, dependencies before the file that includes them.
void collect(std::span<const EmbeddedSource> sources, std::string_view name,
             std::vector<const EmbeddedSource*>& closure,
             std::vector<std::string_view>& open_files) {
  open_files.push_back(name);
  for (std::string_view included :
       quoted_includes(find_source(sources, name).text)) {
    if (contains(closure, included)) continue;
    // An include cycle back to an open file: #pragma once ends it for the
    // compiler, and the open file is (or will be) listed by its includer.
    if (std::find(open_files.begin(), open_files.end(), included) !=
        open_files.end()) {
      continue;
    }
    collect(sources, included, closure, open_files);
    if (!contains(closure, included)) {
      closure.push_back(&find_source(sources, included));
    }
  }
  open_files.pop_back();
}

}  // namespace

const EmbeddedSource& find_source(std::span<const EmbeddedSource> sources,
                                  std::string_view name) {
  for (const EmbeddedSource& source : sources) {
    if (source.name == name) return source;
  }
  throw plugin::PluginError(JW_ERROR_INTERNAL,
                            "kernel source '" + std::string(name) +
                                "' is not among the kernel's files");
}

std::vector<const EmbeddedSource*> include_closure(
    std::span<const EmbeddedSource> sources, std::string_view name) {
  std::vector<const EmbeddedSource*> closure;
  std::vector<std::string_view> open_files;
  collect(sources, name, closure, open_files);
  return closure;
}

}  // namespace jitwarm::gpu
