// The embedded kernel sources (plugins/common/embedded_kernel_sources): the
// build embeds every .cuh byte for byte, and include closures list exactly
// the headers a program needs, dependencies first.
#include <jitwarm/plugin.hpp>

#include "embedded_kernel_sources.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using jitwarm::gpu::embedded_kernel_sources;
using jitwarm::gpu::EmbeddedSource;
using jitwarm::gpu::find_source;
using jitwarm::gpu::include_closure;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> names_of(
    const std::vector<const EmbeddedSource*>& files) {
  std::vector<std::string> names;
  for (const EmbeddedSource* f : files) names.emplace_back(f->name);
  return names;
}

}  // namespace

TEST_CASE(
    "given the build, then every kernel source and descriptor is embedded "
    "byte for byte") {
  const auto sources = embedded_kernel_sources();
  // 11 sources (10 kernels, two headers, pack and unpack sharing one) and
  // a descriptor per kernel.
  REQUIRE(sources.size() == 21);
  for (const EmbeddedSource& source : sources) {
    CAPTURE(source.name);
    const std::string on_disk = read_file(std::string(JW_GPU_KERNEL_DIR) + "/" +
                                          std::string(source.name));
    REQUIRE(!on_disk.empty());
    CHECK(source.text == on_disk);
    // No system or vendor includes: every include is a quoted sibling.
    CHECK(source.text.find("#include <") == std::string_view::npos);
  }
}

TEST_CASE(
    "given a kernel source, then its include closure lists its headers "
    "once, dependencies first") {
  const auto sources = embedded_kernel_sources();
  CHECK(names_of(include_closure(sources, "rms_norm.cuh")) ==
        std::vector<std::string>{"portability.cuh", "kernel_support.cuh"});
  CHECK(include_closure(sources, "portability.cuh").empty());

  // A set with a diamond and a cycle.
  const EmbeddedSource custom[] = {
      {"a.cuh", "#include \"b.cuh\"\n  #  include \"c.cuh\"\n"},
      {"b.cuh", "#include \"d.cuh\"\n"},
      {"c.cuh", "#include \"d.cuh\"\n#include \"a.cuh\"\n"},
      {"d.cuh", "// #include \"commented.cuh\" is not a directive\n"},
  };
  CHECK(names_of(include_closure(custom, "a.cuh")) ==
        std::vector<std::string>{"d.cuh", "b.cuh", "c.cuh"});
  const EmbeddedSource missing[] = {{"x.cuh", "#include \"nowhere.cuh\"\n"}};
  CHECK_THROWS_AS(include_closure(missing, "x.cuh"),
                  jitwarm::plugin::PluginError);
  CHECK_THROWS_AS(find_source(sources, "nowhere.cuh"),
                  jitwarm::plugin::PluginError);
}
