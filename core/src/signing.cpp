#include "signing.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "bounded_file.hpp"
#include "errors.hpp"
#include "file_descriptor.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kPublicPrefix = "jitwarm-ed25519:";
constexpr std::string_view kSecretPrefix = "jitwarm-ed25519-secret:";
// A key file is a line or a few; anything larger is not one.
constexpr uint64_t kMaxKeyFileBytes = 64 << 10;

static_assert(crypto_sign_PUBLICKEYBYTES == 32);
static_assert(crypto_sign_SECRETKEYBYTES == 64);
static_assert(crypto_sign_BYTES == kSignatureBytes);

void ensure_sodium() {
  static const int ready = sodium_init();
  if (ready < 0) fail(JW_ERROR_INTERNAL, "libsodium failed to initialize");
}

std::string_view trimmed(std::string_view s) {
  const auto blank = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string base64(const unsigned char* bytes, std::size_t n) {
  std::string out(sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL),
                  '\0');
  sodium_bin2base64(out.data(), out.size(), bytes, n,
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::strlen(out.c_str()));
  return out;
}

// Decodes exactly `n` bytes of base64; false for anything else.
bool from_base64(std::string_view text, unsigned char* out, std::size_t n) {
  std::size_t got = 0;
  const char* end = nullptr;
  return sodium_base642bin(out, n, text.data(), text.size(), nullptr, &got,
                           &end, sodium_base64_VARIANT_ORIGINAL) == 0 &&
         got == n && end == text.data() + text.size();
}

std::string key_id(const std::array<unsigned char, 32>& public_key) {
  unsigned char hash[32];
  crypto_generichash(hash, sizeof(hash), public_key.data(), public_key.size(),
                     nullptr, 0);
  return std::string(reinterpret_cast<const char*>(hash), kKeyIdBytes);
}

PublicKey public_key_of(const std::array<unsigned char, 32>& bytes) {
  PublicKey key;
  key.bytes = bytes;
  key.id = key_id(bytes);
  return key;
}

std::string read_key_file(const fs::path& path, std::string_view source) {
  const FileContents file =
      read_bounded_file(path, kMaxKeyFileBytes, Symlinks::follow);
  if (!file.ok()) {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}: key file {} {}", source, path.string(),
         file.why);
  }
  return file.bytes;
}

void write_new_file(const fs::path& path, const std::string& text,
                    mode_t mode) {
  FileDescriptor fd(::open(path.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           mode));
  if (fd.get() < 0) {
    const int error = errno;
    fail(error == EEXIST ? JW_ERROR_ALREADY_EXISTS : JW_ERROR_IO,
         "cannot write key file {}: {}", path.string(),
         error == EEXIST ? "it exists (keys are never overwritten)"
                         : std::strerror(error));
  }
  // The umask may have taken bits off; a secret key must be 0600 exactly.
  if (::fchmod(fd.get(), mode) != 0 ||
      ::write(fd.get(), text.data(), text.size()) !=
          static_cast<ssize_t>(text.size()) ||
      fd.close() != 0) {
    const int error = errno;
    ::unlink(path.c_str());
    fail(JW_ERROR_IO, "cannot write key file {}: {}", path.string(),
         std::strerror(error));
  }
}

}  // namespace

std::string to_hex(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (const char c : raw)
    out += fmt::format("{:02x}", static_cast<uint8_t>(c));
  return out;
}

std::string PublicKey::id_hex() const {
  return to_hex(id);
}

std::string PublicKey::text() const {
  return std::string(kPublicPrefix) + base64(bytes.data(), bytes.size());
}

std::string SigningKey::text() const {
  return std::string(kSecretPrefix) + base64(secret.data(), secret.size()) +
         "\n";
}

SigningKey generate_signing_key() {
  ensure_sodium();
  SigningKey key;
  std::array<unsigned char, 32> public_bytes{};
  crypto_sign_keypair(public_bytes.data(), key.secret.data());
  key.public_key = public_key_of(public_bytes);
  return key;
}

