#include "disk_cache.hpp"

#define XXH_INLINE_ALL
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <thread>

#include "bounded_file.hpp"
#include "errors.hpp"
#include "in_flight_files.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

constexpr char kEntryMagic[8] = {'J', 'W', 'C', 'A', 'C', 'H', 'E', '\n'};
constexpr std::string_view kEntrySuffix = ".jwc";
// Leftovers are hidden files next to what they belong to:
// ".<entry>.tmp.<pid>.<random>" and ".<entry>.lock".
constexpr std::string_view kTempMarker = ".tmp.";
constexpr std::string_view kLockSuffix = ".lock";
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

enum class FileRole { entry, temp, lock, other };

FileRole role_of(const fs::path& path) {
  const std::string name = path.filename().string();
  if (!name.empty() && name[0] == '.') {
    if (name.find(kTempMarker) != std::string::npos) return FileRole::temp;
    if (name.ends_with(kLockSuffix)) return FileRole::lock;
    return FileRole::other;
  }
  return path.extension() == kEntrySuffix ? FileRole::entry : FileRole::other;
}

fs::path lock_path_for(const fs::path& entry) {
  return entry.parent_path() /
         fmt::format(".{}{}", entry.filename().string(), kLockSuffix);
}

// Removes a temporary or lock file left by a process that died, if it is
// older than kStaleFileAge; a lock someone holds is never removed. True
// when removed.
bool remove_if_stale(const fs::path& path, FileRole role) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  const auto age = std::chrono::seconds(std::time(nullptr) - st.st_mtime);
  if (age < DiskCache::kStaleFileAge) return false;
  if (role == FileRole::lock && S_ISREG(st.st_mode)) {
    const int fd =
        ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false;
    // Unlinked while locked, so no one can take the lock in between; a
    // process that opened it before waits on an unlinked file, notices
    // (DiskCache::claim) and opens a fresh one.
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    const bool removed = free && ::unlink(path.c_str()) == 0;
    ::close(fd);
    return removed;
  }
  if (S_ISDIR(st.st_mode)) return false;  // not something jitwarm wrote
  return ::unlink(path.c_str()) == 0;
}

// Every file under `root`, with its role. An entry-named directory is
// reported as an entry and not descended into. Errors (a directory removed
// meanwhile) end the walk early rather than throw.
template <typename Visit>
void walk(const fs::path& root, Visit&& visit) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    const FileRole role = role_of(it->path());
    if (role == FileRole::entry) it.disable_recursion_pending();
    std::error_code status_ec;
    if (role != FileRole::other || !it->is_directory(status_ec))
      visit(it->path(), role);
  }
}

// Removes the stale leftovers under `root` (plugin blobs have no entries to
// check, only leftovers); returns how many.
std::size_t sweep_stale(const fs::path& root) {
  std::size_t removed = 0;
  walk(root, [&](const fs::path& path, FileRole role) {
    if ((role == FileRole::temp || role == FileRole::lock) &&
        remove_if_stale(path, role)) {
      ++removed;
    }
  });
  return removed;
}

// The lock behind DiskCache::claim: held on an open descriptor, removed as
// it is let go (see lock_path_for).
class LockFileClaim : public ArtifactStore::Claim {
 public:
  LockFileClaim(int fd, fs::path path) : fd_(fd), path_(std::move(path)) {}
  ~LockFileClaim() override {
    ::unlink(path_.c_str());  // still held: no one else holds this file
    ::close(fd_);
  }

 private:
  int fd_;
  fs::path path_;
};

}  // namespace

