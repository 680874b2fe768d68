// resolve_cache_settings, the one place cache settings come from: the
// per-user default (XDG), every variable and option and which wins, a
// request for no directory, bad values named, Redis URLs; and a runtime
// whose default directory cannot be made (memory only, said once) against
// one whose named directory cannot (an error); the trust settings (keys,
// the remote tier's mode) from options and variables.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <cstdlib>
#include <map>
#include <optional>

#include "redis_url.hpp"
#include "temporary_directory.hpp"

using namespace jitwarm;
using namespace jitwarm::detail;

namespace {

// Sets the cache variables for a test (unset when not given) and puts the
// old values back after it.
class Environment {
 public:
  using Values = std::map<std::string, std::string>;
  explicit Environment(const Values& values) {
    for (const char* name :
         {"HOME", "XDG_CACHE_HOME", "JITWARM_CACHE_DIR", "JITWARM_NO_CACHE_DIR",
          "JITWARM_SYSTEM_CACHE_DIR", "JITWARM_CACHE_MAX_BYTES",
          "JITWARM_REMOTE_CACHE", "JITWARM_REMOTE_CACHE_TIMEOUT_MS",
          "JITWARM_REMOTE_CACHE_MODE", "JITWARM_SIGNING_KEY",
          "JITWARM_TRUSTED_KEYS"}) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      ::unsetenv(name);
    }
    for (const auto& [name, value] : values)
      ::setenv(name.c_str(), value.c_str(), 1);
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  ~Environment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

RuntimeOptions dir_option(std::string dir) {
  RuntimeOptions o;
  o.cache_dir = std::move(dir);
  return o;
}

}  // namespace

TEST_CASE(
    "given only HOME, then the cache is ~/.cache/jitwarm; XDG_CACHE_HOME, "
    "when absolute, replaces ~/.cache") {
  {
    Environment env(Environment::Values{{"HOME", "/home/u"}});
    const CacheSettings s = resolve_cache_settings();
    CHECK(s.directory == "/home/u/.cache/jitwarm");
    CHECK(s.directory_source == CacheDirSource::home);
    CHECK(s.default_directory());
    CHECK(s.remote.empty());
    CHECK(s.remote_timeout == std::chrono::milliseconds(1000));
  }
  {
    Environment env({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}});
    const CacheSettings s = resolve_cache_settings();
    CHECK(s.directory == "/xdg/jitwarm");
    CHECK(s.directory_source == CacheDirSource::xdg_cache_home);
  }
  {
    // The XDG spec: a relative path is invalid, and ignored.
    Environment env({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "rel"}});
    CHECK(resolve_cache_settings().directory == "/home/u/.cache/jitwarm");
  }
  {
    Environment env(Environment::Values{});
    const CacheSettings s = resolve_cache_settings();
    CHECK(s.directory.empty());
    CHECK(s.directory_source == CacheDirSource::no_home);
    CHECK_FALSE(s.persistent());
  }
}

TEST_CASE(
    "given a directory named by option, variable and default, then the "
    "option wins, then JITWARM_CACHE_DIR; an empty variable is unset") {
  Environment env({{"HOME", "/home/u"}, {"JITWARM_CACHE_DIR", "/env"}});
  CHECK(resolve_cache_settings().directory == "/env");
  CHECK(resolve_cache_settings().directory_source ==
        CacheDirSource::environment);
  const CacheSettings s = resolve_cache_settings(dir_option("/opt"));
  CHECK(s.directory == "/opt");
  CHECK(s.directory_source == CacheDirSource::option);
  CHECK_FALSE(s.default_directory());
  ::setenv("JITWARM_CACHE_DIR", "", 1);
  CHECK(resolve_cache_settings().directory == "/home/u/.cache/jitwarm");
}

TEST_CASE(
    "given a request for no directory, then none, from the option above all "
    "and from JITWARM_NO_CACHE_DIR above the variable, not the option") {
  Environment env({{"HOME", "/home/u"},
                   {"JITWARM_CACHE_DIR", "/env"},
                   {"JITWARM_NO_CACHE_DIR", "1"}});
  CacheSettings s = resolve_cache_settings();
  CHECK(s.directory.empty());
  CHECK(s.directory_source == CacheDirSource::disabled_by_environment);
  CHECK(to_string(s.directory_source) == "disabled (JITWARM_NO_CACHE_DIR)");
  CHECK(resolve_cache_settings(dir_option("/opt")).directory == "/opt");
  RuntimeOptions none = dir_option("/opt");
  none.no_cache_dir = true;
  s = resolve_cache_settings(none);
  CHECK(s.directory.empty());
  CHECK(s.directory_source == CacheDirSource::disabled_by_option);
  for (const char* off : {"0", "false", "no", "off"}) {
    ::setenv("JITWARM_NO_CACHE_DIR", off, 1);
    CHECK(resolve_cache_settings().directory == "/env");
  }
  ::setenv("JITWARM_NO_CACHE_DIR", "maybe", 1);
  CHECK_THROWS_WITH(resolve_cache_settings(),
                    doctest::Contains("JITWARM_NO_CACHE_DIR='maybe'"));
}

