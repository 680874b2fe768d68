// ClangHipCompiler: candidate search, one probe per clang, and a compile:
// the program's files in a private temporary directory, one clang run,
// the code object's kernels.
#include "clang_hip_compiler.hpp"

#include <jitwarm/plugin.hpp>

#include "code_object.hpp"
#include "hip_libraries.hpp"
#include "hip_target.hpp"
#include "run_child_process.hpp"
#include "temporary_directory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

namespace jitwarm::hip {
namespace fs = std::filesystem;

namespace {

// The oldest clang used: the first that compiles the shared sources for
// gfx942 and gfx1100 (tests/gpu/test_hip_clang_sources.cpp), and the one
// Debian 12 packages. Newer majors are looked for up to this one.
constexpr int kFirstClangMajor = 19;
constexpr int kLastClangMajor = 30;
constexpr const char* kEnvironmentVariable = "JITWARM_HIP_CLANG";
constexpr const char* kProgramUnit = "jw_program.hip";
constexpr const char* kCodeObject = "jw_program.hsaco";

bool is_executable_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && access(path.c_str(), X_OK) == 0;
}

// `name` as exec would find it: itself when it has a slash, else the first
// executable of that name in $PATH; empty when there is none.
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return is_executable_file(name) ? name : "";
  }
  const char* path = std::getenv("PATH");
  std::istringstream directories(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string directory; std::getline(directories, directory, ':');) {
    if (directory.empty()) continue;
    const fs::path candidate = fs::path(directory) / name;
    if (is_executable_file(candidate)) return candidate.string();
  }
  return "";
}

// clang's work directory for one compile (the sources it reads, the code
// object it writes), removed with everything in it.
class ClangWorkDirectory {
 public:
  ClangWorkDirectory() try : directory_("jitwarm-hip-") {
  } catch (const std::system_error& e) {
    throw plugin::PluginError(
        JW_ERROR_IO,
        std::string(e.what()) + " for clang: " + e.code().message());
  }
  const fs::path& path() const { return directory_.path(); }

 private:
  detail::TemporaryDirectory directory_;
};

// Writes `text` to `directory`/`name`; `name` must stay inside it (the
// program's own file names: a header name like "../x" is refused).
void write_file(const fs::path& directory, const std::string& name,
                std::string_view text) {
  const fs::path relative(name);
  const bool escapes =
      name.empty() || relative.is_absolute() ||
      std::any_of(relative.begin(), relative.end(),
                  [](const fs::path& part) { return part == ".."; });
  if (escapes) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              "source file name '" + name +
                                  "' is not a relative path inside the "
                                  "program");
  }
  const fs::path path = directory / relative;
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) {
    throw plugin::PluginError(JW_ERROR_IO, "cannot write " + path.string());
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace

bool ClangInstallation::lists(std::string_view processor) const {
  return std::find(processors.begin(), processors.end(), processor) !=
         processors.end();
}

struct ClangHipCompiler::Probe {
  std::once_flag once;
  ClangInstallation installation;
};

std::vector<std::string> ClangHipCompiler::find_candidates(
    std::string& searched) {
  std::vector<std::string> names;
  const char* from_environment = std::getenv(kEnvironmentVariable);
  const bool environment_set =
      from_environment != nullptr && *from_environment != '\0';
  if (environment_set) names.emplace_back(from_environment);
  for (int major = kFirstClangMajor; major <= kLastClangMajor; ++major) {
    names.push_back("clang++-" + std::to_string(major));
    names.push_back("/usr/lib/llvm-" + std::to_string(major) + "/bin/clang++");
  }
  names.push_back((fs::path(rocm_root()) / "llvm/bin/clang++").string());

  searched = std::string("$") + kEnvironmentVariable +
             (environment_set ? "=" + std::string(from_environment)
                              : std::string(" (unset)")) +
             ", clang++-N and /usr/lib/llvm-N/bin/clang++ for N = " +
             std::to_string(kFirstClangMajor) + ".." +
             std::to_string(kLastClangMajor) + ", " + names.back();
  std::vector<std::string> found;
  std::vector<fs::path> found_files;
  for (const std::string& name : names) {
    const std::string path = resolve_program(name);
    if (path.empty()) {
      if (environment_set && name == from_environment) {
        searched += "; $" + std::string(kEnvironmentVariable) + " (" + name +
                    ") is not an executable";
      }
      continue;
    }
    std::error_code error;
    const fs::path file = fs::canonical(path, error);
    if (!error && std::find(found_files.begin(), found_files.end(), file) !=
                      found_files.end()) {
      continue;  // clang++-19 and /usr/lib/llvm-19/bin/clang++ are one file
    }
    found_files.push_back(error ? fs::path(path) : file);
    found.push_back(path);
  }
  return found;
}

ClangHipCompiler::ClangHipCompiler(std::vector<std::string> candidates,
                                   std::string searched)
    : candidates_(std::move(candidates)), searched_(std::move(searched)) {
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    probes_.push_back(std::make_unique<Probe>());
  }
}

ClangHipCompiler::~ClangHipCompiler() = default;

