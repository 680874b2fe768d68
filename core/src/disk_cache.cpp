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
#include "byte_fields.hpp"
#include "errors.hpp"
#include "in_flight_files.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kEntrySuffix = ".jwc";
// Leftovers are hidden files next to what they belong to:
// ".<entry>.tmp.<pid>.<random>" and ".<entry>.lock".
constexpr std::string_view kTempMarker = ".tmp.";
constexpr std::string_view kLockSuffix = ".lock";

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

DiskCache::DiskCache(fs::path directory, fs::path system_directory,
                     uint64_t max_bytes, const Logger* logger, Opening opening)
    : directory_(std::move(directory)),
      system_directory_(std::move(system_directory)),
      max_bytes_(max_bytes),
      logger_(logger),
      bundle_hits_(directory_, logger) {
  std::error_code ec;
  if (opening == Opening::existing) {
    // Looking at a cache must not make one: a mistyped directory would
    // otherwise answer "0 entries".
    const fs::file_status st = fs::status(directory_, ec);
    if (ec || !fs::exists(st)) {
      fail(JW_ERROR_NOT_FOUND, "no cache directory {} (it does not exist)",
           directory_.string());
    }
    if (!fs::is_directory(st)) {
      fail(JW_ERROR_IO, "cache directory {} is not a directory",
           directory_.string());
    }
    return;
  }
  fs::create_directories(directory_ / "v1", ec);
  if (ec) {
    fail(JW_ERROR_IO, "cannot create cache directory {}: {}",
         directory_.string(), ec.message());
  }
}