TEST_CASE(
    "given the system layer and a budget, then they come from the options, "
    "else the environment; a bad budget names its variable") {
  Environment env({{"HOME", "/home/u"},
                   {"JITWARM_SYSTEM_CACHE_DIR", "/sys-cache"},
                   {"JITWARM_CACHE_MAX_BYTES", "2G"}});
  CacheSettings s = resolve_cache_settings();
  CHECK(s.system_directory == "/sys-cache");
  CHECK(s.max_bytes == (2ull << 30));
  RuntimeOptions o;
  o.system_cache_dir = "/other";
  o.cache_max_bytes = 1000;
  s = resolve_cache_settings(o);
  CHECK(s.system_directory == "/other");
  CHECK(s.max_bytes == 1000);
  ::setenv("JITWARM_CACHE_MAX_BYTES", "lots", 1);
  CHECK_THROWS_WITH(resolve_cache_settings(),
                    doctest::Contains("JITWARM_CACHE_MAX_BYTES"));
}

TEST_CASE(
    "given a remote cache from the variable or the option, then the option "
    "wins, no_remote_cache wins over both, and the password is never shown") {
  Environment env({{"JITWARM_REMOTE_CACHE", "redis://cache.example:7000/2"},
                   {"JITWARM_REMOTE_CACHE_TIMEOUT_MS", "250"}});
  CacheSettings s = resolve_cache_settings();
  CHECK(s.remote == "redis://cache.example:7000/2");
  CHECK(s.remote_display == "redis://cache.example:7000/2");
  CHECK(s.remote_source == "JITWARM_REMOTE_CACHE");
  CHECK(s.remote_timeout == std::chrono::milliseconds(250));
  CHECK(s.persistent());  // shared, even with no directory
  RuntimeOptions o;
  o.remote_cache = "redis://:s3cret@10.0.0.1";
  o.remote_timeout = std::chrono::milliseconds(40);
  s = resolve_cache_settings(o);
  CHECK(s.remote == "redis://:s3cret@10.0.0.1");
  CHECK(s.remote_display == "redis://:***@10.0.0.1:6379/0");
  CHECK(s.remote_timeout == std::chrono::milliseconds(40));
  o.no_remote_cache = true;
  s = resolve_cache_settings(o);
  CHECK(s.remote.empty());
  CHECK(s.remote_source == "disabled (--no-remote-cache)");
  for (const char* bad : {"0", "-5", "1s", "600001"}) {
    ::setenv("JITWARM_REMOTE_CACHE_TIMEOUT_MS", bad, 1);
    CHECK_THROWS_WITH(resolve_cache_settings(),
                      doctest::Contains("JITWARM_REMOTE_CACHE_TIMEOUT_MS"));
  }
  ::unsetenv("JITWARM_REMOTE_CACHE_TIMEOUT_MS");
  ::setenv("JITWARM_REMOTE_CACHE", "http://cache:6379", 1);
  CHECK_THROWS_WITH(
      resolve_cache_settings(),
      doctest::Contains("JITWARM_REMOTE_CACHE 'http://cache:6379' "
                        "is not a Redis URL"));
}

