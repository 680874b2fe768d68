#include "plugin_candidates.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

std::string canonical_text(const std::string& path) {
  std::error_code error;
  const fs::path canonical = fs::weakly_canonical(path, error);
  return error ? path : canonical.string();
}

}  // namespace

std::vector<std::string> find_plugin_candidates(
    const std::vector<std::string>& search_path,
    std::vector<std::string>& searched_directories) {
  std::vector<std::string> candidates;
  std::set<std::string> seen;
  for (const std::string& entry : search_path) {
    if (entry.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      searched_directories.push_back(entry);
      std::vector<std::string> files;
      // Everything named like a plugin is a candidate, files or not: a
      // directory or a dangling link of that name is reported rejected
      // (load_plugin says what it is), never silently passed over.
      for (const auto& f : fs::directory_iterator(entry, ec)) {
        const std::string name = f.path().filename().string();
        if (name.size() > 3 && name.ends_with(".so")) {
          files.push_back(f.path().string());
        }
      }
      // Byte-wise by file name: later files load later, and so win over
      // earlier ones of the same precedence (P10).
      std::sort(files.begin(), files.end());
      for (auto& f : files) {
        if (seen.insert(canonical_text(f)).second) candidates.push_back(f);
      }
    } else if (fs::exists(entry, ec)) {
      if (seen.insert(canonical_text(entry)).second) {
        candidates.push_back(entry);
      }
    } else {
      searched_directories.push_back(entry + " (not found)");
    }
  }
  return candidates;
}

ImplSource source_of(const std::string& file,
                     const std::vector<std::string>& bundled_directories) {
  const std::string directory =
      fs::path(canonical_text(file)).parent_path().string();
  for (const std::string& bundled : bundled_directories) {
    if (!bundled.empty() && canonical_text(bundled) == directory) {
      return ImplSource::bundled_plugin;
    }
  }
  return ImplSource::user_plugin;
}

}  // namespace jitwarm::detail
