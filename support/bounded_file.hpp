// Reading a whole file that may be anything: a FIFO, a device such as
// /dev/zero, a directory, a symbolic link planted in a cache, or a
// multi-GiB sparse file. Only a regular file of at most `max_bytes` is read;
// anything else is refused before a byte is read, so a reader never blocks
// (the file is opened O_NONBLOCK: opening a FIFO does not wait for a
// writer) and never holds more than its bound in memory. Manifests,
// expectation files and compile-cache entries are all read through here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace jitwarm::detail {

struct FileContents {
  enum class Status {
    ok,
    absent,       // nothing at that path (ENOENT): for a cache, a plain miss
    not_regular,  // a directory, FIFO, device, socket, or (refused) symlink
    too_large,    // more than the reader's bound
    unreadable,   // permissions, I/O errors, a path through a non-directory
  };
  Status status = Status::absent;
  std::string bytes;  // the content when ok
  // Otherwise a phrase that follows "it": "does not exist", "is a
  // directory", "is 5368709120 bytes (more than the 67108864 read)",
  // "cannot be opened (Permission denied)", ...
  std::string why;
  bool ok() const { return status == Status::ok; }
};

enum class Symlinks {
  follow,  // files users name (a manifest may well be a link)
  refuse,  // files jitwarm made itself (cache entries): a link is foreign
};

FileContents read_bounded_file(const std::filesystem::path& path,
                               uint64_t max_bytes, Symlinks symlinks);

// Files a user names on a command line (manifests, expectation files) are
// text of modest size; this bound keeps /dev/zero or a mistaken multi-GiB
// file from being read whole.
inline constexpr uint64_t kMaxUserFileBytes = 64ull << 20;

}  // namespace jitwarm::detail
