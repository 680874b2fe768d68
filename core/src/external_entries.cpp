// Entries another JIT compiler makes, in a runtime's persistent tiers
// (jitwarm.hpp, Runtime::store_external_entry): they are cache entries
// like any compiled key's (cache_entry.hpp), so every tier checks them the
// same way and bundles, listings and pruning see them; only the memory
// cache and the JIT monitor leave them to the compiler that owns them.
#include <jitwarm/jitwarm.hpp>

#include "errors.hpp"
#include "runtime_impl.hpp"

namespace jitwarm {
namespace {

void require_fingerprint(std::string_view fingerprint) {
  if (fingerprint.empty()) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "an external cache entry needs a fingerprint (the "
                 "compiler's own cache key)");
  }
}

}  // namespace

bool Runtime::store_external_entry(const CompileKey& key,
                                   std::string_view fingerprint,
                                   const ExternalEntry& entry) {
  require_fingerprint(fingerprint);
  if (entry.format.empty()) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "an external cache entry needs a format (e.g. "
                 "\"triton-file\")");
  }
  detail::Artifact artifact;
  artifact.binary = entry.binary;
  artifact.format = entry.format;
  artifact.entry_point = entry.entry_point;
  return detail::impl_of(*this).caches().cache().store_entry(
      detail::EntryRef(key, std::string(fingerprint)), artifact);
}

std::optional<ExternalEntry> Runtime::load_external_entry(
    const CompileKey& key, std::string_view fingerprint) {
  require_fingerprint(fingerprint);
  std::optional<detail::Artifact> found =
      detail::impl_of(*this)
          .caches()
          .cache()
          .load_entry(detail::EntryRef(key, std::string(fingerprint)))
          .artifact;
  if (!found) return std::nullopt;
  return ExternalEntry{std::move(found->binary), std::move(found->format),
                       std::move(found->entry_point)};
}

}  // namespace jitwarm
