#include "cache_bundle.hpp"

#define XXH_INLINE_ALL
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <set>

#include "bundle_index.hpp"
#include "byte_fields.hpp"
#include "disk_cache.hpp"
#include "errors.hpp"
#include "file_descriptor.hpp"
#include "in_flight_files.hpp"
#include "signing.hpp"
#include "trust_settings.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

constexpr char kBundleMagic[8] = {'J', 'W', 'B', 'U', 'N', 'D', 'L', 'E'};
constexpr std::size_t kHeaderBytes = sizeof(kBundleMagic) + 4 + 4;
// zstd's default level: ~1 GB/s to decompress, and cubins compress ~3x.
constexpr int kCompressionLevel = 3;
// What a bundle's signature is over: this, then the digest.
constexpr std::string_view kSignatureDomain{"jitwarm bundle signature\0", 25};
// The signature block: two sized fields, at most a key id and a signature.
constexpr std::size_t kMaxSignatureBlock = 16 + kKeyIdBytes + kSignatureBytes;

std::string signature_message(const std::string& digest) {
  return std::string(kSignatureDomain) + digest;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Compresses what it is given into one zstd frame written to `fd`.
class FrameWriter {
 public:
  FrameWriter(int fd, const fs::path& path, Sha256& written)
      : fd_(fd), path_(path), written_(written), context_(ZSTD_createCCtx()) {
    if (context_ == nullptr) fail(JW_ERROR_OUT_OF_MEMORY, "zstd: no memory");
    check(ZSTD_CCtx_setParameter(context_, ZSTD_c_compressionLevel,
                                 kCompressionLevel));
    check(ZSTD_CCtx_setParameter(context_, ZSTD_c_checksumFlag, 1));
    XXH3_64bits_reset(&content_hash_);
  }
  ~FrameWriter() { ZSTD_freeCCtx(context_); }
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  void put(std::string_view bytes) {
    XXH3_64bits_update(&content_hash_, bytes.data(), bytes.size());
    run(bytes, ZSTD_e_continue);
  }
  void put_u64(uint64_t v) {
    std::string s;
    detail::put_u64(s, v);
    put(s);
  }
  void put_field(std::string_view s) {
    put_u64(s.size());
    put(s);
  }
  // The trailing checksum, then the end of the frame.
  void finish() {
    std::string sum;
    detail::put_u64(sum, XXH3_64bits_digest(&content_hash_));
    run(sum, ZSTD_e_end);
  }

 private:
  void check(size_t code) {
    if (ZSTD_isError(code))
      fail(JW_ERROR_INTERNAL, "zstd: {}", ZSTD_getErrorName(code));
  }
  void run(std::string_view bytes, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
    std::string out(ZSTD_CStreamOutSize(), '\0');
    while (true) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const size_t left = ZSTD_compressStream2(context_, &o, &in, mode);
      check(left);
      written_.update(std::string_view(out.data(), o.pos));
      if (!write_all(fd_, std::string_view(out.data(), o.pos))) {
        fail(JW_ERROR_IO, "cannot write bundle {}: {}", path_.string(),
             std::strerror(errno));
      }
      const bool done = mode == ZSTD_e_end ? left == 0 : in.pos == in.size;
      if (done) return;
    }
  }

  int fd_;
  fs::path path_;
  Sha256& written_;
  ZSTD_CCtx* context_;
  XXH3_state_t content_hash_;
};

