#include "trust_settings.hpp"

#include <cstdlib>

#include "errors.hpp"

namespace jitwarm {

std::string_view to_string(RemoteCacheMode mode) {
  return mode == RemoteCacheMode::read_only ? "read-only" : "read-write";
}

RemoteCacheMode parse_remote_cache_mode(std::string_view text) {
  if (text == "read-write") return RemoteCacheMode::read_write;
  if (text == "read-only") return RemoteCacheMode::read_only;
  detail::fail(JW_ERROR_INVALID_ARGUMENT,
               "remote cache mode '{}': use read-write or read-only", text);
}

}  // namespace jitwarm

namespace jitwarm::detail {
namespace {

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// "a,b , c" -> {"a", "b", "c"}; empty items dropped.
std::vector<std::string> comma_list(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) items.emplace_back(item);
    text = comma == std::string_view::npos ? std::string_view()
                                           : text.substr(comma + 1);
  }
  return items;
}

}  // namespace

void resolve_trust_settings(const RuntimeOptions& options, CacheSettings& s) {
  if (options.remote_cache_mode) {
    s.remote_mode = *options.remote_cache_mode;
  } else if (const std::string v = environment("JITWARM_REMOTE_CACHE_MODE");
             !v.empty()) {
    try {
      s.remote_mode = parse_remote_cache_mode(v);
    } catch (const Error& e) {
      fail(JW_ERROR_INVALID_ARGUMENT, "JITWARM_REMOTE_CACHE_MODE: {}",
           e.what());
    }
  }

  if (!options.signing_key.empty()) {
    s.signing_key = options.signing_key;
    s.signing_key_source = "--signing-key";
  } else if (std::string v = environment("JITWARM_SIGNING_KEY"); !v.empty()) {
    s.signing_key = std::move(v);
    s.signing_key_source = "JITWARM_SIGNING_KEY";
  }
  if (!s.signing_key.empty()) {
    s.signing_key_id = read_signing_key(s.signing_key, s.signing_key_source)
                           .public_key.id_hex();
  }

  std::vector<std::string> given = options.trusted_keys;
  s.trusted_keys_source = "--trusted-key";
  if (given.empty()) {
    given = comma_list(environment("JITWARM_TRUSTED_KEYS"));
    s.trusted_keys_source = given.empty() ? "" : "JITWARM_TRUSTED_KEYS";
  }
  if (given.empty()) s.trusted_keys_source.clear();
  for (const std::string& item : given) {
    for (const PublicKey& key :
         read_trusted_keys(item, s.trusted_keys_source)) {
      s.trusted_keys.push_back(key.text());
      s.trusted_key_ids.push_back(key.id_hex());
    }
  }
}

std::shared_ptr<const EntryTrust> make_entry_trust(const CacheSettings& s) {
  std::optional<SigningKey> signer;
  if (!s.signing_key.empty())
    signer = read_signing_key(s.signing_key, s.signing_key_source);
  std::vector<PublicKey> trusted;
  for (const std::string& text : s.trusted_keys)
    trusted.push_back(parse_public_key(text, s.trusted_keys_source));
  return std::make_shared<const EntryTrust>(std::move(signer),
                                            std::move(trusted));
}

}  // namespace jitwarm::detail
