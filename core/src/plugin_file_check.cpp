#include "plugin_file_check.hpp"

#include <fmt/format.h>
#include <link.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

// A directory named like a plugin, a symbolic link to nothing: told before
// the file is read.
std::string why_not_a_regular_file(const std::string& path) {
  std::error_code error;
  const fs::file_status link = fs::symlink_status(path, error);
  if (error || !fs::exists(link)) return "does not exist";
  if (fs::is_symlink(link)) {
    const fs::path target = fs::read_symlink(path, error);
    if (!fs::exists(path, error)) {
      return fmt::format("a symbolic link to {}, which does not exist",
                         target.string());
    }
  }
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) return "a directory, not a shared object";
  if (!fs::is_regular_file(status)) return "not a regular file";
  return "";
}

// a + b <= limit, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

std::string why_not_a_shared_object_for_this_host(const std::string& path) {
  using Ehdr = ElfW(Ehdr);
  using Phdr = ElfW(Phdr);
  using Shdr = ElfW(Shdr);
  std::error_code error;
  const uint64_t size = fs::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  if (error || !in) return "cannot be read";
  unsigned char header[sizeof(Ehdr)] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got < 20 || header[0] != 0x7f || header[1] != 'E' || header[2] != 'L' ||
      header[3] != 'F') {
    return "not an ELF file";
  }
  if (header[4] != (sizeof(void*) == 8 ? 2 : 1)) {
    return fmt::format("ELF class {}-bit, this host is {}-bit",
                       header[4] == 2 ? 64 : 32, sizeof(void*) * 8);
  }
  const unsigned type = header[16] | (header[17] << 8);
  const unsigned machine = header[18] | (header[19] << 8);
  if (type != 3 /* ET_DYN */) {
    return fmt::format("ELF type {} is not a shared object", type);
  }
#if defined(__x86_64__)
  constexpr unsigned kHostMachine = 62;  // EM_X86_64
#elif defined(__aarch64__)
  constexpr unsigned kHostMachine = 183;  // EM_AARCH64
#else
  constexpr unsigned kHostMachine = 0;
#endif
  if (kHostMachine != 0 && machine != kHostMachine) {
    return fmt::format("built for ELF machine {}, this host is machine {}",
                       machine, kHostMachine);
  }
  if (got < sizeof(Ehdr)) {
    return fmt::format(
        "truncated: {} bytes, shorter than an ELF "
        "header ({} bytes)",
        size, sizeof(Ehdr));
  }
  Ehdr ehdr;
  std::memcpy(&ehdr, header, sizeof(ehdr));
  const auto read_at = [&](uint64_t offset, void* out, std::size_t bytes) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
    return static_cast<std::size_t>(in.gcount()) == bytes;
  };

  // Program headers: what dlopen maps.
  if (ehdr.e_phnum == 0 || ehdr.e_phentsize != sizeof(Phdr)) {
    return fmt::format(
        "ELF header names {} program headers of {} "
        "bytes; a shared object has them, of {} bytes",
        ehdr.e_phnum, ehdr.e_phentsize, sizeof(Phdr));
  }
  if (!fits(ehdr.e_phoff, uint64_t{ehdr.e_phnum} * sizeof(Phdr), size)) {
    return fmt::format(
        "truncated: its program headers end past the "
        "end of the file ({} bytes)",
        size);
  }
  bool loadable = false;
  for (unsigned i = 0; i < ehdr.e_phnum; ++i) {
    Phdr phdr;
    if (!read_at(ehdr.e_phoff + uint64_t{i} * sizeof(Phdr), &phdr,
                 sizeof(phdr))) {
      return "cannot be read";
    }
    loadable = loadable || phdr.p_type == PT_LOAD;
    if (!fits(phdr.p_offset, phdr.p_filesz, size)) {
      return fmt::format(
          "truncated: segment {} (type {:#x}) covers bytes "
          "{} to {}, but the file has {} bytes",
          i, phdr.p_type, phdr.p_offset, phdr.p_offset + phdr.p_filesz, size);
    }
  }
  if (!loadable) return "has no loadable segment";

  // Section headers, when there are any (a stripped-down object may have
  // none; the loader does not need them).
  if (ehdr.e_shoff != 0) {
    if (ehdr.e_shentsize != sizeof(Shdr)) {
      return fmt::format("section headers of {} bytes; expected {}",
                         ehdr.e_shentsize, sizeof(Shdr));
    }
    uint64_t count = ehdr.e_shnum;
    Shdr first;
    if (!fits(ehdr.e_shoff, sizeof(Shdr), size) ||
        !read_at(ehdr.e_shoff, &first, sizeof(first))) {
      return fmt::format(
          "truncated: its section headers start past "
          "the end of the file ({} bytes)",
          size);
    }
    if (count == 0) count = first.sh_size;  // extended numbering
    if (!fits(ehdr.e_shoff, count * sizeof(Shdr), size) ||
        count > size / sizeof(Shdr)) {
      return fmt::format(
          "truncated: its {} section headers end past "
          "the end of the file ({} bytes)",
          count, size);
    }
    for (uint64_t i = 0; i < count; ++i) {
      Shdr shdr;
      if (!read_at(ehdr.e_shoff + i * sizeof(Shdr), &shdr, sizeof(shdr))) {
        return "cannot be read";
      }
      if (shdr.sh_type != SHT_NOBITS &&
          !fits(shdr.sh_offset, shdr.sh_size, size)) {
        return fmt::format(
            "truncated: section {} covers bytes {} to {}, "
            "but the file has {} bytes",
            i, shdr.sh_offset, shdr.sh_offset + shdr.sh_size, size);
      }
    }
  }
  return "";
}

}  // namespace

std::string why_not_a_plugin_file(const std::string& path) {
  if (std::string why = why_not_a_regular_file(path); !why.empty()) return why;
  return why_not_a_shared_object_for_this_host(path);
}

}  // namespace jitwarm::detail