// Decompresses one zstd frame from `fd` on demand, hashing what it hands
// out so the trailing checksum can be compared.
class FrameReader {
 public:
  explicit FrameReader(int fd)
      : fd_(fd),
        context_(ZSTD_createDCtx()),
        input_buffer_(ZSTD_DStreamInSize(), '\0') {
    if (context_ == nullptr) fail(JW_ERROR_OUT_OF_MEMORY, "zstd: no memory");
    XXH3_64bits_reset(&content_hash_);
  }
  ~FrameReader() { ZSTD_freeDCtx(context_); }
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  // Appends exactly `n` bytes of content to `out`, or returns false: the
  // content ended first (truncated), or the frame is corrupt (error()).
  bool read(std::size_t n, std::string& out, bool hashed = true) {
    while (n > 0) {
      if (pending_pos_ == pending_.size() && !decompress_more()) return false;
      const std::size_t take = std::min(n, pending_.size() - pending_pos_);
      const char* from = pending_.data() + pending_pos_;
      if (hashed) XXH3_64bits_update(&content_hash_, from, take);
      out.append(from, take);
      pending_pos_ += take;
      n -= take;
    }
    return true;
  }
  bool read_u64(uint64_t* v, bool hashed = true) {
    std::string bytes;
    if (!read(8, bytes, hashed)) return false;
    Cursor c{bytes};
    *v = c.u(8);
    return true;
  }
  uint64_t content_hash() const { return XXH3_64bits_digest(&content_hash_); }
  // Every raw byte the frame was read from (the caller adds what came
  // before it).
  Sha256& raw_hash() { return raw_hash_; }
  // After the last byte of content: the frame ends here.
  bool at_frame_end() {
    std::string more;
    if (read(1, more, false)) return false;
    return error_.empty() && frame_done_;
  }
  // The bytes after the frame, to the end of the file; nullopt when there
  // are more than `max`.
  std::optional<std::string> rest_of_file(std::size_t max) {
    std::string rest;
    if (input_.src != nullptr) {
      rest.assign(static_cast<const char*>(input_.src) + input_.pos,
                  input_.size - input_.pos);
    }
    input_.pos = input_.size;
    char chunk[256];
    while (rest.size() <= max) {
      const ssize_t n = ::read(fd_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      rest.append(chunk, static_cast<std::size_t>(n));
    }
    if (rest.size() > max) return std::nullopt;
    return rest;
  }
  const std::string& error() const { return error_; }

 private:
  bool decompress_more() {
    pending_.assign(ZSTD_DStreamOutSize(), '\0');
    pending_pos_ = 0;
    while (error_.empty() && !frame_done_) {
      if (input_.pos == input_.size) {
        ssize_t n;
        do {
          n = ::read(fd_, input_buffer_.data(), input_buffer_.size());
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
          error_ = std::strerror(errno);
          break;
        }
        if (n == 0) break;  // the file ended inside the frame
        input_ =
            ZSTD_inBuffer{input_buffer_.data(), static_cast<std::size_t>(n), 0};
      }
      ZSTD_outBuffer out{pending_.data(), pending_.size(), 0};
      const std::size_t before = input_.pos;
      const size_t left = ZSTD_decompressStream(context_, &out, &input_);
      // zstd stops at the end of the frame: what it took is the frame's.
      raw_hash_.update(std::string_view(
          static_cast<const char*>(input_.src) + before, input_.pos - before));
      if (ZSTD_isError(left)) {
        error_ = ZSTD_getErrorName(left);
        break;
      }
      if (left == 0) frame_done_ = true;
      if (out.pos > 0) {
        pending_.resize(out.pos);
        return true;
      }
    }
    pending_.clear();
    return false;
  }

  int fd_;
  ZSTD_DCtx* context_;
  std::string input_buffer_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  std::string pending_;
  std::size_t pending_pos_ = 0;
  bool frame_done_ = false;
  std::string error_;
  XXH3_state_t content_hash_;
  Sha256 raw_hash_;
};

struct ManifestRow {
  std::string key_text, target, name;
  uint64_t size = 0, hash = 0;
};

}  // namespace

