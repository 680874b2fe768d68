// jitwarm cache stats|list|verify|prune|clear|export|import: the persistent
// compile cache. Which directory comes from the core's one resolution of
// cache settings (resolve_cache_settings), so the command and a runtime
// always agree on it; every action but import refuses a directory that
// does not exist rather than make one.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "cli.hpp"
#include "disk_cache.hpp"
#include "names.hpp"

namespace jitwarm::cli {
namespace {

const std::vector<std::string> kActions = {"stats", "list",   "verify", "prune",
                                           "clear", "export", "import"};

struct CacheCommand {
  std::string action, file, output, cache_dir, max_bytes;
  std::vector<std::string> targets;  // expanded
  bool json = false;
  CacheSettings settings;
};

// The targets' entries, and every target's, per target.
struct Tally {
  std::size_t entries = 0;
  uint64_t bytes = 0;
};

nlohmann::json settings_json(const CacheSettings& s) {
  return {{"cache_dir", s.directory},
          {"source", std::string(to_string(s.directory_source))},
          {"system_cache_dir", s.system_directory}};
}

// The user's cache directory, which must exist (import creates it).
detail::DiskCache open_cache(const CacheCommand& c,
                             detail::DiskCache::Opening opening) {
  if (c.settings.directory.empty()) {
    throw usage_error(
        fmt::format("no cache directory ({}); name one with --cache-dir",
                    to_string(c.settings.directory_source)));
  }
  try {
    return detail::DiskCache(c.settings.directory, c.settings.system_directory,
                             c.settings.max_bytes, nullptr, opening);
  } catch (const Error& e) {
    if (e.status() != JW_ERROR_NOT_FOUND) throw;
    throw CommandError(kExitBadInput,
                       fmt::format("{}, from {}{}", e.what(),
                                   to_string(c.settings.directory_source),
                                   c.settings.default_directory()
                                       ? " (nothing has been cached there yet)"
                                       : ""));
  }
}

int stats(const CacheCommand& c) {
  const detail::DiskCache cache =
      open_cache(c, detail::DiskCache::Opening::existing);
  const auto s = cache.stats();
  nlohmann::json j = settings_json(c.settings);
  j["entries"] = s.entries;
  j["bytes"] = s.bytes;
  if (!c.settings.system_directory.empty()) {
    // The read-only layer under it, counted as a cache of its own.
    detail::DiskCacheStats system;
    try {
      system = detail::DiskCache(c.settings.system_directory, "", 0, nullptr,
                                 detail::DiskCache::Opening::existing)
                   .stats();
    } catch (const Error&) {
      // A system layer that is not there holds nothing.
    }
    j["system_entries"] = system.entries;
    j["system_bytes"] = system.bytes;
  }
  if (c.json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{}: {} entries, {} bytes ({})\n",
                           c.settings.directory, s.entries, s.bytes,
                           to_string(c.settings.directory_source));
  if (!c.settings.system_directory.empty()) {
    std::cout << fmt::format(
        "{}: {} entries, {} bytes (system cache, read "
        "only)\n",
        c.settings.system_directory, j["system_entries"].get<std::size_t>(),
        j["system_bytes"].get<uint64_t>());
  }
  return kExitOk;
}

int list(const CacheCommand& c) {
  const detail::DiskCache cache =
      open_cache(c, detail::DiskCache::Opening::existing);
  const std::set<std::string> wanted(c.targets.begin(), c.targets.end());
  std::map<std::string, Tally> by_target;
  nlohmann::json entries = nlohmann::json::array();
  nlohmann::json corrupt = nlohmann::json::array();
  Tally total;
  cache.for_each_entry(
      [&](const detail::FoundEntry& e) {
        if (!e.identity) {
          corrupt.push_back({{"path", e.path.string()}, {"why", e.why}});
          return;
        }
        const std::string& target = e.identity->key.target();
        if (!wanted.empty() && !wanted.contains(target)) return;
        Tally& t = by_target[target];
        ++t.entries;
        t.bytes += e.bytes;
        ++total.entries;
        total.bytes += e.bytes;
        entries.push_back({{"key", e.identity->key.text()},
                           {"kernel", e.identity->key.kernel_name()},
                           {"implementation", e.identity->key.impl_name()},
                           {"target", target},
                           {"bytes", e.bytes},
                           {"layer", e.system ? "system" : "user"}});
      },
      /*with_system=*/true);
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["entries"] = total.entries;
    j["bytes"] = total.bytes;
    j["targets"] = nlohmann::json::array();
    for (const auto& [target, t] : by_target) {
      j["targets"].push_back(
          {{"target", target}, {"entries", t.entries}, {"bytes", t.bytes}});
    }
    j["list"] = std::move(entries);
    j["corrupt"] = std::move(corrupt);
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& e : entries) {
    std::cout << fmt::format(
        "{:<14} {:>10}  {}{}\n", e["target"].get<std::string>(),
        e["bytes"].get<uint64_t>(), e["key"].get<std::string>(),
        e["layer"] == "system" ? "  (system)" : "");
  }
  for (const auto& [target, t] : by_target) {
    std::cout << fmt::format("{}: {} entries, {} bytes\n", target, t.entries,
                             t.bytes);
  }
  if (!corrupt.empty()) {
    std::cout << fmt::format(
        "{} corrupt entries ('jitwarm cache verify' lists them)\n",
        corrupt.size());
  }
  std::cout << fmt::format("{} entries, {} bytes in {}\n", total.entries,
                           total.bytes, c.settings.directory);
  return kExitOk;
}

int verify(const CacheCommand& c) {
  const detail::DiskCache cache =
      open_cache(c, detail::DiskCache::Opening::existing);
  const auto s = cache.verify();
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["entries"] = s.entries;
    j["corrupt"] = s.corrupt;
    j["corrupt_files"] = s.corrupt_files;
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& f : s.corrupt_files) std::cout << "corrupt " << f << "\n";
    std::cout << fmt::format("{} entries checked, {} corrupt\n", s.entries,
                             s.corrupt);
  }
  return s.corrupt > 0 ? kExitFailures : kExitOk;
}

