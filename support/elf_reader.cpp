#include "elf_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace jitwarm::detail {

// Headers are copied as they lie in the image (elf_reader.hpp says why).
static_assert(std::endian::native == std::endian::little,
              "the ELF reader copies little-endian headers as they lie");

namespace {

// "program headers of 40 bytes; expected 56".
ElfFailure wrong_entry_size(std::string_view table, unsigned size,
                            std::size_t expected) {
  return {fmt::format("{} headers of {} bytes; expected {}", table, size,
                      expected)};
}

// The `count` entries of a table at `offset` (which lies within the image),
// each passed to `check`, which says what is wrong with it or "".
template <typename Entry, typename Check>
ElfResult<std::vector<Entry>> read_entries(const ElfReader& reader,
                                           uint64_t offset, uint64_t count,
                                           Check&& check) {
  std::vector<Entry> entries(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (!reader.read(offset + i * sizeof(Entry), entries[i])) {
      return ElfFailure{"cannot be read"};
    }
    if (std::string why = check(i, entries[i]); !why.empty()) {
      return ElfFailure{std::move(why)};
    }
  }
  return entries;
}

}  // namespace

bool ElfHeader::identified() const {
  return bytes_read >= offsetof(Elf64_Ehdr, e_machine) + sizeof(Elf64_Half) &&
         std::memcmp(fields.e_ident, ELFMAG, SELFMAG) == 0;
}

std::optional<ElfReader> ElfReader::open(const std::filesystem::path& path) {
  int fd = -1;
  do {
    // Non-blocking: a FIFO named like a plugin must not wait for a writer.
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return std::nullopt;
  FileDescriptor file(fd);
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return ElfReader(std::move(file), static_cast<uint64_t>(st.st_size));
}

std::size_t ElfReader::read_up_to(uint64_t offset, void* out,
                                  std::size_t count) const {
  if (file_.get() < 0) {
    if (offset >= image_.size()) return 0;
    const std::size_t copied =
        std::min<uint64_t>(count, image_.size() - offset);
    std::memcpy(out, image_.data() + offset, copied);
    return copied;
  }
  std::size_t copied = 0;
  while (copied < count) {
    const ssize_t got =
        ::pread(file_.get(), static_cast<char*>(out) + copied, count - copied,
                static_cast<off_t>(offset + copied));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the end of the file, or an I/O error
    copied += static_cast<std::size_t>(got);
  }
  return copied;
}

bool ElfReader::read(uint64_t offset, void* out, std::size_t count) const {
  return lies_within(offset, count, size_) &&
         read_up_to(offset, out, count) == count;
}

ElfHeader ElfReader::header() const {
  ElfHeader header;
  header.bytes_read = read_up_to(0, &header.fields, sizeof(header.fields));
  return header;
}

ElfResult<std::vector<Elf64_Phdr>> ElfReader::program_headers(
    const Elf64_Ehdr& header) const {
  if (header.e_phnum == 0) return std::vector<Elf64_Phdr>();
  if (header.e_phentsize != sizeof(Elf64_Phdr)) {
    return wrong_entry_size("program", header.e_phentsize, sizeof(Elf64_Phdr));
  }
  if (!lies_within(header.e_phoff,
                   uint64_t{header.e_phnum} * sizeof(Elf64_Phdr), size_)) {
    return ElfFailure{
        fmt::format("truncated: its program headers end past the end of the "
                    "file ({} bytes)",
                    size_)};
  }
  return read_entries<Elf64_Phdr>(
      *this, header.e_phoff, header.e_phnum,
      [&](uint64_t i, const Elf64_Phdr& segment) -> std::string {
        if (lies_within(segment.p_offset, segment.p_filesz, size_)) return "";
        return fmt::format(
            "truncated: segment {} (type {:#x}) covers bytes {} to {}, but the "
            "file has {} bytes",
            i, segment.p_type, segment.p_offset,
            segment.p_offset + segment.p_filesz, size_);
      });
}

ElfResult<std::vector<Elf64_Shdr>> ElfReader::section_headers(
    const Elf64_Ehdr& header) const {
  if (header.e_shoff == 0) return std::vector<Elf64_Shdr>();
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    return wrong_entry_size("section", header.e_shentsize, sizeof(Elf64_Shdr));
  }
  Elf64_Shdr first;
  if (!read(header.e_shoff, first)) {
    return ElfFailure{
        fmt::format("truncated: its section headers start past the end of the "
                    "file ({} bytes)",
                    size_)};
  }
  const uint64_t count = header.e_shnum != 0 ? header.e_shnum : first.sh_size;
  if (count > size_ / sizeof(Elf64_Shdr) ||
      !lies_within(header.e_shoff, count * sizeof(Elf64_Shdr), size_)) {
    return ElfFailure{
        fmt::format("truncated: its {} section headers end past the end of "
                    "the file ({} bytes)",
                    count, size_)};
  }
  return read_entries<Elf64_Shdr>(
      *this, header.e_shoff, count,
      [&](uint64_t i, const Elf64_Shdr& section) -> std::string {
        if (section.sh_type == SHT_NOBITS ||
            lies_within(section.sh_offset, section.sh_size, size_)) {
          return "";
        }
        return fmt::format(
            "truncated: section {} covers bytes {} to {}, but the file has {} "
            "bytes",
            i, section.sh_offset, section.sh_offset + section.sh_size, size_);
      });
}

}  // namespace jitwarm::detail
