// The shared kernel sources compile for AMD with clang-19 and no HIP headers
// or device libraries at all (clang -x hip --cuda-device-only -nogpuinc
// -nogpulib): the out-of-process path the HIP plugin will use for ISAs
// hiprtc cannot compile (gfx942), and a check that portability.cuh keeps
// the kernels free of CUDA-only constructs. Every instantiation of the
// compile-key matrix of each kernel, for gfx90a and gfx942 (64-wide
// wavefronts), in one translation unit per architecture.
#include "elf_symbols.hpp"
#include "embedded_kernel_sources.hpp"
#include "gpu_test_support.hpp"
#include "kernel_instantiation.hpp"
#include "kernel_key_matrix.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

namespace gpu = jitwarm::gpu;
namespace fs = std::filesystem;

namespace {

gpu::GpuTarget hip_target(const std::string& arch) {
  gpu::GpuTarget target;
  target.text = "hip:" + arch;
  target.platform = "hip";
  target.arch = arch;
  target.binary_format = "hsaco";
  target.warp_size = 64;
  return target;
}

// "_ZN2jw7kernels8rms_normI": how clang mangles an instantiation of the
// function template (every kernel lives in namespace jw::kernels).
std::string mangled_prefix(const std::string& function_template) {
  const std::string name =
      function_template.substr(function_template.rfind(':') + 1);
  return "_ZN2jw7kernels" + std::to_string(name.size()) + name + "I";
}

void compile_for(const std::string& arch) {
  const gpu::GpuTarget target = hip_target(arch);
  std::map<std::string, std::set<std::string>> expressions_by_template;
  std::set<std::string> source_files;
  std::size_t keys = 0;
  for (const auto& descriptor : gpu::builtin_descriptors()) {
    const std::string_view kernel = descriptor->kernel_name;
    for (jitwarm::gpu_test::TestKey& key :
         jitwarm::gpu_test::key_matrix(kernel, target.text)) {
      const gpu::KernelInstantiation inst =
          gpu::instantiate_kernel(key.view(), target);
      expressions_by_template[inst.function_template].insert(
          inst.name_expression());
      source_files.insert(inst.source_file);
      ++keys;
    }
  }

  // The embedded sources (exactly what the plugins compile), written out.
  const fs::path dir = fs::temp_directory_path() /
                       ("jitwarm-hip-" + arch + "-" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const gpu::EmbeddedSource& source : gpu::embedded_kernel_sources()) {
    std::ofstream(dir / std::string(source.name), std::ios::binary)
        << source.text;
  }
  std::ofstream unit(dir / "instantiations.hip");
  for (const std::string& file : source_files) {
    unit << "#include \"" << file << "\"\n";
  }
  // Taking a kernel's address instantiates it for the device, as hiprtc
  // does for its name expressions.
  std::size_t count = 0;
  for (const auto& [function_template, expressions] : expressions_by_template) {
    for (const std::string& expression : expressions) {
      unit << "static auto* const jw_instantiation_" << count++ << " = &"
           << expression << ";\n";
    }
  }
  unit.close();

  const std::string object = (dir / "instantiations.o").string();
  const std::string command =
      std::string(JW_CLANG) + " -x hip --offload-arch=" + arch +
      " --cuda-device-only --no-gpu-bundle-output -nogpulib -nogpuinc -O3 "
      "-std=c++17 -Wno-unused-variable -c " +
      (dir / "instantiations.hip").string() + " -o " + object;
  const auto start = std::chrono::steady_clock::now();
  const auto result = jitwarm::gpu_test::run_command(command);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  INFO(command);
  REQUIRE_MESSAGE(result.status == 0, result.output);
  MESSAGE(arch << ": " << keys << " keys, " << count
               << " instantiations in one clang-19 run: " << seconds << " s");

  std::ifstream in(object, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  const auto elf = gpu::read_elf(image);
  REQUIRE(elf.has_value());
  CHECK(elf->machine == gpu::kElfMachineAmdgpu);
  // Each kernel has a kernel descriptor "<mangled>.kd" (listed in both
  // .symtab and .dynsym, so counted by name).
  for (const auto& [function_template, expressions] : expressions_by_template) {
    CAPTURE(function_template);
    const std::string prefix = mangled_prefix(function_template);
    std::set<std::string> descriptors;
    for (const gpu::ElfSymbol& s : elf->symbols) {
      if (s.defined && s.name.rfind(prefix, 0) == 0 && s.name.size() > 3 &&
          s.name.compare(s.name.size() - 3, 3, ".kd") == 0) {
        descriptors.insert(s.name);
      }
    }
    CHECK(descriptors.size() == expressions.size());
  }
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE(
    "clang-19 compiles every instantiation for gfx90a without HIP "
    "headers") {
  compile_for("gfx90a");
}

TEST_CASE(
    "clang-19 compiles every instantiation for gfx942 without HIP "
    "headers") {
  compile_for("gfx942");
}
