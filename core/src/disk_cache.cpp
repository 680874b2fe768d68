#include "disk_cache.hpp"

#define XXH_INLINE_ALL
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "errors.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

constexpr char kEntryMagic[8] = {'J', 'W', 'C', 'A', 'C', 'H', 'E', '\n'};
constexpr std::string_view kEntrySuffix = ".jwc";
// Bounds that keep a corrupt length from allocating absurd amounts.
constexpr uint64_t kMaxFieldBytes = 1ull << 30;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void put_field(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

struct Cursor {
  std::string_view in;
  std::size_t pos = 0;
  bool ok = true;
  uint64_t u(int bytes) {
    if (in.size() - pos < static_cast<std::size_t>(bytes)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in[pos + i])) << (8 * i);
    }
    pos += bytes;
    return v;
  }
  std::string_view field() {
    const uint64_t n = u(8);
    if (!ok || n > kMaxFieldBytes || in.size() - pos < n) {
      ok = false;
      return {};
    }
    std::string_view s = in.substr(pos, n);
    pos += n;
    return s;
  }
};

std::string entry_name(const CompileKey& key, std::string_view fingerprint) {
  std::string material;
  put_u32(material, DiskCache::kFormatVersion);
  put_field(material, key.encoding());
  put_field(material, fingerprint);
  const XXH128_hash_t h = XXH3_128bits(material.data(), material.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string serialize(const CompileKey& key, std::string_view fingerprint,
                      const Artifact& artifact) {
  std::string out(kEntryMagic, sizeof(kEntryMagic));
  put_u32(out, DiskCache::kFormatVersion);
  put_field(out, key.encoding());
  put_field(out, fingerprint);
  put_field(out, artifact.format);
  put_field(out, artifact.entry_point);
  put_field(out, artifact.binary);
  put_u64(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

struct ParsedEntry {
  std::string_view key_encoding, fingerprint, format, entry_point, binary;
};

// Structure and checksum; nullopt when anything is off.
std::optional<ParsedEntry> parse(std::string_view bytes, std::string* why) {
  if (bytes.size() < sizeof(kEntryMagic) + 4 + 8 ||
      std::memcmp(bytes.data(), kEntryMagic, sizeof(kEntryMagic)) != 0) {
    *why = "bad magic";
    return std::nullopt;
  }
  Cursor c{bytes.substr(0, bytes.size() - 8), sizeof(kEntryMagic)};
  const uint64_t version = c.u(4);
  if (version != DiskCache::kFormatVersion) {
    *why = fmt::format("format version {} (this build reads {})", version,
                       DiskCache::kFormatVersion);
    return std::nullopt;
  }
  ParsedEntry e;
  e.key_encoding = c.field();
  e.fingerprint = c.field();
  e.format = c.field();
  e.entry_point = c.field();
  e.binary = c.field();
  if (!c.ok || c.pos != c.in.size()) {
    *why = "truncated or malformed";
    return std::nullopt;
  }
  Cursor tail{bytes, bytes.size() - 8};
  const uint64_t stored = tail.u(8);
  if (stored != XXH3_64bits(bytes.data(), bytes.size() - 8)) {
    *why = "checksum mismatch";
    return std::nullopt;
  }
  return e;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(ss).str();
}

bool is_entry_file(const fs::directory_entry& e) {
  return e.is_regular_file() && e.path().extension() == kEntrySuffix;
}

}  // namespace

uint64_t parse_byte_size(std::string_view text) {
  if (text.empty()) fail(JW_ERROR_INVALID_ARGUMENT, "empty size");
  uint64_t multiplier = 1;
  char last = text.back();
  if (last == 'K' || last == 'k') multiplier = 1ull << 10;
  if (last == 'M' || last == 'm') multiplier = 1ull << 20;
  if (last == 'G' || last == 'g') multiplier = 1ull << 30;
  if (multiplier != 1) text.remove_suffix(1);
  uint64_t value = 0;
  if (text.empty()) fail(JW_ERROR_INVALID_ARGUMENT, "size has no digits");
  for (char c : text) {
    if (c < '0' || c > '9') {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "bad size '{}': use bytes or a K/M/G suffix", text);
    }
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value * multiplier;
}

DiskCache::DiskCache(fs::path directory, fs::path system_directory,
                     uint64_t max_bytes, const Logger* logger)
    : directory_(std::move(directory)),
      system_directory_(std::move(system_directory)),
      max_bytes_(max_bytes),
      logger_(logger) {
  std::error_code ec;
  fs::create_directories(directory_ / "v1", ec);
  if (ec) {
    fail(JW_ERROR_IO, "cannot create cache directory {}: {}",
         directory_.string(), ec.message());
  }
}

fs::path DiskCache::entry_path(const CompileKey& key,
                               std::string_view fingerprint) const {
  const std::string name = entry_name(key, fingerprint);
  return directory_ / "v1" / name.substr(0, 2) /
         (name + std::string(kEntrySuffix));
}

std::optional<Artifact> DiskCache::read_entry(const fs::path& path,
                                              const CompileKey& key,
                                              std::string_view fingerprint,
                                              bool* rejected) const {
  std::optional<std::string> bytes = read_file(path);
  if (!bytes) return std::nullopt;  // absent: a plain miss
  std::string why;
  std::optional<ParsedEntry> e = parse(*bytes, &why);
  if (e &&
      (e->key_encoding != key.encoding() || e->fingerprint != fingerprint)) {
    e.reset();
    why = "it belongs to another key or build (hash collision or stale entry)";
  }
  if (!e) {
    if (rejected != nullptr) *rejected = true;
    if (logger_ != nullptr) {
      logger_->log(JW_LOG_WARNING,
                   fmt::format("cache entry {} ignored: {}; compiling {}",
                               path.string(), why, key.text()));
    }
    return std::nullopt;
  }
  Artifact a;
  a.binary = std::string(e->binary);
  a.format = std::string(e->format);
  a.entry_point = std::string(e->entry_point);
  return a;
}

std::optional<Artifact> DiskCache::load(const CompileKey& key,
                                        std::string_view fingerprint,
                                        bool* rejected) {
  const fs::path path = entry_path(key, fingerprint);
  if (auto a = read_entry(path, key, fingerprint, rejected)) {
    std::error_code ec;
    fs::last_write_time(path, fs::file_time_type::clock::now(),
                        ec);  // LRU touch
    return a;
  }
  if (!system_directory_.empty()) {
    const fs::path system_path =
        system_directory_ / path.lexically_relative(directory_);
    if (auto a = read_entry(system_path, key, fingerprint, rejected)) return a;
  }
  return std::nullopt;
}

bool DiskCache::write_atomically(const fs::path& path,
                                 const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const fs::path temp = path.parent_path() /
                        fmt::format(".{}.tmp.{}.{:x}", path.filename().string(),
                                    static_cast<long>(getpid()), rng());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      fs::remove(temp, ec);
      if (logger_ != nullptr) {
        logger_->log(JW_LOG_WARNING,
                     fmt::format("cannot write cache entry {}: {}",
                                 temp.string(), std::strerror(errno)));
      }
      return false;
    }
  }
  fs::rename(temp, path, ec);
  if (ec) {
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

bool DiskCache::store(const CompileKey& key, std::string_view fingerprint,
                      const Artifact& artifact) {
  const std::string bytes = serialize(key, fingerprint, artifact);
  if (!write_atomically(entry_path(key, fingerprint), bytes)) return false;
  if (max_bytes_ != 0 &&
      written_since_prune_.fetch_add(bytes.size()) + bytes.size() >
          max_bytes_ / 8) {
    written_since_prune_.store(0);
    prune(max_bytes_);
  }
  return true;
}

std::optional<std::string> DiskCache::get_blob(std::string_view key) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  const fs::path path =
      directory_ / "blobs" / fmt::format("{:016x}{:016x}", h.high64, h.low64);
  std::optional<std::string> bytes = read_file(path);
  if (!bytes || bytes->size() < key.size() + 8) return std::nullopt;
  // Stored as: key length, key, value — a collision can never return
  // another key's value.
  Cursor c{*bytes};
  const std::string_view stored_key = c.field();
  if (!c.ok || stored_key != key) return std::nullopt;
  return bytes->substr(c.pos);
}

bool DiskCache::put_blob(std::string_view key, std::string_view value) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  std::string bytes;
  put_field(bytes, key);
  bytes.append(value);
  return write_atomically(
      directory_ / "blobs" / fmt::format("{:016x}{:016x}", h.high64, h.low64),
      bytes);
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats s;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(directory_ / "v1", ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!is_entry_file(*it)) continue;
    ++s.entries;
    s.bytes += it->file_size(ec);
  }
  return s;
}

