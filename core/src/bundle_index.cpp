#include "bundle_index.hpp"

#define XXH_INLINE_ALL
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "bounded_file.hpp"
#include "errors.hpp"
#include "file_descriptor.hpp"
#include "in_flight_files.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

constexpr int kRecordFormat = 1;
// A record lists entry names (32 hex digits each): 10 million of them
// (kMaxBundleEntries) fit in well under this.
constexpr uint64_t kMaxRecordBytes = 512ull << 20;

fs::path bundles_dir(const fs::path& cache_dir) {
  return cache_dir / "bundles";
}

// Ids and entry names become file names: lower-case hex only.
bool is_hex_name(const std::string& s) {
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

fs::path marker_path(const fs::path& cache_dir, const std::string& id,
                     const std::string& name) {
  return bundles_dir(cache_dir) / (id + ".hits") / name;
}

// The record in a file, or why not.
std::optional<BundleRecord> parse_record(const std::string& bytes,
                                         std::string* why) {
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *why = "it is not a JSON object";
    return std::nullopt;
  }
  const auto field = [&](const char* name) -> const nlohmann::json* {
    const auto it = j.find(name);
    return it == j.end() ? nullptr : &*it;
  };
  const nlohmann::json* format = field("format");
  if (format == nullptr || !format->is_number_integer() ||
      format->get<int64_t>() != kRecordFormat) {
    *why = fmt::format("its format is not {}", kRecordFormat);
    return std::nullopt;
  }
  BundleRecord r;
  const nlohmann::json* id = field("id");
  const nlohmann::json* name = field("name");
  const nlohmann::json* imported = field("imported");
  const nlohmann::json* entries = field("entries");
  if (id == nullptr || !id->is_string() || name == nullptr ||
      !name->is_string() || imported == nullptr ||
      !imported->is_number_integer() || entries == nullptr ||
      !entries->is_array()) {
    *why = "it lacks id, name, imported or entries, or one has the wrong type";
    return std::nullopt;
  }
  r.id = id->get<std::string>();
  r.name = name->get<std::string>();
  r.imported = imported->get<int64_t>();
  if (!is_hex_name(r.id)) {
    *why = "its id is not a hex string";
    return std::nullopt;
  }
  for (const nlohmann::json& e : *entries) {
    if (!e.is_string() || !is_hex_name(e.get<std::string>())) {
      *why = "an entry name is not a hex string";
      return std::nullopt;
    }
    r.entries.push_back(e.get<std::string>());
  }
  return r;
}

}  // namespace

std::string bundle_file_id(const fs::path& bundle) {
  FileDescriptor fd(::open(bundle.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    fail(JW_ERROR_IO, "cannot read bundle {}: {}", bundle.string(),
         std::strerror(errno));
  }
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  std::string buffer(1 << 16, '\0');
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fail(JW_ERROR_IO, "cannot read bundle {}: {}", bundle.string(),
           std::strerror(errno));
    }
    if (n == 0) break;
    XXH3_128bits_update(&state, buffer.data(), static_cast<std::size_t>(n));
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

void write_bundle_record(const fs::path& cache_dir,
                         const BundleRecord& record) {
  const fs::path directory = bundles_dir(cache_dir);
  const fs::path path = directory / (record.id + ".json");
  const auto refuse = [&](const std::string& why) {
    fail(JW_ERROR_IO, "cannot write bundle record {}: {}", path.string(), why);
  };
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) refuse(ec.message());
  nlohmann::json j;
  j["format"] = kRecordFormat;
  j["id"] = record.id;
  j["name"] = record.name;
  j["imported"] = record.imported;
  j["entries"] = record.entries;
  const std::string bytes = j.dump(1) + "\n";
  static thread_local std::mt19937_64 rng(std::random_device{}());
  // Hidden and named like the disk cache's temporary files.
  const fs::path temp =
      directory / fmt::format(".{}.json.tmp.{}.{:x}", record.id,
                              static_cast<long>(getpid()), rng());
  const InFlightFile in_flight(temp);
  FileDescriptor fd(::open(temp.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           0644));
  if (fd.get() < 0) refuse(std::strerror(errno));
  std::string_view left = bytes;
  while (!left.empty()) {
    const ssize_t n = ::write(fd.get(), left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::unlink(temp.c_str());
      refuse(std::strerror(error));
    }
    left.remove_prefix(static_cast<std::size_t>(n));
  }
  if (fd.close() != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    refuse(std::strerror(error));
  }
}

BundleRecords read_bundle_records(const fs::path& cache_dir) {
  BundleRecords out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(bundles_dir(cache_dir), ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with('.') && it->path().extension() == ".json")
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const FileContents contents =
        read_bounded_file(file, kMaxRecordBytes, Symlinks::refuse);
    std::string why;
    std::optional<BundleRecord> record;
    if (contents.status == FileContents::Status::absent) continue;
    if (!contents.ok()) {
      why = "it " + contents.why;
    } else {
      record = parse_record(contents.bytes, &why);
      if (record && file.stem().string() != record->id) {
        record.reset();
        why = "it is stored under another bundle's id";
      }
    }
    if (!record) {
      out.problems.push_back(
          fmt::format("bundle record {} ignored: {}", file.string(), why));
      continue;
    }
    out.records.push_back(std::move(*record));
  }
  std::stable_sort(out.records.begin(), out.records.end(),
                   [](const BundleRecord& a, const BundleRecord& b) {
                     return a.imported < b.imported;
                   });
  return out;
}

bool bundle_entry_was_hit(const fs::path& cache_dir, const std::string& id,
                          const std::string& name) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(marker_path(cache_dir, id, name), ec));
}

BundleHits::BundleHits(fs::path cache_dir, const Logger* logger)
    : cache_dir_(std::move(cache_dir)), logger_(logger) {}

void BundleHits::read_once() {
  std::call_once(read_, [&] {
    BundleRecords found = read_bundle_records(cache_dir_);
    for (const std::string& problem : found.problems) {
      if (logger_ != nullptr) logger_->log(JW_LOG_WARNING, problem);
    }
    for (const BundleRecord& r : found.records) {
      for (const std::string& name : r.entries)
        bundles_of_[name].push_back(r.id);
    }
  });
}

bool BundleHits::note_hit(const std::string& name) {
  read_once();
  const auto it = bundles_of_.find(name);
  if (it == bundles_of_.end()) return false;
  {
    std::lock_guard lock(mutex_);
    if (!marked_.insert(name).second) return true;
  }
  for (const std::string& id : it->second) {
    const fs::path marker = marker_path(cache_dir_, id, name);
    std::error_code ec;
    fs::create_directories(marker.parent_path(), ec);
    const int fd = ::open(marker.c_str(),
                          O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
    } else if (logger_ != nullptr) {
      logger_->log(JW_LOG_WARNING,
                   fmt::format("cannot mark bundle entry {} as hit: {}",
                               marker.string(), std::strerror(errno)));
    }
  }
  return true;
}

}  // namespace jitwarm::detail
