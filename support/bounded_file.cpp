#include "bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "file_descriptor.hpp"

namespace jitwarm::detail {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

FileContents refused(FileContents::Status status, std::string why) {
  FileContents c;
  c.status = status;
  c.why = std::move(why);
  return c;
}

}  // namespace

FileContents read_bounded_file(const std::filesystem::path& path,
                               uint64_t max_bytes, Symlinks symlinks) {
  using Status = FileContents::Status;
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (symlinks == Symlinks::refuse) flags |= O_NOFOLLOW;
  int fd = -1;
  do {
    fd = ::open(path.c_str(), flags);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return refused(Status::absent, "does not exist");
    // O_NOFOLLOW on a link (dangling or not) fails with ELOOP.
    if (error == ELOOP && symlinks == Symlinks::refuse)
      return refused(Status::not_regular, "is a symbolic link");
    // Opening a FIFO for writing-only peers or a socket: not a file.
    if (error == ENXIO || error == EOPNOTSUPP)
      return refused(Status::not_regular, "is not a regular file");
    return refused(Status::unreadable,
                   fmt::format("cannot be opened ({})", std::strerror(error)));
  }
  const FileDescriptor file(fd);
  struct stat st {};
  if (::fstat(file.get(), &st) != 0)
    return refused(Status::unreadable,
                   fmt::format("cannot be read ({})", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return refused(Status::not_regular,
                   fmt::format("is {}", kind_of(st.st_mode)));
  const auto too_large = [&](uint64_t size) {
    return refused(
        Status::too_large,
        fmt::format("is {} bytes (more than the {} read)", size, max_bytes));
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return too_large(static_cast<uint64_t>(st.st_size));

  // The file may grow after fstat: read at most one byte past the bound to
  // notice, never more.
  FileContents c;
  c.bytes.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t filled = 0;
  while (true) {
    if (filled == c.bytes.size()) {
      if (c.bytes.size() > max_bytes) return too_large(c.bytes.size());
      c.bytes.resize(std::min<uint64_t>(c.bytes.size() * 2, max_bytes + 1));
    }
    const ssize_t n =
        ::read(file.get(), c.bytes.data() + filled, c.bytes.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      return refused(Status::unreadable,
                     fmt::format("cannot be read ({})", std::strerror(errno)));
    }
    if (n == 0) break;
    filled += static_cast<std::size_t>(n);
  }
  if (filled > max_bytes) return too_large(filled);
  c.bytes.resize(filled);
  c.status = Status::ok;
  return c;
}

}  // namespace jitwarm::detail
