#include "trust_options.hpp"

namespace jitwarm::cli {

namespace po = boost::program_options;

void TrustOptions::add_to(po::options_description& d, unsigned which) {
  if ((which & sign) != 0) {
    d.add_options()("signing-key", po::value(&signing_key),
                    "sign every cache entry (and bundle) written with this "
                    "secret key file, from `jitwarm cache keygen` (default: "
                    "$JITWARM_SIGNING_KEY)");
  }
  if ((which & trust) != 0) {
    d.add_options()("trusted-key", po::value(&trusted_keys)->composing(),
                    "load only cache entries (and import only bundles) "
                    "signed by this public key: its text "
                    "(jitwarm-ed25519:...) or a file of keys; repeatable "
                    "(default: $JITWARM_TRUSTED_KEYS, comma-separated)");
  }
  if ((which & remote_mode) != 0) {
    d.add_options()("remote-read-only", po::bool_switch(&remote_read_only),
                    "load from the remote cache, never write to it "
                    "(default: $JITWARM_REMOTE_CACHE_MODE)");
  }
}

void TrustOptions::apply(RuntimeOptions& options) const {
  if (!signing_key.empty()) options.signing_key = signing_key;
  if (!trusted_keys.empty()) options.trusted_keys = trusted_keys;
  if (remote_read_only) options.remote_cache_mode = RemoteCacheMode::read_only;
}

}  // namespace jitwarm::cli