std::string write_bundle(const fs::path& path,
                         const std::vector<BundleItem>& items,
                         const SigningKey* signer) {
  const fs::path directory =
      path.parent_path().empty() ? fs::path(".") : path.parent_path();
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const fs::path temp =
      directory / fmt::format(".{}.tmp.{}.{:x}", path.filename().string(),
                              static_cast<long>(getpid()), rng());
  const InFlightFile in_flight(temp);
  FileDescriptor fd(::open(temp.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           0644));
  if (fd.get() < 0) {
    fail(JW_ERROR_IO, "cannot write bundle {}: {}", path.string(),
         std::strerror(errno));
  }
  try {
    std::string header(kBundleMagic, sizeof(kBundleMagic));
    put_u32(header, kBundleFormatVersion);
    put_u32(header, kEntryFormatVersion);
    if (!write_all(fd.get(), header)) {
      fail(JW_ERROR_IO, "cannot write bundle {}: {}", path.string(),
           std::strerror(errno));
    }
    Sha256 written;
    written.update(header);
    FrameWriter frame(fd.get(), path, written);
    frame.put_u64(items.size());
    for (const BundleItem& item : items) {
      frame.put_field(item.identity.key.text());
      frame.put_field(item.identity.key.target());
      frame.put_field(item.identity.name);
      frame.put_u64(item.bytes.size());
      frame.put_u64(XXH3_64bits(item.bytes.data(), item.bytes.size()));
    }
    for (const BundleItem& item : items) frame.put_field(item.bytes);
    frame.finish();
    // The whole file's hash: what was signed, then the signature block.
    Sha256 file_hash = written;
    std::string block;
    if (signer != nullptr) {
      put_field(block, signer->public_key.id);
      put_field(block,
                sign_message(*signer, signature_message(written.digest())));
    } else {
      put_field(block, {});
      put_field(block, {});
    }
    if (!write_all(fd.get(), block) || fd.close() != 0) {
      fail(JW_ERROR_IO, "cannot write bundle {}: {}", path.string(),
           std::strerror(errno));
    }
    file_hash.update(block);
    if (::rename(temp.c_str(), path.c_str()) != 0) {
      fail(JW_ERROR_IO, "cannot write bundle {}: {}", path.string(),
           std::strerror(errno));
    }
    return to_hex(file_hash.digest());
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

std::vector<BundleItem> read_bundle(const fs::path& path,
                                    BundleSignature* signature) {
  const std::string name = path.string();
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    const int error = errno;
    fail(error == ENOENT ? JW_ERROR_NOT_FOUND : JW_ERROR_INVALID_ARGUMENT,
         "cannot read bundle {}: {}", name, std::strerror(error));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    fail(JW_ERROR_INVALID_ARGUMENT, "cannot read bundle {}: not a regular file",
         name);
  }
  // A regular file: reads do not block; drop O_NONBLOCK all the same.
  ::fcntl(fd.get(), F_SETFL, 0);
  const auto invalid = [&](const std::string& what) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{} is not a valid jitwarm bundle: {}; nothing was imported", name,
         what);
  };
  std::string header;
  header.resize(kHeaderBytes);
  ssize_t got = 0;
  while (static_cast<std::size_t>(got) < header.size()) {
    const ssize_t n =
        ::read(fd.get(), header.data() + got, header.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += n;
  }
  if (static_cast<std::size_t>(got) < header.size() ||
      std::memcmp(header.data(), kBundleMagic, sizeof(kBundleMagic)) != 0) {
    invalid("it does not start with the bundle magic (JWBUNDLE)");
  }
  Cursor h{header, sizeof(kBundleMagic)};
  const uint64_t version = h.u(4), entry_version = h.u(4);
  if (version < kOldestBundleFormatVersion || version > kBundleFormatVersion) {
    invalid(fmt::format("bundle format version {} (this build reads {} to {})",
                        version, kOldestBundleFormatVersion,
                        kBundleFormatVersion));
  }
  if (entry_version < kOldestEntryFormatVersion ||
      entry_version > kEntryFormatVersion) {
    invalid(fmt::format(
        "its entries have format version {} (this build "
        "reads {} to {})",
        entry_version, kOldestEntryFormatVersion, kEntryFormatVersion));
  }

  FrameReader frame(fd.get());
  frame.raw_hash().update(header);
  const auto stopped = [&](const std::string& where) {
    invalid(frame.error().empty()
                ? fmt::format("it is truncated: {} is incomplete", where)
                : fmt::format("it is corrupt at {} (zstd: {})", where,
                              frame.error()));
  };
  uint64_t count = 0;
  if (!frame.read_u64(&count)) stopped("the entry count");
  if (count > kMaxBundleEntries) {
    invalid(fmt::format("it claims {} entries (at most {})", count,
                        kMaxBundleEntries));
  }
  const auto read_field = [&](uint64_t max, std::string& out) {
    uint64_t n = 0;
    return frame.read_u64(&n) && n <= max && frame.read(n, out);
  };
  std::vector<ManifestRow> rows(count);
  uint64_t declared = 0;
  for (uint64_t i = 0; i < count; ++i) {
    ManifestRow& row = rows[i];
    const std::string where =
        fmt::format("manifest row {} of {}", i + 1, count);
    if (!read_field(1 << 20, row.key_text) ||
        !read_field(1 << 10, row.target) || !read_field(64, row.name) ||
        !frame.read_u64(&row.size) || !frame.read_u64(&row.hash)) {
      stopped(where);
    }
    if (row.size > kMaxEntryBytes) {
      invalid(fmt::format("{} ({}) declares {} bytes (an entry has at most {})",
                          where, row.key_text, row.size, kMaxEntryBytes));
    }
    declared += row.size;
    if (declared > kMaxBundleContentBytes) {
      invalid(fmt::format("its entries add up to more than {} bytes",
                          kMaxBundleContentBytes));
    }
  }
  std::vector<BundleItem> items;
  items.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const ManifestRow& row = rows[i];
    const std::string where =
        fmt::format("entry {} of {} ({})", i + 1, count, row.key_text);
    uint64_t size = 0;
    std::string bytes;
    if (!frame.read_u64(&size)) stopped(where);
    if (size != row.size) {
      invalid(fmt::format("{} has {} bytes, its manifest row says {}", where,
                          size, row.size));
    }
    if (!frame.read(size, bytes)) stopped(where);
    if (XXH3_64bits(bytes.data(), bytes.size()) != row.hash) {
      invalid(fmt::format("{} does not match its checksum", where));
    }
    std::string why;
    std::optional<EntryIdentity> identity = identify_entry(bytes, &why);
    if (!identity) invalid(fmt::format("{} is corrupt: {}", where, why));
    if (identity->name != row.name || identity->key.target() != row.target ||
        identity->key.text() != row.key_text) {
      invalid(fmt::format("{} is not the entry its manifest row names", where));
    }
    items.push_back(BundleItem{std::move(*identity), std::move(bytes)});
  }
  const uint64_t computed = frame.content_hash();
  uint64_t stored = 0;
  if (!frame.read_u64(&stored, /*hashed=*/false)) stopped("the checksum");
  if (stored != computed) invalid("its content does not match its checksum");
  if (!frame.at_frame_end()) {
    invalid(frame.error().empty()
                ? std::string("something follows its last entry")
                : fmt::format("its end is corrupt (zstd: {})", frame.error()));
  }
  const std::optional<std::string> rest =
      frame.rest_of_file(version >= 2 ? kMaxSignatureBlock : 0);
  if (!rest) invalid("something follows its last entry");
  BundleSignature found;
  if (version >= 2) {
    Cursor block{*rest};
    found.signer = std::string(block.field());
    found.signature = std::string(block.field());
    if (block.ok && !block.at_end())
      invalid("something follows its signature block");
    if (!block.ok || !((found.signer.empty() && found.signature.empty()) ||
                       (found.signer.size() == kKeyIdBytes &&
                        found.signature.size() == kSignatureBytes))) {
      invalid("its signature block is malformed");
    }
  }
  Sha256 file_hash = frame.raw_hash();
  file_hash.update(*rest);
  found.file_sha256 = to_hex(file_hash.digest());
  found.message = signature_message(frame.raw_hash().digest());
  if (signature != nullptr) *signature = std::move(found);
  return items;
}

