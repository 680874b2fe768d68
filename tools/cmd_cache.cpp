// jitwarm cache stats|verify|prune: the persistent compile cache.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>

#include "cli.hpp"
#include "disk_cache.hpp"
#include "names.hpp"

namespace jitwarm::cli {

int cmd_cache(const std::vector<std::string>& args) {
  po::options_description options("options");
  std::string action, cache_dir, max_bytes;
  bool json = false;
  options.add_options()("cache-dir,c", po::value(&cache_dir),
                        "cache directory (default: $JITWARM_CACHE_DIR)")(
      "max-bytes", po::value(&max_bytes),
      "prune: keep at most this much (e.g. 512M, 2G; "
      "default: $JITWARM_CACHE_MAX_BYTES)")("json", po::bool_switch(&json),
                                            "print as JSON");
  const CommandLine command{
      "cache",
      "ACTION [--cache-dir D] [--max-bytes SIZE] [--json]",
      "stats: entries and bytes. verify: check every entry (exit 1 when one\n"
      "is corrupt). prune: evict the least recently used entries down to\n"
      "--max-bytes.",
      {{"ACTION", "stats, verify or prune", &action}}};
  po::variables_map vm;
  int code = kExitOk;
  if (!parse(command, options, args, vm, &code)) return code;
  if (action != "stats" && action != "verify" && action != "prune") {
    throw usage_error(fmt::format(
        "unknown action '{}': use stats, verify or prune{}", action,
        did_you_mean(closest_spellings(action, {"stats", "verify", "prune"}))));
  }
  if (cache_dir.empty() && std::getenv("JITWARM_CACHE_DIR") != nullptr) {
    cache_dir = std::getenv("JITWARM_CACHE_DIR");
  }
  if (cache_dir.empty()) {
    throw usage_error(
        "no cache directory (use --cache-dir or "
        "JITWARM_CACHE_DIR)");
  }
  if (max_bytes.empty() && std::getenv("JITWARM_CACHE_MAX_BYTES") != nullptr) {
    max_bytes = std::getenv("JITWARM_CACHE_MAX_BYTES");
  }
  const uint64_t budget =
      max_bytes.empty() ? 0 : detail::parse_byte_size(max_bytes);
  detail::DiskCache cache(cache_dir, "", budget, nullptr);
  nlohmann::json j;
  j["cache_dir"] = cache_dir;
  if (action == "stats") {
    const auto s = cache.stats();
    j["entries"] = s.entries;
    j["bytes"] = s.bytes;
    if (!json)
      std::cout << fmt::format("{}: {} entries, {} bytes\n", cache_dir,
                               s.entries, s.bytes);
  } else if (action == "verify") {
    const auto s = cache.verify();
    j["entries"] = s.entries;
    j["corrupt"] = s.corrupt;
    j["corrupt_files"] = s.corrupt_files;
    if (!json) {
      for (const auto& f : s.corrupt_files)
        std::cout << "corrupt " << f << "\n";
      std::cout << fmt::format("{} entries checked, {} corrupt\n", s.entries,
                               s.corrupt);
    }
    code = s.corrupt > 0 ? kExitFailures : kExitOk;
  } else {  // prune
    if (budget == 0) {
      throw usage_error("prune needs --max-bytes (or JITWARM_CACHE_MAX_BYTES)");
    }
    const std::size_t removed = cache.prune(budget);
    const auto s = cache.stats();
    j["removed"] = removed;
    j["entries"] = s.entries;
    j["bytes"] = s.bytes;
    if (!json) {
      std::cout << fmt::format(
          "removed {} entries; {} entries, {} bytes remain\n", removed,
          s.entries, s.bytes);
    }
  }
  if (json) std::cout << j.dump(2) << "\n";
  return code;
}

}  // namespace jitwarm::cli
