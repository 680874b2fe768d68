// Cache administration for any host (jitwarm.hpp, "Cache administration"):
// what `jitwarm cache stats|list|verify|prune|clear` does, on the disk cache
// of the directory a runtime with the same options would use. None of it
// makes a directory: a missing one is Error(JW_ERROR_NOT_FOUND).
#include <jitwarm/jitwarm.hpp>

#include <map>
#include <set>

#include "bundle_index.hpp"
#include "disk_cache.hpp"
#include "errors.hpp"
#include "trust_settings.hpp"

namespace jitwarm {
namespace {

// The settings of these options, which must name a directory.
CacheSettings settings_with_directory(const RuntimeOptions& cache,
                                      const char* verb) {
  CacheSettings settings = resolve_cache_settings(cache);
  if (settings.directory.empty()) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "no cache directory to {} ({})",
                 verb, to_string(settings.directory_source));
  }
  return settings;
}

// The user's cache directory of these options, opened as it is.
struct OpenedCache {
  OpenedCache(const RuntimeOptions& cache, const char* verb)
      : settings(settings_with_directory(cache, verb)),
        disk(settings.directory, settings.system_directory, settings.max_bytes,
             nullptr, detail::DiskCache::Opening::existing) {}
  CacheSettings settings;
  detail::DiskCache disk;
};

CacheReport report_of(const OpenedCache& cache) {
  const detail::DiskCacheStats stats = cache.disk.stats();
  CacheReport report;
  report.cache_dir = cache.settings.directory;
  report.entries = stats.entries;
  report.bytes = stats.bytes;
  return report;
}

}  // namespace

CacheListing list_cache(const std::vector<std::string>& targets,
                        const RuntimeOptions& cache) {
  const OpenedCache opened(cache, "list");
  const std::set<std::string> wanted(targets.begin(), targets.end());
  CacheListing listing;
  listing.cache_dir = opened.settings.directory;
  opened.disk.for_each_entry(
      [&](const detail::FoundEntry& e) {
        if (!e.identity) {
          listing.corrupt.push_back({e.path.string(), e.why});
          return;
        }
        const CompileKey& key = e.identity->key;
        if (!wanted.empty() && !wanted.contains(key.target())) return;
        listing.entries.push_back({key.text(), key.kernel_name(),
                                   key.impl_name(), key.target(), e.bytes,
                                   e.system});
      },
      /*with_system=*/true);
  return listing;
}

CacheReport cache_directory_stats(const RuntimeOptions& cache) {
  const OpenedCache opened(cache, "count");
  CacheReport report = report_of(opened);
  if (!opened.settings.system_directory.empty()) {
    // The read-only layer under it, counted as a cache of its own; one that
    // is not there holds nothing.
    try {
      const detail::DiskCacheStats system =
          detail::DiskCache(opened.settings.system_directory, "", 0, nullptr,
                            detail::DiskCache::Opening::existing)
              .stats();
      report.system_entries = system.entries;
      report.system_bytes = system.bytes;
    } catch (const Error&) {
    }
  }
  const std::filesystem::path directory = opened.settings.directory;
  detail::BundleRecords found = detail::read_bundle_records(directory);
  report.bundle_problems = std::move(found.problems);
  for (const detail::BundleRecord& r : found.records) {
    CacheBundleUse use{r.name, r.id, r.imported, 0, 0};
    // An entry cleared or pruned since is no longer the bundle's to serve.
    for (const std::string& name : r.entries) {
      std::error_code ec;
      if (!std::filesystem::exists(opened.disk.entry_path_for_name(name), ec)) {
        continue;
      }
      ++use.entries;
      if (detail::bundle_entry_was_hit(directory, r.id, name))
        ++use.entries_ever_hit;
    }
    report.bundles.push_back(std::move(use));
  }
  return report;
}

CacheReport verify_cache(const RuntimeOptions& cache) {
  const OpenedCache opened(cache, "verify");
  detail::DiskCacheStats checked = opened.disk.verify();
  CacheReport report;
  report.cache_dir = opened.settings.directory;
  report.entries = checked.entries;
  report.bytes = checked.bytes;
  report.corrupt = checked.corrupt;
  report.corrupt_files = std::move(checked.corrupt_files);
  const std::shared_ptr<const detail::EntryTrust> trust =
      detail::make_entry_trust(opened.settings);
  std::map<std::string, std::size_t> signers;
  opened.disk.for_each_entry(
      [&](const detail::FoundEntry& e) {
        if (!e.identity) return;  // corrupt: reported above
        ++signers[detail::to_hex(e.identity->signer)];
        std::string why;
        if (!detail::identify_entry(e.content, &why, trust.get()))
          report.untrusted.push_back({e.path.string(), why});
      },
      /*with_system=*/false);
  report.signers.assign(signers.begin(), signers.end());
  return report;
}

CacheReport prune_cache(const RuntimeOptions& cache) {
  OpenedCache opened(cache, "prune");
  if (opened.settings.max_bytes == 0) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "pruning needs a size budget (cache_max_bytes, "
                 "JITWARM_CACHE_MAX_BYTES)");
  }
  const std::size_t removed = opened.disk.prune(opened.settings.max_bytes);
  CacheReport report = report_of(opened);
  report.removed = removed;
  return report;
}

CacheReport clear_cache(const std::vector<std::string>& targets,
                        const RuntimeOptions& cache) {
  OpenedCache opened(cache, "clear");
  const detail::DiskCache::Cleared cleared =
      opened.disk.clear(std::set<std::string>(targets.begin(), targets.end()));
  CacheReport report = report_of(opened);
  report.removed = cleared.entries;
  report.removed_bytes = cleared.bytes;
  report.removed_by_target.assign(cleared.by_target.begin(),
                                  cleared.by_target.end());
  return report;
}

uint64_t parse_byte_size(std::string_view text) {
  const std::string_view original = text;
  if (text.empty()) detail::fail(JW_ERROR_INVALID_ARGUMENT, "empty size");
  uint64_t multiplier = 1;
  const char last = text.back();
  if (last == 'K' || last == 'k') multiplier = 1ull << 10;
  if (last == 'M' || last == 'm') multiplier = 1ull << 20;
  if (last == 'G' || last == 'g') multiplier = 1ull << 30;
  if (multiplier != 1) text.remove_suffix(1);
  if (text.empty())
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "size has no digits");
  constexpr uint64_t kMax = UINT64_MAX;
  const auto too_large = [&] {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "size '{}' is too large: at most {} bytes (16 EiB - 1)",
                 original, kMax);
  };
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "bad size '{}': use bytes or a K/M/G suffix", original);
    }
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (kMax - digit) / 10) too_large();
    value = value * 10 + digit;
  }
  if (value > kMax / multiplier) too_large();
  return value * multiplier;
}

}  // namespace jitwarm
