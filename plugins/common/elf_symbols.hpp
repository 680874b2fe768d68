// The symbols of device binaries: the machine field, the sections (name,
// where their bytes lie), the symbols (name, type, value) and the
// relocations with addends, read through the one ELF reader
// (support/elf_reader.hpp). CUBINs (EM_CUDA = 190) and AMD code objects
// (EM_AMDGPU = 224) are ELF64 little-endian. Tests check a compile produced
// the lowered name; the HIP plugin finds the kernel each name expression
// instantiated by its symbol, or through the relocation of a marker that
// points to it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::gpu {

inline constexpr uint16_t kElfMachineCuda = 190;
inline constexpr uint16_t kElfMachineAmdgpu = 224;

struct ElfSymbol {
  std::string name;
  uint8_t type = 0;  // STT_* (2 = function)
  bool defined = false;
  uint64_t value = 0;  // st_value: an address in a linked image
};

// A relocation with an explicit addend (SHT_RELA), e.g. a dynamic
// relocation of a linked AMD code object.
struct ElfRelocation {
  uint64_t offset = 0;  // r_offset: the address it patches
  uint32_t type = 0;    // ELF64_R_TYPE, machine-specific
  std::string symbol;   // the symbol it refers to; empty for none
  int64_t addend = 0;
};

struct ElfSection {
  std::string name;   // from the section-name table; empty without one
  uint32_t type = 0;  // SHT_* (8 = NOBITS: no contents in the file)
  // Where its contents lie in the image read (bounds-checked; 0 and 0 for
  // NOBITS): bytes.substr(offset, size).
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct ElfImage {
  uint16_t machine = 0;
  std::vector<ElfSection> sections;  // in section-header order
  std::vector<ElfSymbol> symbols;    // from every SYMTAB and DYNSYM section
  std::vector<ElfRelocation> relocations;  // from every RELA section
};

// std::nullopt when `bytes` is not a well-formed ELF64 little-endian image
// (every offset is bounds-checked).
std::optional<ElfImage> read_elf(std::string_view bytes);

}  // namespace jitwarm::gpu
