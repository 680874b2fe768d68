// jitwarm.hpp write_cache_key_pair: `jitwarm cache keygen`, for any host.
#include <jitwarm/jitwarm.hpp>

#include "signing.hpp"

namespace jitwarm {

CacheKeyPair write_cache_key_pair(const std::string& path) {
  const detail::SigningKey key = detail::write_key_pair(path);
  return CacheKeyPair{path, path + ".pub", key.public_key.text(),
                      key.public_key.id_hex()};
}

}  // namespace jitwarm
