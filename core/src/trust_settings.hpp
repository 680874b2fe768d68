// The trust settings of the one resolution of cache settings
// (cache_settings.cpp): signing key, trusted keys and the remote tier's
// mode, from RuntimeOptions, then the environment (JITWARM_SIGNING_KEY,
// JITWARM_TRUSTED_KEYS, JITWARM_REMOTE_CACHE_MODE); and the EntryTrust a
// runtime or a cache command builds from them.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <memory>

#include "entry_trust.hpp"

namespace jitwarm::detail {

// Fills the trust fields and remote_mode of `settings`; reads the keys, so
// a key that does not read is Error(JW_ERROR_INVALID_ARGUMENT) here, naming
// the setting.
void resolve_trust_settings(const RuntimeOptions& options,
                            CacheSettings& settings);
// What resolved settings ask for; reads the signing key again.
std::shared_ptr<const EntryTrust> make_entry_trust(
    const CacheSettings& settings);

}  // namespace jitwarm::detail
