// read_elf: the header and section headers through the one ELF reader
// (support/elf_reader.hpp), then the symbol tables, the relocations and the
// names they point to, all bounds-checked.
#include "elf_symbols.hpp"

#include "elf_reader.hpp"

namespace jitwarm::gpu {
namespace {

using Sections = std::vector<Elf64_Shdr>;

// A section's bytes in the image, or nullopt when they are out of bounds.
std::optional<std::string_view> contents_of(std::string_view bytes,
                                            const Elf64_Shdr& section) {
  if (!detail::lies_within(section.sh_offset, section.sh_size, bytes.size())) {
    return std::nullopt;
  }
  return bytes.substr(section.sh_offset, section.sh_size);
}

// The string table a symbol table links to, or nullopt when out of bounds.
std::optional<std::string_view> linked_strings(std::string_view bytes,
                                               const Sections& sections,
                                               const Elf64_Shdr& table) {
  if (table.sh_link >= sections.size()) return std::nullopt;
  return contents_of(bytes, sections[table.sh_link]);
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
  const detail::ElfReader reader(bytes);
  const detail::ElfHeader header = reader.header();
  if (!header.complete() || !header.identified()) return std::nullopt;
  const Elf64_Ehdr& fields = header.fields;
  if (fields.e_ident[EI_CLASS] != ELFCLASS64 ||
      fields.e_ident[EI_DATA] != ELFDATA2LSB) {
    return std::nullopt;
  }
  const detail::ElfResult<Sections> read_sections =
      reader.section_headers(fields);
  if (!read_sections) return std::nullopt;
  const Sections& sections = *read_sections;

  ElfImage image;
  image.machine = fields.e_machine;
  std::optional<std::string_view> names;  // none: sections stay unnamed
  if (fields.e_shstrndx < sections.size()) {
    names = contents_of(bytes, sections[fields.e_shstrndx]);
    if (!names) return std::nullopt;
  }
  for (const Elf64_Shdr& section : sections) {
    ElfSection out;
    out.type = section.sh_type;
    if (names) {
      std::optional<std::string> name = name_at(*names, section.sh_name);
      if (!name) return std::nullopt;
      out.name = std::move(*name);
    }
    if (section.sh_type != SHT_NOBITS) {  // in bounds (section_headers)
      out.offset = section.sh_offset;
      out.size = section.sh_size;
    }
    image.sections.push_back(std::move(out));
  }
  for (const Elf64_Shdr& table : sections) {
    if (table.sh_type != SHT_SYMTAB && table.sh_type != SHT_DYNSYM) continue;
    const std::optional<std::string_view> names =
        linked_strings(bytes, sections, table);
    if (!names) return std::nullopt;
    for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= table.sh_size;
         at += sizeof(Elf64_Sym)) {
      Elf64_Sym entry;
      if (!reader.read(table.sh_offset + at, entry)) return std::nullopt;
      std::optional<std::string> name = name_at(*names, entry.st_name);
      if (!name) return std::nullopt;
      ElfSymbol symbol;
      symbol.name = std::move(*name);
      symbol.type = static_cast<uint8_t>(ELF64_ST_TYPE(entry.st_info));
      symbol.defined = entry.st_shndx != SHN_UNDEF;
      symbol.value = entry.st_value;
      if (!symbol.name.empty()) image.symbols.push_back(std::move(symbol));
    }
  }
  for (const Elf64_Shdr& table : sections) {
    if (table.sh_type != SHT_RELA) continue;
    for (uint64_t at = 0; at + sizeof(Elf64_Rela) <= table.sh_size;
         at += sizeof(Elf64_Rela)) {
      Elf64_Rela entry;
      if (!reader.read(table.sh_offset + at, entry)) return std::nullopt;
      ElfRelocation relocation;
      relocation.offset = entry.r_offset;
      relocation.type = static_cast<uint32_t>(ELF64_R_TYPE(entry.r_info));
      relocation.addend = entry.r_addend;
      const uint64_t symbol_index = ELF64_R_SYM(entry.r_info);
      if (symbol_index != 0) {
        // The symbol of the table this section links to.
        if (table.sh_link >= sections.size()) return std::nullopt;
        const Elf64_Shdr& symbols = sections[table.sh_link];
        const std::optional<std::string_view> names =
            linked_strings(bytes, sections, symbols);
        Elf64_Word name_offset = 0;
        if (!names || symbol_index >= symbols.sh_size / sizeof(Elf64_Sym) ||
            !reader.read(symbols.sh_offset + symbol_index * sizeof(Elf64_Sym),
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