SigningKey signing_key_from_seed(std::string_view seed) {
  ensure_sodium();
  if (seed.size() != crypto_sign_SEEDBYTES)
    fail(JW_ERROR_INVALID_ARGUMENT, "a key seed has {} bytes, not {}",
         crypto_sign_SEEDBYTES, seed.size());
  SigningKey key;
  std::array<unsigned char, 32> public_bytes{};
  crypto_sign_seed_keypair(public_bytes.data(), key.secret.data(),
                           reinterpret_cast<const unsigned char*>(seed.data()));
  key.public_key = public_key_of(public_bytes);
  return key;
}

PublicKey parse_public_key(std::string_view text, std::string_view source) {
  ensure_sodium();
  const std::string_view t = trimmed(text);
  std::array<unsigned char, 32> bytes{};
  if (!t.starts_with(kPublicPrefix) ||
      !from_base64(t.substr(kPublicPrefix.size()), bytes.data(),
                   bytes.size())) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: '{}' is not a jitwarm public key (a line "
         "'jitwarm-ed25519:<base64>', as `jitwarm cache keygen` writes to "
         "KEY.pub)",
         source, t.substr(0, 80));
  }
  return public_key_of(bytes);
}

SigningKey read_signing_key(const fs::path& path, std::string_view source) {
  ensure_sodium();
  const std::string text = read_key_file(path, source);
  const std::string_view t = trimmed(text);
  SigningKey key;
  if (!t.starts_with(kSecretPrefix) ||
      !from_base64(t.substr(kSecretPrefix.size()), key.secret.data(),
                   key.secret.size())) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: {} is not a jitwarm secret key (the file `jitwarm cache "
         "keygen -o FILE` writes; FILE.pub is its public key)",
         source, path.string());
  }
  std::array<unsigned char, 32> public_bytes{};
  crypto_sign_ed25519_sk_to_pk(public_bytes.data(), key.secret.data());
  key.public_key = public_key_of(public_bytes);
  return key;
}

std::vector<PublicKey> read_trusted_keys(std::string_view file_or_text,
                                         std::string_view source) {
  const std::string_view given = trimmed(file_or_text);
  if (given.starts_with(kPublicPrefix))
    return {parse_public_key(given, source)};
  const std::string text = read_key_file(std::string(given), source);
  std::vector<PublicKey> keys;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = trimmed(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view()
                                         : rest.substr(end + 1);
    if (line.empty() || line.front() == '#') continue;
    keys.push_back(parse_public_key(
        line, fmt::format("{} (file {})", source, std::string(given))));
  }
  if (keys.empty()) {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}: key file {} holds no public key",
         source, std::string(given));
  }
  return keys;
}

std::string sign_message(const SigningKey& key, std::string_view message) {
  ensure_sodium();
  std::string signature(kSignatureBytes, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()),
                       nullptr,
                       reinterpret_cast<const unsigned char*>(message.data()),
                       message.size(), key.secret.data());
  return signature;
}

bool signature_matches(const PublicKey& key, std::string_view message,
                       std::string_view signature) {
  ensure_sodium();
  return signature.size() == kSignatureBytes &&
         crypto_sign_verify_detached(
             reinterpret_cast<const unsigned char*>(signature.data()),
             reinterpret_cast<const unsigned char*>(message.data()),
             message.size(), key.bytes.data()) == 0;
}

std::string sha256(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.digest();
}

static_assert(sizeof(crypto_hash_sha256_state) <= 128);

Sha256::Sha256() {
  ensure_sodium();
  crypto_hash_sha256_init(reinterpret_cast<crypto_hash_sha256_state*>(state_));
}

void Sha256::update(std::string_view bytes) {
  crypto_hash_sha256_update(
      reinterpret_cast<crypto_hash_sha256_state*>(state_),
      reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string Sha256::digest() {
  std::string out(crypto_hash_sha256_BYTES, '\0');
  crypto_hash_sha256_final(reinterpret_cast<crypto_hash_sha256_state*>(state_),
                           reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

SigningKey write_key_pair(const fs::path& path) {
  const fs::path public_path = fs::path(path.string() + ".pub");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(public_path, ec))) {
    fail(JW_ERROR_ALREADY_EXISTS,
         "cannot write key file {}: it exists (keys are never overwritten)",
         public_path.string());
  }
  SigningKey key = generate_signing_key();
  write_new_file(path, key.text(), 0600);
  try {
    write_new_file(public_path, key.public_key.text() + "\n", 0644);
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
  return key;
}

}  // namespace jitwarm::detail
