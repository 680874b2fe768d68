// Ed25519 keys and signatures for cache entries and bundles (libsodium; no
// cryptography of jitwarm's own). docs/operators.md, "Trust", says how the
// keys are used.
//
// * A key pair is two text files: the secret key ("build.key", mode 0600,
//   "jitwarm-ed25519-secret:<base64 of libsodium's 64-byte secret key>")
//   and the public key ("build.key.pub", one line,
//   "jitwarm-ed25519:<base64 of the 32-byte public key>"), a line an
//   operator can paste into configuration as it is.
// * A key's id is the first 8 bytes of BLAKE2b-256 of its public key: what
//   a signed entry names its signer by (16 hex digits when printed), so a
//   reader picks the one key to check against instead of trying them all.
// * Bad key text or an unreadable key file is Error(JW_ERROR_INVALID_ARGUMENT)
//   naming where it came from; verification never throws.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::detail {

inline constexpr std::size_t kKeyIdBytes = 8;
inline constexpr std::size_t kSignatureBytes = 64;

struct PublicKey {
  std::array<unsigned char, 32> bytes{};
  std::string id;  // kKeyIdBytes raw bytes
  // The id as 16 hex digits, for messages.
  std::string id_hex() const;
  // The one-line text form ("jitwarm-ed25519:...").
  std::string text() const;
};

struct SigningKey {
  std::array<unsigned char, 64> secret{};
  PublicKey public_key;
  // The secret key file's text.
  std::string text() const;
};

// A fresh key pair from libsodium's random source.
SigningKey generate_signing_key();
// The key pair of a 32-byte seed: the same key every time, for fuzz seeds
// and their harnesses (never for keys anyone trusts).
SigningKey signing_key_from_seed(std::string_view seed);

// "jitwarm-ed25519:<base64>" (surrounding blanks ignored); throws naming
// `source` ("--trusted-key", "JITWARM_TRUSTED_KEYS").
PublicKey parse_public_key(std::string_view text, std::string_view source);
// The secret key file at `path` (keygen's format); throws naming `source`.
SigningKey read_signing_key(const std::filesystem::path& path,
                            std::string_view source);
// A trusted key given as its text, or as a file holding one key per line
// (blank lines and '#' comments skipped): what --trusted-key takes.
std::vector<PublicKey> read_trusted_keys(std::string_view file_or_text,
                                         std::string_view source);

// The detached signature of `message` (kSignatureBytes).
std::string sign_message(const SigningKey& key, std::string_view message);
bool signature_matches(const PublicKey& key, std::string_view message,
                       std::string_view signature);

// SHA-256 of `bytes`, raw (32 bytes), and the incremental form for bundles.
std::string sha256(std::string_view bytes);
class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::string digest();  // raw, 32 bytes; once

 private:
  alignas(64) unsigned char state_[128];
};
// Lower-case hex of raw bytes.
std::string to_hex(std::string_view raw);

// Writes a new key pair: the secret key to `path` (mode 0600, refused when
// something is there already) and its public key to `path` + ".pub".
// Throws Error(JW_ERROR_ALREADY_EXISTS) or Error(JW_ERROR_IO).
SigningKey write_key_pair(const std::filesystem::path& path);

}  // namespace jitwarm::detail
