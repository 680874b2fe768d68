// Whether a candidate file can be a plugin of this host, told before the
// dynamic loader sees it (docs/plugin-abi.md P2): a regular file (or a link
// to one), and a complete ELF64 shared object for this machine. Every part
// of it the dynamic loader maps (the program headers and the segments they
// describe) or that tools read (the section headers, the sections) must lie
// inside the file: a truncated library passes dlopen's own checks and then
// faults with SIGBUS when a page past the end of the file is touched. (A
// file truncated between this check and dlopen is not covered: plugin
// directories are not written while loading.)
//
// It reads the file's headers only (support/elf_reader.hpp); it must not
// open the library or run anything of it.
#pragma once

#include <string>

namespace jitwarm::detail {

// Why `path` cannot be a plugin of this host, in words that follow its
// path in the load report ("a directory, not a shared object", "not an ELF
// file", "truncated: segment 3 ..."), or "" when it may be loaded.
std::string why_not_a_plugin_file(const std::string& path);

}  // namespace jitwarm::detail
