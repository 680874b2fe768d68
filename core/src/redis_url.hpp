// Where the remote cache tier lives: "redis://[[user]:password@]host[:port]
// [/db]" (the form redis-cli -u, Triton's and Inductor's remote caches
// take). Parsed once, while cache settings are resolved, so a bad URL is an
// error naming it before anything connects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace jitwarm::detail {

struct RedisEndpoint {
  std::string host;  // a name, an IPv4 address, or an IPv6 one unbracketed
  int port = 6379;
  int64_t database = 0;
  std::string user;      // with a password: AUTH user password (Redis 6)
  std::string password;  // empty: no AUTH
  // The URL without its password, for messages and settings.
  std::string display() const;
};

// Throws Error(JW_ERROR_INVALID_ARGUMENT) saying what is wrong with `url`
// and what the form is; `what` names where it came from
// ("JITWARM_REMOTE_CACHE").
RedisEndpoint parse_redis_url(std::string_view url, std::string_view what);

}  // namespace jitwarm::detail
