// Cache settings: the one place that reads RuntimeOptions' cache fields and
// the environment's cache variables, for the runtime, the CLI and Python
// (jitwarm.hpp resolve_cache_settings). Precedence, per setting: an option
// the caller set, then its variable, then the default; for the directory, a
// request for none (option, then JITWARM_NO_CACHE_DIR) beats every
// directory of lower rank, and the per-user default follows the XDG base
// directory specification.
#include <jitwarm/jitwarm.hpp>

#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "disk_cache.hpp"
#include "errors.hpp"
#include "redis_url.hpp"
#include "trust_settings.hpp"

namespace jitwarm {
namespace {

using detail::fail;

// Set and non-empty: an empty variable is an unset one.
std::optional<std::string> variable(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

bool switch_variable(const char* name) {
  const std::optional<std::string> v = variable(name);
  if (!v) return false;
  for (const char* yes : {"1", "true", "yes", "on"})
    if (*v == yes) return true;
  for (const char* no : {"0", "false", "no", "off"})
    if (*v == no) return false;
  fail(JW_ERROR_INVALID_ARGUMENT, "{}='{}': use 1 or 0", name, *v);
}

constexpr auto kMaxRemoteTimeout = std::chrono::minutes(10);

void resolve_directory(const RuntimeOptions& options, CacheSettings& s) {
  if (options.no_cache_dir) {
    s.directory_source = CacheDirSource::disabled_by_option;
    return;
  }
  if (!options.cache_dir.empty()) {
    s.directory = options.cache_dir;
    s.directory_source = CacheDirSource::option;
    return;
  }
  if (switch_variable("JITWARM_NO_CACHE_DIR")) {
    s.directory_source = CacheDirSource::disabled_by_environment;
    return;
  }
  if (auto dir = variable("JITWARM_CACHE_DIR")) {
    s.directory = *dir;
    s.directory_source = CacheDirSource::environment;
    return;
  }
  // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
  if (auto xdg = variable("XDG_CACHE_HOME"); xdg && xdg->front() == '/') {
    s.directory = (std::filesystem::path(*xdg) / "jitwarm").string();
    s.directory_source = CacheDirSource::xdg_cache_home;
    return;
  }
  if (auto home = variable("HOME")) {
    s.directory =
        (std::filesystem::path(*home) / ".cache" / "jitwarm").string();
    s.directory_source = CacheDirSource::home;
    return;
  }
  s.directory_source = CacheDirSource::no_home;
}

void resolve_remote(const RuntimeOptions& options, CacheSettings& s) {
  const bool keywords =
      options.option_names == RuntimeOptions::OptionNames::keywords;
  std::string url;
  if (options.no_remote_cache) {
    s.remote_source = keywords ? "disabled (no_remote_cache=True)"
                               : "disabled (--no-remote-cache)";
  } else if (!options.remote_cache.empty()) {
    url = options.remote_cache;
    s.remote_source = keywords ? "remote_cache" : "--remote-cache";
  } else if (auto v = variable("JITWARM_REMOTE_CACHE")) {
    url = *v;
    s.remote_source = "JITWARM_REMOTE_CACHE";
  }
  if (!url.empty()) {
    s.remote_display = detail::parse_redis_url(url, s.remote_source).display();
    s.remote = std::move(url);
  }
  if (options.remote_timeout.count() != 0) {
    if (options.remote_timeout.count() < 0 ||
        options.remote_timeout > kMaxRemoteTimeout) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "remote cache timeout {} ms: use 1 ms to 10 minutes",
           options.remote_timeout.count());
    }
    s.remote_timeout = options.remote_timeout;
  } else if (auto v = variable("JITWARM_REMOTE_CACHE_TIMEOUT_MS")) {
    int64_t ms = 0;
    const auto [end, error] =
        std::from_chars(v->data(), v->data() + v->size(), ms);
    if (error != std::errc() || end != v->data() + v->size() || ms < 1 ||
        std::chrono::milliseconds(ms) > kMaxRemoteTimeout) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "JITWARM_REMOTE_CACHE_TIMEOUT_MS='{}': use a whole number of "
           "milliseconds from 1 to 600000",
           *v);
    }
    s.remote_timeout = std::chrono::milliseconds(ms);
  }
}

}  // namespace

std::string_view to_string(CacheDirSource source) {
  switch (source) {
    case CacheDirSource::option: return "--cache-dir";
    case CacheDirSource::environment: return "JITWARM_CACHE_DIR";
    case CacheDirSource::xdg_cache_home:
      return "the per-user default ($XDG_CACHE_HOME/jitwarm)";
    case CacheDirSource::home:
      return "the per-user default ($HOME/.cache/jitwarm)";
    case CacheDirSource::disabled_by_option: return "disabled (--no-cache-dir)";
    case CacheDirSource::disabled_by_environment:
      return "disabled (JITWARM_NO_CACHE_DIR)";
    case CacheDirSource::no_home:
      return "none (neither XDG_CACHE_HOME nor HOME is set)";
  }
  return "unknown";
}

CacheSettings resolve_cache_settings(const RuntimeOptions& options) {
  CacheSettings s;
  resolve_directory(options, s);
  if (!s.directory.empty()) {
    s.system_directory =
        !options.system_cache_dir.empty()
            ? options.system_cache_dir
            : variable("JITWARM_SYSTEM_CACHE_DIR").value_or("");
    if (options.cache_max_bytes) {
      s.max_bytes = *options.cache_max_bytes;
    } else if (auto b = variable("JITWARM_CACHE_MAX_BYTES")) {
      try {
        s.max_bytes = parse_byte_size(*b);
      } catch (const Error& e) {
        fail(JW_ERROR_INVALID_ARGUMENT, "JITWARM_CACHE_MAX_BYTES: {}",
             e.what());
      }
    }
  }
  resolve_remote(options, s);
  detail::resolve_trust_settings(options, s);
  return s;
}

}  // namespace jitwarm
