// The GPU kernel sources of plugins/common/kernels, embedded into the plugin
// at build time (embed_kernel_sources.py generates the table), and the
// include closure of each: what a run-time compiler is given as the program
// and its headers, and what a fingerprint hashes. The functions take the
// set of sources as an argument so a backend can be given another set
// (tests compile a deliberately broken one).
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace jitwarm::gpu {

struct EmbeddedSource {
  std::string_view name;  // file name, e.g. "rms_norm.cuh"
  std::string_view text;  // the file's exact bytes
};

// Every embedded file, sorted by name. Static storage.
std::span<const EmbeddedSource> embedded_kernel_sources();

// The file called `name` in `sources`; throws PluginError(JW_ERROR_INTERNAL)
// when it is not there.
const EmbeddedSource& find_source(std::span<const EmbeddedSource> sources,
                                  std::string_view name);

// The files `name` includes with #include "...", directly or through other
// files of `sources`, each once, dependencies first (the file itself not
// included). Throws when an include names a file that is not in `sources`.
std::vector<const EmbeddedSource*> include_closure(
    std::span<const EmbeddedSource> sources, std::string_view name);

}  // namespace jitwarm::gpu