TEST_CASE("given Redis URLs, then each is read or refused saying why") {
  RedisEndpoint e = parse_redis_url("redis://localhost", "u");
  CHECK(e.host == "localhost");
  CHECK(e.port == 6379);
  CHECK(e.database == 0);
  CHECK(e.password.empty());
  e = parse_redis_url("redis://user:p@ss@[::1]:7001/15", "u");
  CHECK(e.host == "::1");
  CHECK(e.port == 7001);
  CHECK(e.database == 15);
  CHECK(e.user == "user");
  CHECK(e.password == "p@ss");
  CHECK(e.display() == "redis://user:***@[::1]:7001/15");
  CHECK(parse_redis_url("redis://h:1/", "u").database == 0);
  for (const auto& [url, why] :
       std::vector<std::pair<std::string, std::string>>{
           {"rediss://h", "does not start with redis://"},
           {"redis://", "there is no host"},
           {"redis://:6379", "there is no host"},
           {"redis://h:", "the port after ':' is empty"},
           {"redis://h:0", "the port '0'"},
           {"redis://h:65536", "the port '65536'"},
           {"redis://h:x1", "the port 'x1'"},
           {"redis://h/db", "the database 'db'"},
           {"redis://pw@h", "need a ':'"},
           {"redis://[::1", "lacks its ']'"}}) {
    CAPTURE(url);
    try {
      (void)parse_redis_url(url, "--remote-cache");
      FAIL("accepted");
    } catch (const Error& error) {
      CHECK(error.status() == JW_ERROR_INVALID_ARGUMENT);
      const std::string message = error.what();
      CHECK(message.find(why) != std::string::npos);
      CHECK(message.find("--remote-cache") != std::string::npos);
    }
  }
}

TEST_CASE(
    "given a default directory that cannot be made, then a runtime runs from "
    "memory with one warning; a named one is an error") {
  Environment env(Environment::Values{{"HOME", "/proc/jitwarm-no-such-home"}});
  std::vector<std::string> warnings;
  RuntimeOptions o;
  o.log = [&](jw_log_level level, const std::string& m) {
    if (level >= JW_LOG_WARNING) warnings.push_back(m);
  };
  Runtime runtime(o);
  const CacheSettings& s = runtime.cache_settings();
  CHECK(s.directory == "/proc/jitwarm-no-such-home/.cache/jitwarm");
  CHECK(s.problem.find("cannot create cache directory") != std::string::npos);
  CHECK_FALSE(s.persistent());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("kept in memory only") != std::string::npos);
  o.cache_dir = "/proc/jitwarm-no-such-dir";
  CHECK_THROWS_WITH(Runtime{o},
                    doctest::Contains("cannot create cache directory"));
}

TEST_CASE(
    "given trust settings, then options beat variables, a comma-separated "
    "list of keys and files reads as every key, and bad values name their "
    "setting") {
  jitwarm::detail::TemporaryDirectory dir("jitwarm-settings-keys-");
  const CacheKeyPair a = write_cache_key_pair((dir.path() / "a.key").string());
  const CacheKeyPair b = write_cache_key_pair((dir.path() / "b.key").string());
  {
    Environment env(
        {{"JITWARM_TRUSTED_KEYS", a.public_key + " , " + b.public_key_file},
         {"JITWARM_SIGNING_KEY", b.secret_key_file},
         {"JITWARM_REMOTE_CACHE_MODE", "read-only"}});
    CacheSettings s = resolve_cache_settings();
    CHECK(s.trusted_key_ids == std::vector<std::string>{a.key_id, b.key_id});
    CHECK(s.trusted_keys_source == "JITWARM_TRUSTED_KEYS");
    CHECK(s.signing_key_id == b.key_id);
    CHECK(s.signing_key_source == "JITWARM_SIGNING_KEY");
    CHECK(s.remote_mode == RemoteCacheMode::read_only);
    RuntimeOptions o;
    o.trusted_keys = {b.public_key};
    o.signing_key = a.secret_key_file;
    o.remote_cache_mode = RemoteCacheMode::read_write;
    s = resolve_cache_settings(o);
    CHECK(s.trusted_key_ids == std::vector<std::string>{b.key_id});
    CHECK(s.trusted_keys_source == "--trusted-key");
    CHECK(s.signing_key_id == a.key_id);
    CHECK(s.remote_mode == RemoteCacheMode::read_write);
  }
  {
    Environment env(Environment::Values{});
    const CacheSettings s = resolve_cache_settings();
    CHECK(s.trusted_keys.empty());
    CHECK(s.signing_key.empty());
    CHECK(s.remote_mode == RemoteCacheMode::read_write);
  }
  for (const auto& [name, value] : std::map<std::string, std::string>{
           {"JITWARM_REMOTE_CACHE_MODE", "sometimes"},
           {"JITWARM_TRUSTED_KEYS", "jitwarm-ed25519:AAAA"},
           {"JITWARM_SIGNING_KEY", a.public_key_file}}) {
    Environment env(Environment::Values{{name, value}});
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(resolve_cache_settings(),
                         doctest::Contains(name.c_str()), Error);
  }
}