std::optional<ParsedEntry> parse_entry(std::string_view bytes,
                                       std::string* why) {
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

uint64_t parse_byte_size(std::string_view text) {
  const std::string_view original = text;
  if (text.empty()) fail(JW_ERROR_INVALID_ARGUMENT, "empty size");
  uint64_t multiplier = 1;
  const char last = text.back();
  if (last == 'K' || last == 'k') multiplier = 1ull << 10;
  if (last == 'M' || last == 'm') multiplier = 1ull << 20;
  if (last == 'G' || last == 'g') multiplier = 1ull << 30;
  if (multiplier != 1) text.remove_suffix(1);
  if (text.empty()) fail(JW_ERROR_INVALID_ARGUMENT, "size has no digits");
  constexpr uint64_t kMax = UINT64_MAX;
  const auto too_large = [&] {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "size '{}' is too large: at most {} bytes (16 EiB - 1)", original,
         kMax);
  };
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "bad size '{}': use bytes or a K/M/G suffix", original);
    }
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (kMax - digit) / 10) too_large();
    value = value * 10 + digit;
  }
  if (value > kMax / multiplier) too_large();
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
  const FileContents file =
      read_bounded_file(path, kMaxEntryBytes, Symlinks::refuse);
  if (file.status == FileContents::Status::absent) return std::nullopt;
  std::string why;
  std::optional<ParsedEntry> e;
  if (!file.ok()) {
    why = "it " + file.why;
  } else {
    e = parse_entry(file.bytes, &why);
    if (e &&
        (e->key_encoding != key.encoding() || e->fingerprint != fingerprint)) {
      e.reset();
      why =
          "it belongs to another key or build (hash collision or stale entry)";
    }
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
    // LRU touch, of the entry itself (never through a link).
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
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
  const fs::path directory = path.parent_path();
  const auto refuse = [&](const fs::path& what, const std::string& why) {
    if (logger_ != nullptr) {
      logger_->log(
          JW_LOG_WARNING,
          fmt::format("cannot write cache entry {}: {}", what.string(), why));
    }
    return false;
  };
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) {
    // Something that is not a directory sits where the entry's directory
    // belongs: it is not ours to keep.
    std::error_code status_ec;
    const fs::file_status st = fs::symlink_status(directory, status_ec);
    if (!status_ec && fs::exists(st) && !fs::is_directory(st)) {
      fs::remove(directory, ec);
      fs::create_directories(directory, ec);
    }
    if (ec) return refuse(directory, ec.message());
  }
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const fs::path temp =
      directory / fmt::format(".{}{}{}.{:x}", path.filename().string(),
                              kTempMarker, static_cast<long>(getpid()), rng());
  // Registered before it exists: a worker stopped by a signal removes it.
  const InFlightFile in_flight(temp);
  const int fd = ::open(
      temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return refuse(temp, std::strerror(errno));
  std::size_t written = 0;
  int write_error = 0;
  while (written < bytes.size()) {
    const ssize_t n =
        ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      write_error = n < 0 ? errno : EIO;
      break;
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && write_error == 0) write_error = errno;
  if (write_error != 0) {
    ::unlink(temp.c_str());
    return refuse(temp, std::strerror(write_error));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    if (error == EISDIR || error == ENOTEMPTY || error == EEXIST) {
      // A directory in place of the entry: a corrupt entry like any other.
      fs::remove_all(path, ec);
      error = ::rename(temp.c_str(), path.c_str()) == 0 ? 0 : errno;
    }
    if (error != 0) {
      ::unlink(temp.c_str());
      return refuse(path, std::strerror(error));
    }
  }
  sweep_once(directory);
  return true;
}

void DiskCache::sweep_once(const fs::path& directory) {
  {
    std::lock_guard lock(swept_mutex_);
    if (!swept_.insert(directory).second) return;
  }
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end;
       it.increment(ec)) {
    const FileRole role = role_of(it->path());
    if (role == FileRole::temp || role == FileRole::lock)
      remove_if_stale(it->path(), role);
  }
}

