// read_elf: section headers -> symbol tables -> names, all bounds-checked.
#include "elf_symbols.hpp"

#include <cstring>

namespace jitwarm::gpu {
namespace {

constexpr uint32_t kSectionSymtab = 2;
constexpr uint32_t kSectionDynsym = 11;
constexpr std::size_t kSymbolSize = 24;  // sizeof(Elf64_Sym)

template <typename T>
bool read_at(std::string_view bytes, uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));  // little-endian host
  return true;
}

struct Section {
  uint32_t type = 0;
  uint32_t link = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

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
    if (!read_at(bytes, base + 4, sections[i].type) ||
        !read_at(bytes, base + 24, sections[i].offset) ||
        !read_at(bytes, base + 32, sections[i].size) ||
        !read_at(bytes, base + 40, sections[i].link)) {
      return std::nullopt;
    }
  }
  for (const Section& table : sections) {
    if (table.type != kSectionSymtab && table.type != kSectionDynsym) continue;
    if (table.link >= sections.size()) return std::nullopt;
    const Section& strings = sections[table.link];
    if (strings.offset > bytes.size() ||
        bytes.size() - strings.offset < strings.size) {
      return std::nullopt;
    }
    const std::string_view names = bytes.substr(strings.offset, strings.size);
    for (uint64_t at = 0; at + kSymbolSize <= table.size; at += kSymbolSize) {
      uint32_t name_offset = 0;
      uint8_t info = 0;
      uint16_t section_index = 0;
      if (!read_at(bytes, table.offset + at, name_offset) ||
          !read_at(bytes, table.offset + at + 4, info) ||
          !read_at(bytes, table.offset + at + 6, section_index)) {
        return std::nullopt;
      }
      if (name_offset >= names.size()) continue;
      const std::size_t end = names.find('\0', name_offset);
      if (end == std::string_view::npos) return std::nullopt;
      ElfSymbol symbol;
      symbol.name = std::string(names.substr(name_offset, end - name_offset));
      symbol.type = static_cast<uint8_t>(info & 0xf);
      symbol.defined = section_index != 0;
      if (!symbol.name.empty()) image.symbols.push_back(std::move(symbol));
    }
  }
  return image;
}

}  // namespace jitwarm::gpu
