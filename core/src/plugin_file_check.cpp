#include "plugin_file_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "elf_reader.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;
namespace {

// Plugins are ELF64 (P2), the only class the reader reads: a host of
// another word size would load ELF32 plugins.
static_assert(sizeof(void*) == 8, "plugins are 64-bit ELF shared objects");

#if defined(__x86_64__)
constexpr unsigned kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kHostMachine = EM_AARCH64;
#else
constexpr unsigned kHostMachine = 0;  // not checked
#endif

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

std::string why_not_a_shared_object_for_this_host(const std::string& path) {
  const std::optional<ElfReader> file = ElfReader::open(path);
  if (!file) return "cannot be read";
  const ElfHeader header = file->header();
  if (!header.identified()) return "not an ELF file";
  const Elf64_Ehdr& fields = header.fields;
  if (fields.e_ident[EI_CLASS] != ELFCLASS64) {
    // Any other class is called 32-bit, the only other one defined.
    return "ELF class 32-bit, this host is 64-bit";
  }
  if (fields.e_type != ET_DYN) {
    return fmt::format("ELF type {} is not a shared object", fields.e_type);
  }
  if (kHostMachine != 0 && fields.e_machine != kHostMachine) {
    return fmt::format("built for ELF machine {}, this host is machine {}",
                       fields.e_machine, kHostMachine);
  }
  if (!header.complete()) {
    return fmt::format(
        "truncated: {} bytes, shorter than an ELF header ({} bytes)",
        file->size(), sizeof(Elf64_Ehdr));
  }
  // Program headers: what dlopen maps.
  if (fields.e_phnum == 0 || fields.e_phentsize != sizeof(Elf64_Phdr)) {
    return fmt::format(
        "ELF header names {} program headers of {} bytes; a shared object "
        "has them, of {} bytes",
        fields.e_phnum, fields.e_phentsize, sizeof(Elf64_Phdr));
  }
  const auto segments = file->program_headers(fields);
  if (!segments) return segments.why();
  if (std::none_of(segments->begin(), segments->end(),
                   [](const Elf64_Phdr& s) { return s.p_type == PT_LOAD; })) {
    return "has no loadable segment";
  }
  // Section headers, when there are any (a stripped-down object may have
  // none; the loader does not need them).
  if (const auto sections = file->section_headers(fields); !sections) {
    return sections.why();
  }
  return "";
}

}  // namespace

std::string why_not_a_plugin_file(const std::string& path) {
  if (std::string why = why_not_a_regular_file(path); !why.empty()) return why;
  return why_not_a_shared_object_for_this_host(path);
}

}  // namespace jitwarm::detail
