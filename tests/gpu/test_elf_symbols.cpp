// The ELF64 reader (plugins/common/elf_symbols) on hand-made images: real
// CUBINs are read in test_nvrtc_kernel_matrix.cpp. Anything malformed is
// rejected, never read out of bounds.
#include "elf_symbols.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>

using jitwarm::gpu::read_elf;

namespace {

template <typename T>
void put(std::string& image, std::size_t offset, T value) {
  if (image.size() < offset + sizeof(T)) image.resize(offset + sizeof(T));
  std::memcpy(image.data() + offset, &value, sizeof(T));
}

// A minimal ELF64 image: null section, .strtab, .symtab with one symbol.
std::string tiny_image(uint16_t machine, const std::string& symbol) {
  std::string image(64, '\0');
  image[0] = 0x7f;
  image[1] = 'E';
  image[2] = 'L';
  image[3] = 'F';
  image[4] = 2;  // 64-bit
  image[5] = 1;  // little-endian
  put<uint16_t>(image, 18, machine);
  const std::string strings =
      std::string("\0", 1) + symbol + std::string("\0", 1);
  const std::size_t strtab = 64;
  image += strings;
  const std::size_t symtab = (image.size() + 7) / 8 * 8;
  image.resize(symtab + 48, '\0');             // null symbol + one symbol
  put<uint32_t>(image, symtab + 24, 1);        // st_name
  put<uint8_t>(image, symtab + 24 + 4, 0x12);  // global function
  put<uint16_t>(image, symtab + 24 + 6, 1);    // defined in section 1
  const std::size_t sections = image.size();
  image.resize(sections + 3 * 64, '\0');
  put<uint32_t>(image, sections + 64 + 4, 3);  // SHT_STRTAB
  put<uint64_t>(image, sections + 64 + 24, strtab);
  put<uint64_t>(image, sections + 64 + 32, strings.size());
  put<uint32_t>(image, sections + 128 + 4, 2);  // SHT_SYMTAB
  put<uint64_t>(image, sections + 128 + 24, symtab);
  put<uint64_t>(image, sections + 128 + 32, 48);
  put<uint32_t>(image, sections + 128 + 40, 1);  // sh_link: .strtab
  put<uint64_t>(image, 40, sections);
  put<uint16_t>(image, 58, 64);
  put<uint16_t>(image, 60, 3);
  return image;
}

}  // namespace

TEST_CASE("given a well-formed image, then machine and symbols are read") {
  const auto image =
      read_elf(tiny_image(jitwarm::gpu::kElfMachineCuda, "_Z1kv"));
  REQUIRE(image.has_value());
  CHECK(image->machine == 190);
  REQUIRE(image->symbols.size() == 1);
  CHECK(image->symbols[0].name == "_Z1kv");
  CHECK(image->symbols[0].type == 2);
  CHECK(image->symbols[0].defined);
}

TEST_CASE("given malformed images, then they are rejected") {
  CHECK_FALSE(read_elf("").has_value());
  CHECK_FALSE(read_elf("not an elf file at all, just text").has_value());
  std::string image = tiny_image(190, "k");
  // Every truncation is rejected or read within bounds.
  for (std::size_t size = 0; size < image.size(); size += 7) {
    const auto truncated = read_elf(std::string_view(image).substr(0, size));
    if (truncated.has_value()) CHECK(truncated->symbols.size() <= 1);
  }
  std::string bad_link = image;
  const uint64_t sections = [&] {
    uint64_t v;
    std::memcpy(&v, image.data() + 40, 8);
    return v;
  }();
  put<uint32_t>(bad_link, sections + 128 + 40, 99);
  CHECK_FALSE(read_elf(bad_link).has_value());
  std::string big_endian = image;
  big_endian[5] = 2;
  CHECK_FALSE(read_elf(big_endian).has_value());
}
