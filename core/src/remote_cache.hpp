// The remote cache tier on Redis (hiredis): one value per entry, shared by
// every machine pointed at the server, under the local disk cache
// (cache_tier.hpp RemoteTier; compile_cache.hpp says where it sits in a
// lookup).
//
// * Values are cache entries (cache_entry.hpp), named "jitwarm:v<format>:
//   <entry name>", checked by the same entry_artifact() as disk entries, so
//   a corrupt, truncated, foreign or oversized value is a miss (counted
//   as a reject, with a warning) and is overwritten by the next compile;
//   given an EntryTrust, values are signed as they are written and only
//   trusted signatures load (entry_trust.hpp). The value name keeps the
//   entry's name version (kEntryNameVersion), so signed and older unsigned
//   values share one name.
//   Reads ask for at most DiskCache::kMaxEntryBytes + 1 bytes (GETRANGE),
//   so a huge value is never read whole.
// * Every wait is bounded by the timeout: connecting (a non-blocking
//   connect polled for it), and each send and receive (SO_SNDTIMEO and
//   SO_RCVTIMEO). Host names are resolved by the system's resolver first;
//   use an address where that may hang.
// * A failure never reaches the caller: a broken connection, a timeout, a
//   refused AUTH mark the server down for kRetryAfter, with one warning per
//   outage; meanwhile every call returns `unavailable` at once, so a dead
//   server costs one timeout, not one per key. A server that refuses
//   writes (out of memory, a read-only replica) stops writes the same way
//   and keeps serving reads.
// * SIGPIPE from a server that closed the connection is blocked and
//   consumed on the calling thread: it never reaches the host.
// * Connections are pooled, one per concurrent caller, and belong to the
//   process that opened them: a forked worker opens its own.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache_tier.hpp"
#include "log.hpp"
#include "redis_url.hpp"

namespace jitwarm::detail {

class RedisCache : public RemoteTier {
 public:
  static constexpr std::chrono::seconds kRetryAfter{10};

  RedisCache(RedisEndpoint endpoint, std::chrono::milliseconds timeout,
             const Logger* logger);
  ~RedisCache() override;
  RedisCache(const RedisCache&) = delete;
  RedisCache& operator=(const RedisCache&) = delete;

  // As DiskCache::set_trust: set before the tier is shared.
  void set_trust(std::shared_ptr<const EntryTrust> trust) {
    trust_ = std::move(trust);
  }

  TierLoad load(const EntryRef& entry) override;
  bool store(const EntryRef& entry, const Artifact& artifact) override;

  // The value name of an entry.
  static std::string value_name(const EntryRef& entry);
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  struct Connection;
  // An idle connection of this process, a new one, or nullptr (down, with
  // the warning given).
  std::unique_ptr<Connection> take();
  void give_back(std::unique_ptr<Connection> connection);
  // A connection failed: the server is down for kRetryAfter.
  void note_down(const std::string& why);
  void note_up();
  bool down_now();
  void note_writes_refused(const std::string& why);

  RedisEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  const Logger* logger_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::chrono::steady_clock::time_point down_until_{};
  bool down_warned_ = false;  // this outage was warned about
  std::chrono::steady_clock::time_point writes_refused_until_{};
  bool writes_refused_warned_ = false;
  std::shared_ptr<const EntryTrust> trust_;
};

}  // namespace jitwarm::detail
