// A minimal ELF64 reader for device binaries: the machine field and the
// symbol names. CUBINs (EM_CUDA = 190) and AMD code objects (EM_AMDGPU =
// 224) are ELF64 little-endian. Tests check a compile produced the lowered
// name; an out-of-process compiler (clang for HIP) finds the kernel it
// instantiated by its symbol.
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
};

struct ElfImage {
  uint16_t machine = 0;
  std::vector<ElfSymbol> symbols;  // from every SYMTAB and DYNSYM section
};

// std::nullopt when `bytes` is not a well-formed ELF64 little-endian image
// (every offset is bounds-checked).
std::optional<ElfImage> read_elf(std::string_view bytes);

}  // namespace jitwarm::gpu
