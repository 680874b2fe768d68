#include "redis_url.hpp"

#include <charconv>

#include "errors.hpp"

namespace jitwarm::detail {
namespace {

constexpr std::string_view kScheme = "redis://";
constexpr std::string_view kForm = "redis://[:password@]host[:port][/db]";

template <typename Int>
bool parse_whole(std::string_view text, Int min, Int max, Int* out) {
  Int value{};
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() ||
      end != text.data() + text.size() || value < min || value > max) {
    return false;
  }
  *out = value;
  return true;
}

}  // namespace

std::string RedisEndpoint::display() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return fmt::format("redis://{}{}:{}/{}",
                     password.empty() ? "" : user + ":***@",
                     ipv6 ? "[" + host + "]" : host, port, database);
}

RedisEndpoint parse_redis_url(std::string_view url, std::string_view what) {
  const auto bad = [&](std::string_view problem) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{} '{}' is not a Redis URL: {} (use {}, e.g. "
         "redis://127.0.0.1:6379/0)",
         what, url, problem, kForm);
  };
  if (!url.starts_with(kScheme)) bad("it does not start with redis://");
  std::string_view rest = url.substr(kScheme.size());
  RedisEndpoint e;
  // The password may hold any character but '@' comes last before the host.
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    const auto colon = credentials.find(':');
    if (colon == std::string_view::npos) {
      bad("credentials before '@' need a ':' before the password");
    }
    e.user = std::string(credentials.substr(0, colon));
    e.password = std::string(credentials.substr(colon + 1));
    if (e.password.empty()) bad("the password after ':' is empty");
  }
  std::string_view authority = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && !parse_whole<int64_t>(db, 0, INT32_MAX, &e.database))
      bad(fmt::format("the database '{}' is not a whole number", db));
  }
  std::string_view port;
  if (authority.starts_with('[')) {  // [IPv6]:port
    const auto close = authority.find(']');
    if (close == std::string_view::npos) bad("an IPv6 address lacks its ']'");
    e.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty()) {
      if (authority[0] != ':') bad("something follows the IPv6 address");
      port = authority.substr(1);
      if (port.empty()) bad("the port after ':' is empty");
    }
  } else {
    const auto colon = authority.find(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) bad("the port after ':' is empty");
    }
  }
  if (e.host.empty()) bad("there is no host");
  if (!port.empty() && !parse_whole<int>(port, 1, 65535, &e.port))
    bad(fmt::format("the port '{}' is not a number from 1 to 65535", port));
  return e;
}

}  // namespace jitwarm::detail