int prune(const CacheCommand& c) {
  if (c.settings.max_bytes == 0) {
    throw usage_error("prune needs --max-bytes (or JITWARM_CACHE_MAX_BYTES)");
  }
  detail::DiskCache cache = open_cache(c, detail::DiskCache::Opening::existing);
  const std::size_t removed = cache.prune(c.settings.max_bytes);
  const auto s = cache.stats();
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["removed"] = removed;
    j["entries"] = s.entries;
    j["bytes"] = s.bytes;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "removed {} entries; {} entries, {} bytes remain\n", removed, s.entries,
        s.bytes);
  }
  return kExitOk;
}

int clear(const CacheCommand& c) {
  detail::DiskCache cache = open_cache(c, detail::DiskCache::Opening::existing);
  const auto cleared =
      cache.clear(std::set<std::string>(c.targets.begin(), c.targets.end()));
  const auto left = cache.stats();
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["removed"] = cleared.entries;
    j["removed_bytes"] = cleared.bytes;
    j["targets"] = nlohmann::json::array();
    for (const auto& [target, n] : cleared.by_target)
      j["targets"].push_back({{"target", target}, {"removed", n}});
    j["entries"] = left.entries;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& [target, n] : cleared.by_target)
    std::cout << fmt::format("{}: {} entries removed\n", target, n);
  std::cout << fmt::format("removed {} entries ({} bytes) from {}; {} remain\n",
                           cleared.entries, cleared.bytes, c.settings.directory,
                           left.entries);
  return kExitOk;
}

