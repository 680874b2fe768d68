// A runtime's caches (runtime_caches.hpp): the persistent tiers, as the one
// resolution of cache settings says, under the memory cache.
#include "runtime_caches.hpp"

#include "errors.hpp"
#include "redis_url.hpp"
#include "remote_cache.hpp"
#include "trust_settings.hpp"

namespace jitwarm::detail {

RuntimeCaches::RuntimeCaches(const RuntimeOptions& options,
                             const Logger& logger)
    : settings_(resolve_cache_settings(options)),
      trust_(make_entry_trust(settings_)) {
  if (!settings_.directory.empty()) {
    try {
      disk_cache_ = std::make_shared<DiskCache>(settings_.directory,
                                                settings_.system_directory,
                                                settings_.max_bytes, &logger);
      disk_cache_->set_trust(trust_);
      if (const auto problem = disk_cache_->write_problem()) {
        settings_.problem =
            fmt::format("cache directory {} cannot be written ({})",
                        settings_.directory, *problem);
        logger.log(JW_LOG_INFO,
                   fmt::format("{}: entries are read from it, compiles are "
                               "not kept there",
                               settings_.problem));
      }
      cache_.set_store(disk_cache_);
    } catch (const Error& e) {
      // A directory someone named must work; the default is a convenience,
      // and a host without a writable home still runs.
      if (!settings_.default_directory()) throw;
      settings_.problem = e.what();
      logger.log(JW_LOG_WARNING,
                 fmt::format("{}; compiled kernels are kept in memory only "
                             "(set JITWARM_CACHE_DIR, or "
                             "JITWARM_NO_CACHE_DIR=1 to silence this)",
                             e.what()));
    }
  }
  if (!settings_.remote.empty()) {
    auto redis = std::make_shared<RedisCache>(
        parse_redis_url(settings_.remote, settings_.remote_source),
        settings_.remote_timeout, &logger);
    redis->set_trust(trust_);
    remote_cache_ = std::move(redis);
    cache_.set_remote(remote_cache_);
    cache_.set_remote_read_only(settings_.remote_mode ==
                                RemoteCacheMode::read_only);
  }
}

}  // namespace jitwarm::detail
