// The C API of cache administration (jitwarm.h, "Caches for fleets":
// bundles, listings and the cache actions' reports): forwards to
// cache_admin.cpp and cache_bundle.cpp, which work on a directory, with or
// without a runtime.
#include "c_api_support.hpp"

namespace jitwarm::detail::c_api {
namespace {

using TargetCounts = OwnedItems<Owned<jw_cache_bundle_target, std::string>>;

using OwnedBundleEntry = Owned<jw_cache_bundle_entry, CacheBundleEntry>;
struct OwnedBundleSummary : Owned<jw_cache_bundle_summary, CacheBundleSummary> {
  using Owned::Owned;
  TargetCounts targets;
  OwnedItems<OwnedBundleEntry> entries;
};

using OwnedEntryInfo = Owned<jw_cache_entry_info, CacheEntryInfo>;
struct OwnedListing : Owned<jw_cache_listing, CacheListing> {
  using Owned::Owned;
  OwnedItems<OwnedEntryInfo> entries;
  std::vector<const char*> paths, reasons;
};

struct OwnedReport : Owned<jw_cache_report, CacheReport> {
  using Owned::Owned;
  OwnedItems<jw_cache_bundle_use, jw_cache_bundle_use> bundles;
  std::vector<const char*> bundle_problem_texts;
  std::vector<const char*> files;
  TargetCounts removed_by_target;
};

// (target, entries) counts as the C list of them.
void add_target_counts(
    TargetCounts& list,
    const std::vector<std::pair<std::string, std::size_t>>& counts) {
  for (const auto& [target, n] : counts) {
    auto& item = list.add(target);
    item.target = item.value.c_str();
    item.entries = n;
  }
}

// targets[0, count): the C lists of targets the cache calls take.
std::vector<std::string> target_list(const char* const* targets,
                                     uint32_t count) {
  if (count > 0) require(targets, "targets");
  std::vector<std::string> out;
  for (uint32_t i = 0; i < count; ++i) {
    if (targets[i] == nullptr)
      fail(JW_ERROR_INVALID_ARGUMENT, "targets[{}] is null", i);
    out.emplace_back(targets[i]);
  }
  return out;
}

}  // namespace

jw_cache_bundle_summary* to_c(CacheBundleSummary s) {
  auto owned = std::make_unique<OwnedBundleSummary>(std::move(s));
  const CacheBundleSummary& summary = owned->value;
  add_target_counts(owned->targets, summary.targets);
  for (const auto& e : summary.manifest) {
    OwnedBundleEntry& item = owned->entries.add(e);
    item.key = item.value.key.c_str();
    item.target = item.value.target.c_str();
    item.bytes = item.value.bytes;
  }
  jw_cache_bundle_summary& c = *owned;
  c.bundle = summary.bundle.c_str();
  c.cache_dir = summary.cache_dir.c_str();
  c.entries = summary.entries;
  c.written = summary.written;
  c.present = summary.present;
  c.skipped_corrupt = summary.skipped_corrupt;
  c.entry_bytes = summary.entry_bytes;
  c.file_bytes = summary.file_bytes;
  c.targets = owned->targets.data();
  c.num_targets = owned->targets.count();
  c.manifest = owned->entries.data();
  c.num_entries = owned->entries.count();
  c.sha256 = summary.sha256.c_str();
  c.signer = summary.signer.c_str();
  return owned.release();
}

jw_cache_listing* to_c(CacheListing listing) {
  auto owned = std::make_unique<OwnedListing>(std::move(listing));
  for (const CacheEntryInfo& e : owned->value.entries) {
    OwnedEntryInfo& item = owned->entries.add(e);
    item.key = item.value.key.c_str();
    item.kernel = item.value.kernel.c_str();
    item.implementation = item.value.implementation.c_str();
    item.target = item.value.target.c_str();
    item.bytes = item.value.bytes;
    item.system = item.value.system ? 1 : 0;
  }
  for (const CorruptCacheEntry& e : owned->value.corrupt) {
    owned->paths.push_back(e.path.c_str());
    owned->reasons.push_back(e.why.c_str());
  }
  jw_cache_listing& c = *owned;
  c.cache_dir = owned->value.cache_dir.c_str();
  c.entries = owned->entries.data();
  c.num_entries = owned->entries.count();
  c.corrupt_paths = owned->paths.data();
  c.corrupt_reasons = owned->reasons.data();
  c.num_corrupt = owned->paths.size();
  return owned.release();
}

jw_cache_report* to_c(CacheReport report) {
  auto owned = std::make_unique<OwnedReport>(std::move(report));
  const CacheReport& r = owned->value;
  for (const std::string& f : r.corrupt_files)
    owned->files.push_back(f.c_str());
  add_target_counts(owned->removed_by_target, r.removed_by_target);
  for (const CacheBundleUse& b : r.bundles) {
    jw_cache_bundle_use& item = owned->bundles.add();
    item.name = b.name.c_str();
    item.id = b.id.c_str();
    item.imported = b.imported;
    item.entries = b.entries;
    item.entries_ever_hit = b.entries_ever_hit;
  }
  for (const std::string& p : r.bundle_problems)
    owned->bundle_problem_texts.push_back(p.c_str());
  jw_cache_report& c = *owned;
  c.cache_dir = r.cache_dir.c_str();
  c.entries = r.entries;
  c.bytes = r.bytes;
  c.system_entries = r.system_entries;
  c.system_bytes = r.system_bytes;
  c.corrupt = r.corrupt;
  c.corrupt_files = owned->files.data();
  c.num_corrupt_files = owned->files.size();
  c.removed = r.removed;
  c.removed_bytes = r.removed_bytes;
  c.removed_by_target = owned->removed_by_target.data();
  c.num_removed_targets = owned->removed_by_target.count();
  c.bundles = owned->bundles.data();
  c.num_bundles = owned->bundles.count();
  c.bundle_problems = owned->bundle_problem_texts.data();
  c.num_bundle_problems =
      static_cast<uint32_t>(owned->bundle_problem_texts.size());
  return owned.release();
}

}  // namespace jitwarm::detail::c_api