bool DiskCache::store(const CompileKey& key, std::string_view fingerprint,
                      const Artifact& artifact) {
  // What serialize() writes: magic, version, five sized fields, checksum.
  const uint64_t size = sizeof(kEntryMagic) + 4 + 5 * 8 +
                        key.encoding().size() + fingerprint.size() +
                        artifact.format.size() + artifact.entry_point.size() +
                        artifact.binary.size() + 8;
  if (size > kMaxEntryBytes) {
    // It could never be read back: refuse it now rather than write it on
    // every run.
    if (logger_ != nullptr) {
      logger_->log(JW_LOG_WARNING,
                   fmt::format("not caching {}: its entry would be {} bytes, "
                               "more than the {} an entry may have",
                               key.text(), size, kMaxEntryBytes));
    }
    return false;
  }
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

std::unique_ptr<ArtifactStore::Claim> DiskCache::claim(
    const CompileKey& key, std::string_view fingerprint, bool wait,
    bool* busy) {
  const fs::path lock = lock_path_for(entry_path(key, fingerprint));
  std::error_code ec;
  fs::create_directories(lock.parent_path(), ec);
  const auto deadline = std::chrono::steady_clock::now() + lock_wait_;
  auto pause = std::chrono::milliseconds(2);
  int fd = -1;
  while (true) {
    if (fd < 0) {
      fd = ::open(lock.c_str(),
                  O_RDWR | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0666);
      // A read-only cache, or something odd at the lock's path: compile
      // unclaimed (the entry is still written atomically).
      if (fd < 0) return nullptr;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      // The previous holder unlinks the file as it lets go; a lock on an
      // unlinked file guards nothing, so it must still be the one named.
      struct stat held {
      }, named{};
      if (::fstat(fd, &held) == 0 && ::lstat(lock.c_str(), &named) == 0 &&
          held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
        return std::make_unique<LockFileClaim>(fd, lock);
      }
      ::close(fd);
      fd = -1;
      continue;  // open the current one (or create it)
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      ::close(fd);
      return nullptr;
    }
    if (!wait && errno == EWOULDBLOCK) {  // another process compiles it
      ::close(fd);
      if (busy != nullptr) *busy = true;
      return nullptr;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      if (logger_ != nullptr) {
        logger_->log(
            JW_LOG_WARNING,
            fmt::format(
                "another process has been compiling {} for more than "
                "{} s; compiling it here too",
                key.text(),
                std::chrono::duration_cast<std::chrono::seconds>(lock_wait_)
                    .count()));
      }
      return nullptr;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

std::optional<std::string> DiskCache::get_blob(std::string_view key) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  const fs::path path =
      directory_ / "blobs" / fmt::format("{:016x}{:016x}", h.high64, h.low64);
  const FileContents file =
      read_bounded_file(path, kMaxEntryBytes, Symlinks::refuse);
  if (!file.ok() || file.bytes.size() < key.size() + 8) return std::nullopt;
  // Stored as: key length, key, value — a collision can never return
  // another key's value.
  Cursor c{file.bytes};
  const std::string_view stored_key = c.field();
  if (!c.ok || stored_key != key) return std::nullopt;
  return file.bytes.substr(c.pos);
}

bool DiskCache::put_blob(std::string_view key, std::string_view value) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  std::string bytes;
  put_field(bytes, key);
  bytes.append(value);
  if (bytes.size() > kMaxEntryBytes) return false;
  return write_atomically(
      directory_ / "blobs" / fmt::format("{:016x}{:016x}", h.high64, h.low64),
      bytes);
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats s;
  walk(directory_ / "v1", [&](const fs::path& path, FileRole role) {
    if (role != FileRole::entry) return;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;  // removed meanwhile
    ++s.entries;
    if (S_ISREG(st.st_mode)) s.bytes += static_cast<uint64_t>(st.st_size);
  });
  return s;
}

DiskCacheStats DiskCache::verify() const {
  DiskCacheStats s;
  walk(directory_ / "v1", [&](const fs::path& path, FileRole role) {
    if (role == FileRole::temp || role == FileRole::lock) {
      if (remove_if_stale(path, role)) ++s.stale_files_removed;
      return;
    }
    if (role != FileRole::entry) return;
    const FileContents file =
        read_bounded_file(path, kMaxEntryBytes, Symlinks::refuse);
    // Removed between listing and reading (a concurrent prune): gone, not
    // corrupt.
    if (file.status == FileContents::Status::absent) return;
    ++s.entries;
    s.bytes += file.bytes.size();
    std::string why;
    std::optional<ParsedEntry> e;
    if (file.ok()) e = parse_entry(file.bytes, &why);
    bool good = e.has_value();
    if (good) {
      // The name must be the hash of the content's key and fingerprint.
      try {
        const CompileKey key = CompileKey::decode(e->key_encoding);
        good = path.stem().string() == entry_name(key, e->fingerprint);
      } catch (const Error&) {
        good = false;
      }
    }
    if (!good) {
      ++s.corrupt;
      s.corrupt_files.push_back(path.string());
    }
  });
  s.stale_files_removed += sweep_stale(directory_ / "blobs");
  return s;
}

std::size_t DiskCache::prune(uint64_t budget) {
  if (budget == 0) budget = max_bytes_;
  struct File {
    fs::path path;
    struct timespec time;
    uint64_t size;
  };
  std::vector<File> files;
  uint64_t total = 0;
  walk(directory_ / "v1", [&](const fs::path& path, FileRole role) {
    if (role == FileRole::temp || role == FileRole::lock) {
      remove_if_stale(path, role);
      return;
    }
    struct stat st {};
    if (role != FileRole::entry || ::lstat(path.c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode)) {
      return;
    }
    files.push_back(File{path, st.st_mtim, static_cast<uint64_t>(st.st_size)});
    total += files.back().size;
  });
  sweep_stale(directory_ / "blobs");
  if (budget == 0) return 0;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
    return a.time.tv_sec != b.time.tv_sec ? a.time.tv_sec < b.time.tv_sec
                                          : a.time.tv_nsec < b.time.tv_nsec;
  });
  std::size_t removed = 0;
  for (const File& f : files) {
    if (total <= budget) break;
    // Another process may have removed it already; that is fine.
    if (::unlink(f.path.c_str()) == 0) ++removed;
    total -= f.size;
  }
  return removed;
}

}  // namespace jitwarm::detail