const ClangInstallation& ClangHipCompiler::probed(std::size_t index) const {
  Probe& probe = *probes_[index];
  std::call_once(probe.once, [&] {
    ClangInstallation& clang = probe.installation;
    clang.path = candidates_[index];
    const ChildProcessResult version =
        run_child_process({clang.path, "--version"}, "");
    if (!version.succeeded()) {
      clang.probe_error =
          "'" + clang.path + " --version' failed (" + version.outcome() + ")";
      return;
    }
    clang.version_line = first_line(version.output);
    const ChildProcessResult cpus =
        run_child_process({clang.path, "--target=amdgcn-amd-amdhsa",
                           "-nogpulib", "--print-supported-cpus"},
                          "");
    std::istringstream words(cpus.output);
    for (std::string word; words >> word;) {
      if (word.rfind("gfx", 0) == 0) clang.processors.push_back(word);
    }
    if (!cpus.succeeded() || clang.processors.empty()) {
      clang.probe_error =
          clang.path + " lists no amdgcn processor (" + cpus.outcome() + ")";
    }
  });
  return probe.installation;
}

const ClangInstallation* ClangHipCompiler::installation_for(
    std::string_view processor, std::string& why_not) const {
  std::string tried;
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const ClangInstallation& clang = probed(i);
    if (clang.usable() && clang.lists(processor)) return &clang;
    tried += (tried.empty() ? "" : "; ") +
             (clang.usable() ? clang.path + " (" + clang.version_line +
                                   ") does not list " + std::string(processor)
                             : clang.probe_error);
  }
  why_not = candidates_.empty() ? "no clang found (searched " + searched_ + ")"
                                : tried + " (searched " + searched_ + ")";
  return nullptr;
}

std::string ClangHipCompiler::identity() const {
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const ClangInstallation& clang = probed(i);
    if (clang.usable()) return clang.version_line + " (" + clang.path + ")";
  }
  return "clang (none usable; searched " + searched_ + ")";
}

const ClangInstallation& ClangHipCompiler::require_installation(
    const gpu::GpuTarget& target) const {
  std::string why_not;
  const ClangInstallation* clang =
      installation_for(hip_processor(target.arch), why_not);
  if (clang == nullptr) {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        "no clang here compiles for " + target.arch + ": " + why_not);
  }
  return *clang;
}

std::string ClangHipCompiler::identity_for(const gpu::GpuTarget& target) const {
  const ClangInstallation& clang = require_installation(target);
  return clang.version_line + " (" + clang.path + ")";
}

std::vector<std::string> ClangHipCompiler::options_for(
    const gpu::GpuTarget& target) const {
  // Device code only, no HIP headers and no device libraries (the sources
  // use clang builtins only), raw ELF rather than an offload bundle, and
  // no per-path compilation-unit ID, so that a key's code object does not
  // depend on the temporary directory it was built in.
  return {"-x",
          "hip",
          "--offload-arch=" + target.arch,
          "--cuda-device-only",
          "--no-gpu-bundle-output",
          "-nogpulib",
          "-nogpuinc",
          "-O3",
          "-std=c++17",
          "-fuse-cuid=none"};
}

gpu::CompiledProgram ClangHipCompiler::compile(
    const gpu::RtcProgram& program, const gpu::GpuTarget& target) const {
  const ClangInstallation& clang = require_installation(target);
  const std::string compiler = clang.version_line + " (" + clang.path + ")";
  const ClangWorkDirectory directory;
  for (const gpu::RtcHeader& header : program.headers) {
    write_file(directory.path(), header.name, header.text);
  }
  write_file(directory.path(), program.source_name, program.source_text);
  // One expression: taking its address instantiates the kernel, the one of
  // its template in the code object. Several: markers (code_object.hpp).
  const bool markers = program.name_expressions.size() > 1;
  std::string unit = "#include \"" + program.source_name + "\"\n";
  if (markers) {
    unit += lowered_name_markers(program.name_expressions);
  } else if (!program.name_expressions.empty()) {
    unit += "[[maybe_unused]] static auto* const jw_instantiation = &" +
            program.name_expressions.front() + ";\n";
  }
  write_file(directory.path(), kProgramUnit, unit);

  std::vector<std::string> argv{clang.path};
  argv.insert(argv.end(), program.options.begin(), program.options.end());
  for (const char* argument : {"-c", kProgramUnit, "-o", kCodeObject}) {
    argv.emplace_back(argument);
  }
  ChildProcessResult run = run_child_process(argv, directory.path().string());
  if (!run.started) {
    throw plugin::PluginError(JW_ERROR_INTERNAL,
                              compiler + ": " + run.outcome());
  }
  if (!run.succeeded()) {
    if (run.output.find("invalid target ID") != std::string::npos) {
      throw plugin::PluginError(JW_ERROR_UNSUPPORTED,
                                compiler + " refuses the target ID " +
                                    target.arch + ": " +
                                    first_line(run.output));
    }
    throw gpu::RtcCompileError(compiler + " failed (" + run.outcome() + ")",
                               std::move(run.output));
  }

  gpu::CompiledProgram result;
  result.binary = read_file(directory.path() / kCodeObject);
  result.log = std::move(run.output);
  result.format = target.binary_format;
  const std::optional<CodeObject> code_object = read_code_object(result.binary);
  if (!code_object) {
    throw plugin::PluginError(JW_ERROR_INTERNAL,
                              compiler +
                                  " did not produce an AMDGPU ELF code "
                                  "object for " +
                                  target.arch);
  }
  result.lowered_names = lowered_names_in(
      *code_object, program.name_expressions, markers, compiler);
  return result;
}

}  // namespace jitwarm::hip