std::optional<std::string> bundle_signature_refusal(
    const BundleSignature& signature, const EntryTrust& trust) {
  std::string why;
  if (!trust.check(signature.signer, signature.message, signature.signature,
                   &why)) {
    return std::nullopt;
  }
  return why;
}

}  // namespace jitwarm::detail

namespace jitwarm {
namespace {

using detail::DiskCache;
using detail::fail;

// The cache directory a bundle command works on, from the one resolution
// of cache settings.
std::string bundle_cache_dir(const RuntimeOptions& cache, const char* verb) {
  const CacheSettings settings = resolve_cache_settings(cache);
  if (settings.directory.empty()) {
    fail(JW_ERROR_INVALID_ARGUMENT, "no cache directory to {} ({})", verb,
         to_string(settings.directory_source));
  }
  return settings.directory;
}

void summarize(const std::vector<detail::BundleItem>& items,
               CacheBundleSummary& summary) {
  std::map<std::string, std::size_t> by_target;
  summary.entries = items.size();
  for (const detail::BundleItem& item : items) {
    const std::string& target = item.identity.key.target();
    ++by_target[target];
    summary.entry_bytes += item.bytes.size();
    summary.manifest.push_back(
        CacheBundleEntry{item.identity.key.text(), target, item.bytes.size()});
  }
  summary.targets.assign(by_target.begin(), by_target.end());
}

uint64_t file_size(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

}  // namespace

CacheBundleSummary export_cache_bundle(const std::string& bundle_path,
                                       const std::vector<std::string>& targets,
                                       const RuntimeOptions& cache) {
  const CacheSettings settings = resolve_cache_settings(cache);
  const std::string directory = bundle_cache_dir(cache, "export from");
  const DiskCache disk(directory, settings.system_directory, 0, nullptr,
                       DiskCache::Opening::existing);
  const std::set<std::string> wanted(targets.begin(), targets.end());
  CacheBundleSummary summary;
  summary.bundle = bundle_path;
  summary.cache_dir = directory;
  std::vector<detail::BundleItem> items;
  std::set<std::string> names;  // the user's entry wins over the system's
  std::map<std::string, std::size_t> held;  // every target, for the error
  disk.for_each_entry(
      [&](const detail::FoundEntry& e) {
        if (!e.identity) {
          ++summary.skipped_corrupt;
          return;
        }
        const std::string& target = e.identity->key.target();
        ++held[target];
        if ((!wanted.empty() && !wanted.contains(target)) ||
            !names.insert(e.identity->name).second) {
          return;
        }
        items.push_back(detail::BundleItem{*e.identity, e.content});
      },
      /*with_system=*/true);
  if (items.empty()) {
    std::string has;
    for (const auto& [target, n] : held)
      has += fmt::format("{}{} ({})", has.empty() ? "" : ", ", target, n);
    fail(JW_ERROR_NOT_FOUND, "nothing to export: {} holds no entry{}{}",
         directory,
         wanted.empty() ? std::string()
                        : fmt::format(" for {}", fmt::join(wanted, ", ")),
         has.empty() ? std::string() : fmt::format(" (it holds {})", has));
  }
  // A signed bundle carries signed entries: what a node that requires
  // trust loads after importing it.
  const std::shared_ptr<const detail::EntryTrust> trust =
      detail::make_entry_trust(settings);
  const detail::SigningKey* signer = trust->signer();
  if (signer != nullptr) {
    for (detail::BundleItem& item : items) {
      // Entries were parsed as they were found: they parse again.
      item.bytes = *detail::resign_entry(item.bytes, *signer);
      item.identity.signer = signer->public_key.id;
    }
    summary.signer = signer->public_key.id_hex();
  }
  // Bundle order: by target, then key, so one cache gives one bundle.
  std::sort(items.begin(), items.end(),
            [](const detail::BundleItem& a, const detail::BundleItem& b) {
              if (a.identity.key.target() != b.identity.key.target())
                return a.identity.key.target() < b.identity.key.target();
              return a.identity.name < b.identity.name;
            });
  summary.sha256 = detail::write_bundle(bundle_path, items, signer);
  summarize(items, summary);
  summary.file_bytes = file_size(bundle_path);
  return summary;
}

CacheBundleSummary import_cache_bundle(const std::string& bundle_path,
                                       const RuntimeOptions& cache,
                                       std::string_view pinned_sha256) {
  const CacheSettings settings = resolve_cache_settings(cache);
  const std::string directory = bundle_cache_dir(cache, "import into");
  // Every entry, the pin and the signature are checked (on the bytes read
  // once) before the first entry lands.
  detail::BundleSignature signature;
  const std::vector<detail::BundleItem> items =
      detail::read_bundle(bundle_path, &signature);
  const std::string& digest = signature.file_sha256;
  std::string pin(pinned_sha256);
  std::transform(pin.begin(), pin.end(), pin.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (!pin.empty() && digest != pin) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "bundle {} has SHA-256 {}, not the {} it is pinned to; nothing was "
         "imported",
         bundle_path, digest, pinned_sha256);
  }
  const std::shared_ptr<const detail::EntryTrust> trust =
      detail::make_entry_trust(settings);
  if (const auto refusal =
          detail::bundle_signature_refusal(signature, *trust)) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "bundle {} is refused: {}; nothing was imported", bundle_path,
         *refusal);
  }
  std::string write_error;
  const detail::Logger capture(
      [&](jw_log_level, const std::string& message) { write_error = message; });
  DiskCache disk(directory, "", 0, &capture);
  CacheBundleSummary summary;
  summary.bundle = bundle_path;
  summary.cache_dir = directory;
  summarize(items, summary);
  summary.file_bytes = file_size(bundle_path);
  summary.sha256 = digest;
  summary.signer = detail::to_hex(signature.signer);
  for (const detail::BundleItem& item : items) {
    switch (disk.put_entry(item.identity, item.bytes)) {
      case DiskCache::Put::written: ++summary.written; break;
      case DiskCache::Put::present: ++summary.present; break;
      case DiskCache::Put::failed:
        fail(JW_ERROR_IO, "{} ({} of {} entries were written before it)",
             write_error.empty()
                 ? fmt::format("cannot write {} into {}",
                               item.identity.key.text(), directory)
                 : write_error,
             summary.written + summary.present, items.size());
    }
  }
  // Which bundle served which entry (bundle_index.hpp): present ones too,
  // since a hit on them is this bundle's as much.
  detail::BundleRecord record;
  record.id = detail::bundle_file_id(bundle_path);
  record.name = std::filesystem::path(bundle_path).filename().string();
  record.imported = static_cast<int64_t>(std::time(nullptr));
  for (const detail::BundleItem& item : items)
    record.entries.push_back(item.identity.name);
  detail::write_bundle_record(directory, record);
  if (settings.max_bytes != 0) disk.prune(settings.max_bytes);
  return summary;
}

}  // namespace jitwarm