void print_bundle(const CacheBundleSummary& s, bool imported, bool json) {
  if (json) {
    nlohmann::json j;
    j["bundle"] = s.bundle;
    j["cache_dir"] = s.cache_dir;
    j["entries"] = s.entries;
    j["entry_bytes"] = s.entry_bytes;
    j["file_bytes"] = s.file_bytes;
    if (imported) {
      j["written"] = s.written;
      j["present"] = s.present;
    } else {
      j["skipped_corrupt"] = s.skipped_corrupt;
    }
    j["targets"] = nlohmann::json::array();
    for (const auto& [target, n] : s.targets)
      j["targets"].push_back({{"target", target}, {"entries", n}});
    j["manifest"] = nlohmann::json::array();
    for (const auto& e : s.manifest) {
      j["manifest"].push_back(
          {{"key", e.key}, {"target", e.target}, {"bytes", e.bytes}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  for (const auto& [target, n] : s.targets)
    std::cout << fmt::format("{}: {} entries\n", target, n);
  if (imported) {
    std::cout << fmt::format(
        "imported {} entries from {} into {}: {} written, {} already there\n",
        s.entries, s.bundle, s.cache_dir, s.written, s.present);
  } else {
    std::cout << fmt::format(
        "exported {} entries ({} bytes, {} compressed) from {} to {}{}\n",
        s.entries, s.entry_bytes, s.file_bytes, s.cache_dir, s.bundle,
        s.skipped_corrupt > 0
            ? fmt::format("; {} corrupt entries left out", s.skipped_corrupt)
            : std::string());
  }
}

}  // namespace

int cmd_cache(const std::vector<std::string>& args) {
  po::options_description options("options");
  CacheCommand c;
  std::vector<std::string> targets;
  options.add_options()(
      "cache-dir,c", po::value(&c.cache_dir),
      "cache directory (default: $JITWARM_CACHE_DIR, else the per-user "
      "cache, $XDG_CACHE_HOME/jitwarm or ~/.cache/jitwarm)")(
      "target,t", po::value(&targets)->composing(),
      "list, clear, export: only this target's entries (cuda:sm_90, or the "
      "shorthand sm_90, gfx942); repeatable")(
      "output,o", po::value(&c.output), "export: the bundle file to write")(
      "max-bytes", po::value(&c.max_bytes),
      "prune: keep at most this much (e.g. 512M, 2G; "
      "default: $JITWARM_CACHE_MAX_BYTES)")("json", po::bool_switch(&c.json),
                                            "print as JSON");
  const CommandLine command{
      "cache",
      "ACTION [BUNDLE] [--cache-dir D] [--target T]... [--output FILE] "
      "[--max-bytes SIZE] [--json]",
      "stats: entries and bytes. list: every entry and a breakdown per\n"
      "target. verify: check every entry (exit 1 when one is corrupt).\n"
      "prune: evict the least recently used entries down to --max-bytes.\n"
      "clear: remove every entry (or those of --target). export: write the\n"
      "entries (of --target) into one checksummed, compressed bundle\n"
      "(--output). import BUNDLE: check every entry of a bundle, then add\n"
      "them all (a corrupt or truncated bundle adds none).",
      {{"ACTION", "stats, list, verify, prune, clear, export or import",
        &c.action},
       {"BUNDLE", "import: the bundle file to read", &c.file, false}}};
  po::variables_map vm;
  int code = kExitOk;
  if (!parse(command, options, args, vm, &code)) return code;
  if (std::find(kActions.begin(), kActions.end(), c.action) == kActions.end()) {
    throw usage_error(fmt::format(
        "unknown action '{}': use {}{}", c.action, fmt::join(kActions, ", "),
        did_you_mean(closest_spellings(c.action, kActions))));
  }
  if (!c.file.empty() && c.action != "import") {
    throw usage_error(fmt::format(
        "unexpected argument '{}' (only 'cache import' takes a file)", c.file));
  }
  if (c.action == "import" && c.file.empty())
    throw usage_error("missing BUNDLE (import: the bundle file to read)");
  if (c.action == "export" && c.output.empty())
    throw usage_error("export needs --output FILE (the bundle to write)");
  if (!c.output.empty() && c.action != "export")
    throw usage_error("--output is for 'cache export'");
  if (!targets.empty() && c.action != "list" && c.action != "clear" &&
      c.action != "export") {
    throw usage_error("--target is for 'cache list', 'clear' and 'export'");
  }
  for (const auto& t : targets) c.targets.push_back(expand_target(t));

  RuntimeOptions cache_options;
  cache_options.cache_dir = c.cache_dir;
  if (!c.max_bytes.empty())
    cache_options.cache_max_bytes = detail::parse_byte_size(c.max_bytes);
  c.settings = resolve_cache_settings(cache_options);

  if (c.action == "stats") return stats(c);
  if (c.action == "list") return list(c);
  if (c.action == "verify") return verify(c);
  if (c.action == "prune") return prune(c);
  if (c.action == "clear") return clear(c);
  if (c.settings.directory.empty()) (void)open_cache(c, {});  // says why
  if (c.action == "export") {
    try {
      print_bundle(export_cache_bundle(c.output, c.targets, cache_options),
                   false, c.json);
    } catch (const Error& e) {
      if (e.status() == JW_ERROR_NOT_FOUND)
        throw CommandError(kExitBadInput, e.what());
      throw;
    }
    return kExitOk;
  }
  print_bundle(import_cache_bundle(c.file, cache_options), true, c.json);
  return kExitOk;
}

}  // namespace jitwarm::cli