std::optional<std::string> DiskCache::write_problem() const {
  const fs::path probe =
      directory_ / "v1" /
      fmt::format(
          ".write-probe{}{}.{:x}", kTempMarker, static_cast<long>(getpid()),
          static_cast<uint64_t>(
              std::chrono::steady_clock::now().time_since_epoch().count()));
  const int fd =
      ::open(probe.c_str(),
             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return std::string(std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

fs::path DiskCache::entry_path(const CompileKey& key,
                               std::string_view fingerprint) const {
  return path_for_name(entry_name(key, fingerprint));
}

TierLoad DiskCache::read_entry(const fs::path& path, const EntryRef& entry,
                               CacheTier layer) const {
  const FileContents file =
      read_bounded_file(path, kMaxEntryBytes, Symlinks::refuse);
  if (file.status == FileContents::Status::absent) return {};
  std::string why;
  RejectReason reason = RejectReason::corrupt;
  if (!file.ok()) {
    why = "it " + file.why;
  } else if (auto a =
                 entry_artifact(file.bytes, entry.key(), entry.fingerprint(),
                                &why, trust_.get(), &reason)) {
    return TierLoad::found(std::move(*a), layer);
  }
  if (logger_ != nullptr &&
      warns_about_rejected(trust_.get(), reason, path.string())) {
    logger_->log(JW_LOG_WARNING,
                 fmt::format("cache entry {} ignored: {}; compiling {}",
                             path.string(), why, entry.key().text()));
  }
  return TierLoad::refused(layer, reason);
}

TierLoad DiskCache::load(const EntryRef& entry) {
  const fs::path path = path_for_name(entry.name());
  TierLoad found = read_entry(path, entry, CacheTier::disk);
  if (found.artifact) {
    // LRU touch, of the entry itself (never through a link).
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
    if (bundle_hits_.note_hit(entry.name())) found.tier = CacheTier::bundle;
    return found;
  }
  if (!system_directory_.empty()) {
    found.gather(
        read_entry(system_directory_ / path.lexically_relative(directory_),
                   entry, CacheTier::system));
  }
  return found;
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

bool DiskCache::store(const EntryRef& entry, const Artifact& artifact) {
  const CompileKey& key = entry.key();
  const uint64_t size = entry_size(key, entry.fingerprint(), artifact,
                                   trust_ && trust_->signer() != nullptr);
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
  const std::string bytes = serialize_entry(
      key, entry.fingerprint(), artifact, trust_ ? trust_->signer() : nullptr);
  if (!write_atomically(path_for_name(entry.name()), bytes)) return false;
  if (max_bytes_ != 0 &&
      written_since_prune_.fetch_add(bytes.size()) + bytes.size() >
          max_bytes_ / 8) {
    written_since_prune_.store(0);
    prune(max_bytes_);
  }
  return true;
}

std::unique_ptr<ArtifactStore::Claim> DiskCache::claim(const EntryRef& entry,
                                                       bool wait, bool* busy) {
  const fs::path lock = lock_path_for(path_for_name(entry.name()));
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
                entry.key().text(),
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

void DiskCache::for_each_entry(const EntryVisitor& visit,
                               bool with_system) const {
  const auto visit_layer = [&](const fs::path& root, bool system) {
    walk(root / "v1", [&](const fs::path& path, FileRole role) {
      if (role != FileRole::entry) return;
      FileContents file =
          read_bounded_file(path, kMaxEntryBytes, Symlinks::refuse);
      // Removed between listing and reading (a concurrent prune): gone,
      // not corrupt.
      if (file.status == FileContents::Status::absent) return;
      FoundEntry found;
      found.path = path;
      found.system = system;
      if (!file.ok()) {
        found.why = "it " + file.why;
      } else {
        found.bytes = file.bytes.size();
        found.identity = identify_entry(file.bytes, &found.why);
        if (found.identity && path.stem().string() != found.identity->name) {
          found.identity.reset();
          found.why = "it is stored under another entry's name";
        }
        found.content = std::move(file.bytes);
      }
      visit(found);
    });
  };
  visit_layer(directory_, false);
  if (with_system && !system_directory_.empty())
    visit_layer(system_directory_, true);
}

DiskCacheStats DiskCache::verify() const {
  DiskCacheStats s;
  s.stale_files_removed = sweep_stale(directory_ / "v1");
  for_each_entry(
      [&](const FoundEntry& e) {
        ++s.entries;
        s.bytes += e.bytes;
        if (!e.identity) {
          ++s.corrupt;
          s.corrupt_files.push_back(e.path.string());
        }
      },
      /*with_system=*/false);
  s.stale_files_removed += sweep_stale(directory_ / "blobs");
  return s;
}

DiskCache::Cleared DiskCache::clear(const std::set<std::string>& targets) {
  Cleared cleared;
  for_each_entry(
      [&](const FoundEntry& e) {
        if (!targets.empty() &&
            (!e.identity || !targets.contains(e.identity->key.target()))) {
          return;
        }
        // A directory in an entry's place is a corrupt entry too.
        std::error_code ec;
        if (fs::remove_all(e.path, ec) == 0 || ec) return;
        ++cleared.entries;
        cleared.bytes += e.bytes;
        ++cleared.by_target[e.identity ? e.identity->key.target()
                                       : std::string("(corrupt)")];
      },
      /*with_system=*/false);
  if (targets.empty()) {
    // Plugin blobs belong to no target; clearing everything clears them.
    std::error_code ec;
    for (fs::directory_iterator it(directory_ / "blobs", ec), end;
         !ec && it != end; it.increment(ec)) {
      std::error_code remove_ec;
      fs::remove(it->path(), remove_ec);
    }
    // Nor do the records of bundles whose entries are all gone now.
    fs::remove_all(directory_ / "bundles", ec);
  }
  sweep_stale(directory_ / "v1");
  return cleared;
}

fs::path DiskCache::path_for_name(const std::string& name) const {
  return directory_ / "v1" / name.substr(0, 2) /
         (name + std::string(kEntrySuffix));
}

DiskCache::Put DiskCache::put_entry(const EntryIdentity& identity,
                                    std::string_view bytes) {
  const fs::path path = path_for_name(identity.name);
  const FileContents existing =
      read_bounded_file(path, kMaxEntryBytes, Symlinks::refuse);
  if (existing.ok() && existing.bytes == bytes) return Put::present;
  return write_atomically(path, std::string(bytes)) ? Put::written
                                                    : Put::failed;
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
