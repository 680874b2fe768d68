// Which signatures a runtime accepts, and with which key it signs what it
// writes (docs/operators.md, "Trust"): one object per runtime (or per
// cache command), shared by every tier that reads or writes entries.
//
// * Trust is required when at least one public key is trusted; then an
//   entry (or a bundle) is accepted only when signed by one of them, and
//   anything else is rejected with a reason (RejectReason), which the tiers
//   count and treat as a miss. Several keys may be trusted at once, so a
//   fleet can move from one signing key to the next without a gap.
// * Without trusted keys nothing is checked: entries, signed or not, load
//   as they always did (signatures cost nothing then).
// * Checking happens where an entry is read from a tier (once per load),
//   never on the launch path.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "signing.hpp"

namespace jitwarm::detail {

// Why a tier refused an entry: the `reason` label of
// jitwarm_cache_rejected_entries_total.
enum class RejectReason {
  corrupt,         // structure, checksum, or another key's entry
  unsigned_entry,  // trust is required and it carries no signature
  unknown_signer,  // signed by a key that is not trusted
  bad_signature,   // signed by a trusted key, but not these bytes: tampered
};
inline constexpr std::size_t kRejectReasons = 4;
std::string_view reject_reason_label(RejectReason reason);

class EntryTrust {
 public:
  EntryTrust(std::optional<SigningKey> signer, std::vector<PublicKey> trusted);

  // The key that signs what is written; null: written unsigned.
  const SigningKey* signer() const { return signer_ ? &*signer_ : nullptr; }
  bool required() const { return !trusted_.empty(); }
  const std::vector<PublicKey>& trusted() const { return trusted_; }
  // The trusted key of this id, or null.
  const PublicKey* trusted_key(std::string_view id) const;

  // Whether `signature` by the key of `signer_id` over `message` is one
  // this trust accepts; nullopt when it is (always, when not required),
  // else the reason, with its words in `why`.
  std::optional<RejectReason> check(std::string_view signer_id,
                                    std::string_view message,
                                    std::string_view signature,
                                    std::string* why) const;

  // True the first time it is asked about `what` (an entry's name): a
  // rejected entry is warned about once per process, not at every load.
  bool first_warning(std::string_view what) const;

 private:
  std::optional<SigningKey> signer_;
  std::vector<PublicKey> trusted_;
  mutable std::mutex warned_mutex_;
  mutable std::set<std::string, std::less<>> warned_;
};

// Whether a tier warns about an entry it rejected for `reason`: always when
// it is corrupt (a new fault each time), once per entry (`what`: its name)
// when `trust` refused its signature, since it stays refused. `trust` is
// null where nothing is checked (only corrupt entries are rejected then).
inline bool warns_about_rejected(const EntryTrust* trust, RejectReason reason,
                                 std::string_view what) {
  return reason == RejectReason::corrupt || trust == nullptr ||
         trust->first_warning(what);
}

}  // namespace jitwarm::detail
