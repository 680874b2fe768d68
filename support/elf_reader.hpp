// The tree's one reader of ELF structure: the header, the program headers
// and the section headers of an ELF64 little-endian image, each checked
// against the image's size, and what is wrong said in words. The plugin
// loader checks a plugin with it before dlopen (core/src/plugin_file_check),
// and the GPU plugins read the symbols of device binaries (CUBINs, AMD code
// objects) through it (plugins/common/elf_symbols).
//
// * Nothing is read out of bounds: every offset and size is checked against
//   the image's size, without overflow, before a byte is copied.
// * A file is read piece by piece, only what is asked for (a plugin's
//   headers, never its code); bytes in memory are read where they lie.
// * It reads, it does not judge: whether a 32-bit file, a file for another
//   machine or one without program headers will do is its caller's to say.
// * ELF64 little-endian only: every image jitwarm reads is one (x86-64 and
//   AArch64 plugins, docs/plugin-abi.md P2; CUBINs; AMD code objects), so
//   headers are copied as they lie in the file.
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "file_descriptor.hpp"

namespace jitwarm::detail {

// offset + size <= limit, without overflow.
inline bool lies_within(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// The ELF header as far as the image has one.
struct ElfHeader {
  Elf64_Ehdr fields{};         // zero past the bytes the image has
  std::size_t bytes_read = 0;  // sizeof(Elf64_Ehdr) when it has all of it
  // The magic number is there, and the fields up to e_machine: the class,
  // the data encoding, the type and the machine can be read.
  bool identified() const;
  bool complete() const { return bytes_read == sizeof(Elf64_Ehdr); }
};

// Why a step of reading gives nothing ("truncated: ...", "cannot be read").
struct ElfFailure {
  std::string why;
};

// What a step of reading gives: its value, or an ElfFailure. Implicit from
// either, so a step returns whichever it has.
template <typename T>
class ElfResult {
 public:
  ElfResult(T value) : value_(std::move(value)) {}
  ElfResult(ElfFailure failure) : why_(std::move(failure.why)) {}
  explicit operator bool() const { return value_.has_value(); }
  const T& operator*() const { return *value_; }
  const T* operator->() const { return &*value_; }
  const std::string& why() const { return why_; }

 private:
  std::optional<T> value_;
  std::string why_;
};

class ElfReader {
 public:
  // Bytes in memory, read where they lie: they must outlive the reader.
  explicit ElfReader(std::string_view image)
      : image_(image), size_(image.size()) {}
  // The regular file at `path`, read when asked; std::nullopt when it
  // cannot be opened, is not a regular file or its size cannot be read.
  static std::optional<ElfReader> open(const std::filesystem::path& path);

  uint64_t size() const { return size_; }

  ElfHeader header() const;
  // The program header table (none when e_phnum is 0); every segment's
  // bytes in the file lie within it.
  ElfResult<std::vector<Elf64_Phdr>> program_headers(
      const Elf64_Ehdr& header) const;
  // The section header table (none when e_shoff is 0; a count of 0 with a
  // table is extended numbering, the count in the first header's sh_size);
  // every section's bytes, but a NOBITS section's, lie within the image.
  ElfResult<std::vector<Elf64_Shdr>> section_headers(
      const Elf64_Ehdr& header) const;

  // Copies `count` bytes at `offset`: false unless all of them lie within
  // the image and could be read.
  bool read(uint64_t offset, void* out, std::size_t count) const;
  template <typename T>
  bool read(uint64_t offset, T& out) const {
    return read(offset, &out, sizeof(T));
  }

 private:
  ElfReader(FileDescriptor file, uint64_t size)
      : file_(std::move(file)), size_(size) {}
  // Copies up to `count` bytes at `offset`, however many the image has.
  std::size_t read_up_to(uint64_t offset, void* out, std::size_t count) const;

  std::string_view image_;   // when reading memory
  FileDescriptor file_{-1};  // when reading a file
  uint64_t size_ = 0;
};

}  // namespace jitwarm::detail