namespace c_api = jitwarm::detail::c_api;

extern "C" {

JITWARM_EXPORT void jw_cache_bundle_summary_free(
    jw_cache_bundle_summary* summary) {
  delete static_cast<c_api::OwnedBundleSummary*>(summary);
}

JITWARM_EXPORT jw_status jw_cache_export_bundle(
    const char* bundle_path, const char* const* targets, uint32_t num_targets,
    const jw_runtime_options* cache, jw_cache_bundle_summary** out_summary) {
  return c_api::answer_if_asked(
      {{bundle_path, "bundle_path"}}, out_summary, [&] {
        const std::vector<std::string> wanted =
            c_api::target_list(targets, num_targets);
        return jitwarm::export_cache_bundle(bundle_path, wanted,
                                            c_api::runtime_options_of(cache));
      });
}

JITWARM_EXPORT jw_status
jw_cache_import_bundle(const char* bundle_path, const jw_runtime_options* cache,
                       jw_cache_bundle_summary** out_summary) {
  return jw_cache_import_bundle_pinned(bundle_path, cache, nullptr,
                                       out_summary);
}

JITWARM_EXPORT jw_status jw_cache_import_bundle_pinned(
    const char* bundle_path, const jw_runtime_options* cache,
    const char* sha256, jw_cache_bundle_summary** out_summary) {
  return c_api::answer_if_asked(
      {{bundle_path, "bundle_path"}}, out_summary, [&] {
        return jitwarm::import_cache_bundle(bundle_path,
                                            c_api::runtime_options_of(cache),
                                            sha256 != nullptr ? sha256 : "");
      });
}

JITWARM_EXPORT void jw_cache_listing_free(jw_cache_listing* listing) {
  delete static_cast<c_api::OwnedListing*>(listing);
}

JITWARM_EXPORT void jw_cache_report_free(jw_cache_report* report) {
  delete static_cast<c_api::OwnedReport*>(report);
}

JITWARM_EXPORT jw_status jw_cache_list(const char* const* targets,
                                       uint32_t num_targets,
                                       const jw_runtime_options* cache,
                                       jw_cache_listing** out_listing) {
  return c_api::answer_or_null({}, out_listing, "out_listing", [&] {
    return jitwarm::list_cache(c_api::target_list(targets, num_targets),
                               c_api::runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_cache_stats(const jw_runtime_options* cache,
                                        jw_cache_report** out_report) {
  return c_api::answer_or_null({}, out_report, "out_report", [&] {
    return jitwarm::cache_directory_stats(c_api::runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_cache_verify(const jw_runtime_options* cache,
                                         jw_cache_report** out_report) {
  return c_api::answer_or_null({}, out_report, "out_report", [&] {
    return jitwarm::verify_cache(c_api::runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_cache_prune(const jw_runtime_options* cache,
                                        jw_cache_report** out_report) {
  return c_api::answer_or_null({}, out_report, "out_report", [&] {
    return jitwarm::prune_cache(c_api::runtime_options_of(cache));
  });
}

JITWARM_EXPORT jw_status jw_cache_clear(const char* const* targets,
                                        uint32_t num_targets,
                                        const jw_runtime_options* cache,
                                        jw_cache_report** out_report) {
  return c_api::answer_or_null({}, out_report, "out_report", [&] {
    return jitwarm::clear_cache(c_api::target_list(targets, num_targets),
                                c_api::runtime_options_of(cache));
  });
}

}  // extern "C"
