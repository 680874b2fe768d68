// Which files are plugin candidates, in what order, and with what
// precedence their place gives them (docs/architecture.md, "Plugin
// loading"; docs/plugin-abi.md P10). It names files; it must not read or
// load them.
#pragma once

#include <string>
#include <vector>

#include "registry.hpp"

namespace jitwarm::detail {

// The candidates of `search_path`, in load order: each directory's files
// named *.so (whatever they are: a directory or a dangling link of that
// name is a candidate, rejected with what it is), sorted byte-wise by name,
// and every other entry that exists as it is given; each file once, by
// canonical path. The directories searched, and entries not found
// ("DIR (not found)"), are appended to `searched_directories`.
std::vector<std::string> find_plugin_candidates(
    const std::vector<std::string>& search_path,
    std::vector<std::string>& searched_directories);

// A bundled plugin is a file that lives in one of `bundled_directories`
// (the installed plugin directory), however it is named; any other is a
// user's.
ImplSource source_of(const std::string& file,
                     const std::vector<std::string>& bundled_directories);

}  // namespace jitwarm::detail
