// Tests of support/elf_reader: a file read piece by piece and the same bytes
// in memory give the same headers; whatever lies past the end of the image
// is a reason in words, never a read out of bounds.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "elf_reader.hpp"
#include "temporary_directory.hpp"

using jitwarm::detail::ElfHeader;
using jitwarm::detail::ElfReader;
using jitwarm::detail::ElfResult;
using jitwarm::detail::TemporaryDirectory;

namespace {

std::string bytes_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The header of a shared object whose header is whole.
Elf64_Ehdr whole_header(const ElfReader& reader) {
  const ElfHeader header = reader.header();
  REQUIRE(header.identified());
  REQUIRE(header.complete());
  return header.fields;
}

bool same_bytes(const void* a, const void* b, std::size_t size) {
  return std::memcmp(a, b, size) == 0;
}

// A table read from the file and from memory: `count` entries, the same.
template <typename Entry>
void same_table(const ElfResult<std::vector<Entry>>& from_file,
                const ElfResult<std::vector<Entry>>& from_memory,
                std::size_t count) {
  REQUIRE(from_file);
  REQUIRE(from_memory);
  CHECK(from_file->size() == count);
  REQUIRE(from_memory->size() == from_file->size());
  CHECK(same_bytes(from_file->data(), from_memory->data(),
                   from_file->size() * sizeof(Entry)));
}

}  // namespace

TEST_CASE(
    "given a shared object, when read from its file and from memory, then "
    "the headers read are the same") {
  const std::string bytes = bytes_of(FAKE_GOOD_PLUGIN);
  const std::optional<ElfReader> file = ElfReader::open(FAKE_GOOD_PLUGIN);
  REQUIRE(file.has_value());
  const ElfReader memory(bytes);
  CHECK(file->size() == bytes.size());

  const Elf64_Ehdr header = whole_header(*file);
  const Elf64_Ehdr in_memory = whole_header(memory);
  CHECK(same_bytes(&header, &in_memory, sizeof(header)));
  CHECK(header.e_type == ET_DYN);

  same_table(file->program_headers(header), memory.program_headers(header),
             header.e_phnum);
  same_table(file->section_headers(header), memory.section_headers(header),
             header.e_shnum);
}

TEST_CASE(
    "given a shared object cut short, then what lies past its end is named "
    "and nothing is read there") {
  const std::string bytes = bytes_of(FAKE_GOOD_PLUGIN);
  const Elf64_Ehdr header = whole_header(ElfReader(bytes));

  SUBCASE("a header cut short is not whole, but identified") {
    const ElfReader cut(std::string_view(bytes).substr(0, 40));
    CHECK(cut.header().identified());
    CHECK_FALSE(cut.header().complete());
    CHECK(cut.header().bytes_read == 40);
  }
  SUBCASE("the section headers") {
    // The first section header whole (it may hold the count), not the rest.
    const std::string_view cut = std::string_view(bytes).substr(
        0, header.e_shoff + sizeof(Elf64_Shdr) + 10);
    const auto sections = ElfReader(cut).section_headers(header);
    REQUIRE_FALSE(sections);
    CHECK(sections.why() ==
          "truncated: its " + std::to_string(header.e_shnum) +
              " section headers end past the end of the file (" +
              std::to_string(cut.size()) + " bytes)");
  }
  SUBCASE("a segment") {
    // Program headers come first; the last loadable segment ends near the
    // end of the file.
    const std::string_view cut = std::string_view(bytes).substr(0, 2048);
    const auto segments = ElfReader(cut).program_headers(header);
    REQUIRE_FALSE(segments);
    CHECK(segments.why().starts_with("truncated: segment "));
    CHECK(segments.why().ends_with("but the file has 2048 bytes"));
  }
  SUBCASE("a read past the end") {
    const ElfReader reader(bytes);
    uint64_t value = 0;
    CHECK(reader.read(bytes.size() - 8, value));
    CHECK_FALSE(reader.read(bytes.size() - 7, value));
    CHECK_FALSE(reader.read(UINT64_MAX - 2, value));
  }
}

TEST_CASE(
    "given more sections than the header's count holds, then the count is "
    "read from the first section header (extended numbering)") {
  std::string bytes = bytes_of(FAKE_GOOD_PLUGIN);
  Elf64_Ehdr header = whole_header(ElfReader(bytes));
  const uint16_t count = header.e_shnum;
  header.e_shnum = 0;
  Elf64_Shdr first;
  std::memcpy(&first, bytes.data() + header.e_shoff, sizeof(first));
  first.sh_size = count;
  std::memcpy(bytes.data() + header.e_shoff, &first, sizeof(first));
  const auto sections = ElfReader(bytes).section_headers(header);
  REQUIRE(sections);
  CHECK(sections->size() == count);
}

TEST_CASE(
    "given a path that is no readable regular file, then it cannot be "
    "opened") {
  TemporaryDirectory dir("jitwarm-elf-reader-");
  CHECK_FALSE(ElfReader::open(dir.path() / "absent.so").has_value());
  CHECK_FALSE(ElfReader::open(dir.path()).has_value());
  std::ofstream(dir.path() / "empty.so").close();
  const std::optional<ElfReader> empty =
      ElfReader::open(dir.path() / "empty.so");
  REQUIRE(empty.has_value());
  CHECK(empty->size() == 0);
  CHECK_FALSE(empty->header().identified());
}
