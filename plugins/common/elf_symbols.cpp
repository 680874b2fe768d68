// read_elf: section headers -> symbol tables -> names, all bounds-checked.
#include "elf_symbols.hpp"

#include <cstring>

namespace jitwarm::gpu {
namespace {

constexpr uint32_t kSectionSymtab = 2;
constexpr uint32_t kSectionRela = 4;
constexpr uint32_t kSectionNobits = 8;
constexpr uint32_t kSectionDynsym = 11;
constexpr std::size_t kSymbolSize = 24;      // sizeof(Elf64_Sym)
constexpr std::size_t kRelocationSize = 24;  // sizeof(Elf64_Rela)

template <typename T>
bool read_at(std::string_view bytes, uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));  // little-endian host
  return true;
}

struct Section {
  uint32_t name = 0;
  uint32_t type = 0;
  uint32_t link = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// A section's bytes in the file, or nullopt when they are out of bounds.
std::optional<std::string_view> contents_of(std::string_view bytes,
                                            const Section& section) {
  if (section.offset > bytes.size() ||
      bytes.size() - section.offset < section.size) {
    return std::nullopt;
  }
  return bytes.substr(section.offset, section.size);
}

// The string table a symbol table links to, or nullopt when out of bounds.
std::optional<std::string_view> linked_strings(
    std::string_view bytes, const std::vector<Section>& sections,
    const Section& table) {
  if (table.link >= sections.size()) return std::nullopt;
  return contents_of(bytes, sections[table.link]);
}

// The NUL-terminated name at `offset` of a string table ("" past its end),
// or nullopt when it is not terminated.
std::optional<std::string> name_at(std::string_view names, uint32_t offset) {
  if (offset >= names.size()) return std::string();
  const std::size_t end = names.find('\0', offset);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(names.substr(offset, end - offset));
}

}  // namespace

std::optional<ElfImage> read_elf(std::string_view bytes) {
  if (bytes.size() < 64 || bytes.substr(0, 4) !=
                               "\x7f"
                               "ELF") {
    return std::nullopt;
  }
  if (bytes[4] != 2 /* ELFCLASS64 */ || bytes[5] != 1 /* little-endian */) {
    return std::nullopt;
  }
  ElfImage image;
  uint64_t section_offset = 0;
  uint16_t section_entry_size = 0;
  uint16_t section_count = 0;
  if (!read_at(bytes, 18, image.machine) ||
      !read_at(bytes, 40, section_offset) ||
      !read_at(bytes, 58, section_entry_size) ||
      !read_at(bytes, 60, section_count)) {
    return std::nullopt;
  }
  if (section_count != 0 && section_entry_size < 64) return std::nullopt;

  std::vector<Section> sections(section_count);
  for (uint16_t i = 0; i < section_count; ++i) {
    const uint64_t base =
        section_offset + static_cast<uint64_t>(i) * section_entry_size;
    if (!read_at(bytes, base, sections[i].name) ||
        !read_at(bytes, base + 4, sections[i].type) ||
        !read_at(bytes, base + 24, sections[i].offset) ||
        !read_at(bytes, base + 32, sections[i].size) ||
        !read_at(bytes, base + 40, sections[i].link)) {
      return std::nullopt;
    }
  }
  uint16_t names_index = 0;  // e_shstrndx
  if (!read_at(bytes, 62, names_index)) return std::nullopt;
  std::optional<std::string_view> names;  // none: sections stay unnamed
  if (names_index < sections.size()) {
    names = contents_of(bytes, sections[names_index]);
    if (!names) return std::nullopt;
  }
  for (const Section& section : sections) {
    ElfSection out;
    out.type = section.type;
    if (names) {
      std::optional<std::string> name = name_at(*names, section.name);
      if (!name) return std::nullopt;
      out.name = std::move(*name);
    }
    if (section.type != kSectionNobits) {
      if (!contents_of(bytes, section)) return std::nullopt;
      out.offset = section.offset;
      out.size = section.size;
    }
    image.sections.push_back(std::move(out));
  }
  for (const Section& table : sections) {
    if (table.type != kSectionSymtab && table.type != kSectionDynsym) continue;
    const std::optional<std::string_view> names =
        linked_strings(bytes, sections, table);
    if (!names) return std::nullopt;
    for (uint64_t at = 0; at + kSymbolSize <= table.size; at += kSymbolSize) {
      uint32_t name_offset = 0;
      uint8_t info = 0;
      uint16_t section_index = 0;
      uint64_t value = 0;
      if (!read_at(bytes, table.offset + at, name_offset) ||
          !read_at(bytes, table.offset + at + 4, info) ||
          !read_at(bytes, table.offset + at + 6, section_index) ||
          !read_at(bytes, table.offset + at + 8, value)) {
        return std::nullopt;
      }
      std::optional<std::string> name = name_at(*names, name_offset);
      if (!name) return std::nullopt;
      ElfSymbol symbol;
      symbol.name = std::move(*name);
      symbol.type = static_cast<uint8_t>(info & 0xf);
      symbol.defined = section_index != 0;
      symbol.value = value;
      if (!symbol.name.empty()) image.symbols.push_back(std::move(symbol));
    }
  }
  for (const Section& table : sections) {
    if (table.type != kSectionRela) continue;
    for (uint64_t at = 0; at + kRelocationSize <= table.size;
         at += kRelocationSize) {
      ElfRelocation relocation;
      uint64_t info = 0;
      if (!read_at(bytes, table.offset + at, relocation.offset) ||
          !read_at(bytes, table.offset + at + 8, info) ||
          !read_at(bytes, table.offset + at + 16, relocation.addend)) {
        return std::nullopt;
      }
      relocation.type = static_cast<uint32_t>(info & 0xffffffffu);
      const uint64_t symbol_index = info >> 32;
      if (symbol_index != 0) {
        // The symbol of the table this section links to.
        if (table.link >= sections.size()) return std::nullopt;
        const Section& symbols = sections[table.link];
        const std::optional<std::string_view> names =
            linked_strings(bytes, sections, symbols);
        uint32_t name_offset = 0;
        if (!names || symbol_index >= symbols.size / kSymbolSize ||
            !read_at(bytes, symbols.offset + symbol_index * kSymbolSize,
                     name_offset)) {
          return std::nullopt;
        }
        std::optional<std::string> name = name_at(*names, name_offset);
        if (!name) return std::nullopt;
        relocation.symbol = std::move(*name);
      }
      image.relocations.push_back(std::move(relocation));
    }
  }
  return image;
}

}  // namespace jitwarm::gpu