DiskCacheStats DiskCache::verify() const {
  DiskCacheStats s;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(directory_ / "v1", ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!is_entry_file(*it)) continue;
    ++s.entries;
    s.bytes += it->file_size(ec);
    std::string why;
    std::optional<std::string> bytes = read_file(it->path());
    std::optional<ParsedEntry> e;
    if (bytes) e = parse(*bytes, &why);
    bool good = e.has_value();
    if (good) {
      // The name must be the hash of the content's key and fingerprint.
      try {
        const CompileKey key = CompileKey::decode(e->key_encoding);
        good = it->path().stem().string() == entry_name(key, e->fingerprint);
      } catch (const Error&) {
        good = false;
      }
    }
    if (!good) {
      ++s.corrupt;
      s.corrupt_files.push_back(it->path().string());
    }
  }
  return s;
}

std::size_t DiskCache::prune(uint64_t budget) {
  if (budget == 0) budget = max_bytes_;
  if (budget == 0) return 0;
  struct File {
    fs::path path;
    fs::file_time_type time;
    uint64_t size;
  };
  std::vector<File> files;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(directory_ / "v1", ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!is_entry_file(*it)) continue;
    File f{it->path(), it->last_write_time(ec), it->file_size(ec)};
    total += f.size;
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.time < b.time; });
  std::size_t removed = 0;
  for (const File& f : files) {
    if (total <= budget) break;
    // Another process may have removed it already; that is fine.
    if (fs::remove(f.path, ec)) ++removed;
    total -= f.size;
  }
  return removed;
}

}  // namespace jitwarm::detail
