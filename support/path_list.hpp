// split_path_list: "a:b::c" -> {"a", "b", "c"}, a colon-separated list of
// paths as environment variables (JITWARM_PLUGIN_PATH,
// JITWARM_VENDOR_LIBRARY_PATH) and the command line write them; empty
// entries are skipped. Shared by the core (jitwarm::split_path_list) and
// the plugins, which do not link it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::detail {

inline std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const auto colon = list.find(':');
    if (colon != 0) out.emplace_back(list.substr(0, colon));
    if (colon == std::string_view::npos) break;
    list.remove_prefix(colon + 1);
  }
  return out;
}

}  // namespace jitwarm::detail
