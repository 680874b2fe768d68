#include "entry_trust.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jitwarm::detail {

std::string_view reject_reason_label(RejectReason reason) {
  switch (reason) {
    case RejectReason::corrupt: return "corrupt";
    case RejectReason::unsigned_entry: return "unsigned";
    case RejectReason::unknown_signer: return "unknown_signer";
    case RejectReason::bad_signature: return "bad_signature";
  }
  return "corrupt";
}

EntryTrust::EntryTrust(std::optional<SigningKey> signer,
                       std::vector<PublicKey> trusted)
    : signer_(std::move(signer)), trusted_(std::move(trusted)) {}

const PublicKey* EntryTrust::trusted_key(std::string_view id) const {
  const auto it = std::find_if(trusted_.begin(), trusted_.end(),
                               [&](const PublicKey& k) { return k.id == id; });
  return it == trusted_.end() ? nullptr : &*it;
}

std::optional<RejectReason> EntryTrust::check(std::string_view signer_id,
                                              std::string_view message,
                                              std::string_view signature,
                                              std::string* why) const {
  if (!required()) return std::nullopt;
  if (signer_id.empty()) {
    *why = "it is not signed, and trusted keys are required";
    return RejectReason::unsigned_entry;
  }
  const PublicKey* key = trusted_key(signer_id);
  if (key == nullptr) {
    *why = fmt::format("it is signed by key {}, which is not trusted",
                       to_hex(signer_id));
    return RejectReason::unknown_signer;
  }
  if (!signature_matches(*key, message, signature)) {
    *why = fmt::format(
        "its signature by trusted key {} does not match its content "
        "(tampered)",
        key->id_hex());
    return RejectReason::bad_signature;
  }
  return std::nullopt;
}

bool EntryTrust::first_warning(std::string_view what) const {
  std::lock_guard lock(warned_mutex_);
  return warned_.emplace(what).second;
}

}  // namespace jitwarm::detail
