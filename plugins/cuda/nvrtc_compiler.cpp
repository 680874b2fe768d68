// NvrtcCompiler: one nvrtcProgram per compile, destroyed on every path.
#include "nvrtc_compiler.hpp"

#include <jitwarm/plugin.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <exception>
#include <system_error>
#include <thread>

#include "usable_cpus.hpp"
#include "vendor_library.hpp"

namespace jitwarm::cuda {
namespace {

// NVRTC 12 and 13 share every entry point used here.
constexpr const char* kNvrtcLibraries[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                           "libnvrtc.so"};

// Destroys the program when the compile leaves, successful or not.
class ProgramHandle {
 public:
  ProgramHandle(const NvrtcApi& api, nvrtcProgram program)
      : api_(api), program_(program) {}
  ~ProgramHandle() {
    if (program_ != nullptr) api_.nvrtcDestroyProgram(&program_);
  }
  ProgramHandle(const ProgramHandle&) = delete;
  ProgramHandle& operator=(const ProgramHandle&) = delete;
  nvrtcProgram get() const { return program_; }

 private:
  const NvrtcApi& api_;
  nvrtcProgram program_;
};

// The number in "sm_90a" / "compute_100": 90, 100.
int arch_number(std::string_view arch) {
  const std::size_t underscore = arch.find('_');
  int number = 0;
  for (std::size_t i = underscore + 1;
       i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]));
       ++i) {
    number = number * 10 + (arch[i] - '0');
  }
  return number;
}

// `options` less --split-compile, for a program that would not use it.
std::vector<std::string> without_split(
    const std::vector<std::string>& options) {
  std::vector<std::string> kept;
  for (const std::string& option : options) {
    if (option.rfind("--split-compile", 0) != 0) kept.push_back(option);
  }
  return kept;
}

// `options` with "--split-compile=0" (as many threads as NVRTC sees on the
// host) made the threads this process may use: in a container limited to 4
// CPUs of 128 NVRTC would start 128. The fingerprinted options keep the 0,
// so a key's fingerprint does not depend on the machine that compiles it.
std::vector<std::string> with_usable_threads(std::vector<std::string> options) {
  for (std::string& option : options) {
    if (option == "--split-compile=0") {
      option = "--split-compile=" + std::to_string(detail::usable_cpus().count);
    }
  }
  return options;
}

}  // namespace

#define JW_NVRTC_FUNCTION(name) name(library, #name)

NvrtcApi::NvrtcApi(const gpu::DynamicLibrary& library)
    : JW_NVRTC_FUNCTION(nvrtcVersion),
      JW_NVRTC_FUNCTION(nvrtcGetErrorString),
      JW_NVRTC_FUNCTION(nvrtcGetNumSupportedArchs),
      JW_NVRTC_FUNCTION(nvrtcGetSupportedArchs),
      JW_NVRTC_FUNCTION(nvrtcCreateProgram),
      JW_NVRTC_FUNCTION(nvrtcDestroyProgram),
      JW_NVRTC_FUNCTION(nvrtcAddNameExpression),
      JW_NVRTC_FUNCTION(nvrtcCompileProgram),
      JW_NVRTC_FUNCTION(nvrtcGetProgramLogSize),
      JW_NVRTC_FUNCTION(nvrtcGetProgramLog),
      JW_NVRTC_FUNCTION(nvrtcGetLoweredName),
      JW_NVRTC_FUNCTION(nvrtcGetCUBINSize),
      JW_NVRTC_FUNCTION(nvrtcGetCUBIN),
      JW_NVRTC_FUNCTION(nvrtcGetPTXSize),
      JW_NVRTC_FUNCTION(nvrtcGetPTX),
      JW_NVRTC_FUNCTION(nvrtcGetLTOIRSize),
      JW_NVRTC_FUNCTION(nvrtcGetLTOIR) {}

#undef JW_NVRTC_FUNCTION

std::vector<std::string> NvrtcApi::missing() const {
  // nvrtcGetLTOIRSize and nvrtcGetLTOIR are optional.
  return gpu::unresolved(
      nvrtcVersion, nvrtcGetErrorString, nvrtcGetNumSupportedArchs,
      nvrtcGetSupportedArchs, nvrtcCreateProgram, nvrtcDestroyProgram,
      nvrtcAddNameExpression, nvrtcCompileProgram, nvrtcGetProgramLogSize,
      nvrtcGetProgramLog, nvrtcGetLoweredName, nvrtcGetCUBINSize, nvrtcGetCUBIN,
      nvrtcGetPTXSize, nvrtcGetPTX);
}

std::unique_ptr<NvrtcCompiler> NvrtcCompiler::open(std::string& why_not) {
  const gpu::VendorLibrarySearch search{
      "NVRTC",
      "JITWARM_NVRTC_LIBRARY",
      {std::begin(kNvrtcLibraries), std::end(kNvrtcLibraries)}};
  gpu::DynamicLibrary library =
      gpu::open_vendor_library<NvrtcApi>(search, why_not);
  if (!library.is_open()) return nullptr;
  return std::unique_ptr<NvrtcCompiler>(new NvrtcCompiler(std::move(library)));
}

NvrtcCompiler::NvrtcCompiler(gpu::DynamicLibrary library)
    : library_(std::move(library)), api_(library_) {
  check(api_.nvrtcVersion(&major_, &minor_), "nvrtcVersion");
  int count = 0;
  check(api_.nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  supported_.resize(static_cast<std::size_t>(std::max(count, 0)));
  if (count > 0) {
    check(api_.nvrtcGetSupportedArchs(supported_.data()),
          "nvrtcGetSupportedArchs");
  }
  if (!api_.nvrtcGetLTOIRSize.available() || !api_.nvrtcGetLTOIR.available()) {
    linker_missing_ =
        gpu::lacks(library_.name(),
                   gpu::unresolved(api_.nvrtcGetLTOIRSize, api_.nvrtcGetLTOIR));
  } else {
    linker_ = NvJitLinker::open(major_, minor_, linker_missing_);
  }
}

void NvrtcCompiler::check(nvrtcResult result, const char* call) const {
  if (result == NVRTC_SUCCESS) return;
  throw plugin::PluginError(
      result == NVRTC_ERROR_OUT_OF_MEMORY ? JW_ERROR_OUT_OF_MEMORY
                                          : JW_ERROR_INTERNAL,
      std::string(call) + " failed: " + api_.nvrtcGetErrorString(result));
}

std::string NvrtcCompiler::identity() const {
  return "nvrtc " + std::to_string(major_) + "." + std::to_string(minor_);
}

std::string NvrtcCompiler::identity_for(const gpu::GpuTarget& target) const {
  return links_apart(target) ? identity() + " + " + linker_->identity()
                             : identity();
}

std::string NvrtcCompiler::linker_identity() const {
  return linker_ != nullptr
             ? linker_->identity() + " (" + linker_->library_name() + ")"
             : std::string();
}

std::string NvrtcCompiler::libraries() const {
  std::string text = identity() + " (" + library_.origin() + ")";
  if (linker_ != nullptr) {
    text += ", " + linker_->identity() + " (" + linker_->library_origin() + ")";
  }
  return text;
}

unsigned NvrtcCompiler::preferred_batch_size(
    const gpu::GpuTarget& target) const {
  return links_apart(target) ? kLinkedBatchSize : 0;
}

bool NvrtcCompiler::links_apart(const gpu::GpuTarget& target) const {
  return linker_ != nullptr && target.binary_format == "cubin" &&
         fast_compile_ == "off" && compile_threads_ != 1;
}

void NvrtcCompiler::set_fast_compile(std::string_view level) {
  if (level != "off" && level != "min" && level != "mid" && level != "max") {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        "JITWARM_CUDA_FAST_COMPILE is '" + std::string(level) +
            "': use off, min, mid or max (NVRTC's --Ofast-compile levels)");
  }
  fast_compile_ = level;
}

void NvrtcCompiler::set_compile_threads(std::string_view threads) {
  unsigned count = 0;
  const char* end = threads.data() + threads.size();
  const auto [stop, error] = std::from_chars(threads.data(), end, count);
  // from_chars refuses an empty string, a sign and leading spaces.
  if (error != std::errc() || stop != end || count > kMaxCompileThreads) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        "JITWARM_CUDA_COMPILE_THREADS is '" + std::string(threads) +
            "': use 0 (as many threads as this process may use), 1 (one "
            "thread) or another count up to " +
            std::to_string(kMaxCompileThreads));
  }
  compile_threads_ = count;
}

std::vector<std::string> NvrtcCompiler::options_for(
    const gpu::GpuTarget& target) const {
  // No fast-math: the kernels must match the CPU reference (docs/kernels.md,
  // "Floating point"), so division and sqrt stay IEEE-rounded (NVRTC's
  // defaults).
  std::vector<std::string> options{"--gpu-architecture=" + target.arch,
                                   "-std=c++17"};
  // NVRTC 12.8 has both options; an older one may refuse them, so it gets
  // neither and compiles on one thread at full optimization.
  const bool is_12_8_or_later = major_ > 12 || (major_ == 12 && minor_ >= 8);
  if (fast_compile_ != "off" && is_12_8_or_later) {
    options.push_back("--Ofast-compile=" + fast_compile_);
  }
  if (compile_threads_ != 1 && is_12_8_or_later) {
    options.push_back("--split-compile=" + std::to_string(compile_threads_));
  }
  // NVRTC's own cache (12.9 and later) lives in the CUDA driver's compute
  // cache, so on a machine with a driver NVRTC initializes the driver inside
  // the first compile: a process that warmed compile-only could no longer
  // fork children that use CUDA (every driver call in the child fails with
  // CUDA_ERROR_NOT_INITIALIZED; tests/gpu/test_cuda_fork_after_warmup.cpp).
  // It would also write every program into the user's ~/.nv/ComputeCache,
  // which the driver's JIT of other applications shares, for nothing: the
  // runtime's cache never compiles a program twice. 13.0 documents the
  // option (nvrtc.h); 12.9 keeps its cache.
  if (major_ >= 13) options.emplace_back("--no-cache");
  return options;
}

std::string NvrtcCompiler::own_headers_option() const {
  // NVRTC 12.4 and later: without the CUDA runtime's, texture and device
  // runtime declarations, which a program of jitwarm's own headers does not
  // use. The front end of an expand key takes 8 ms instead of 12 on the CI
  // machine, and a first compile on the H200 host 62 ms instead of 79
  // (medians, docs/results/compile-throughput.md); the code is the same.
  return major_ > 12 || (major_ == 12 && minor_ >= 4) ? "-minimal" : "";
}

void NvrtcCompiler::check_arch_supported(const gpu::GpuTarget& target) const {
  const int number = arch_number(target.arch);
  if (std::find(supported_.begin(), supported_.end(), number) !=
      supported_.end()) {
    return;
  }
  std::string list;
  for (int arch : supported_)
    list += (list.empty() ? "" : ", ") + std::to_string(arch);
  throw plugin::PluginError(JW_ERROR_UNSUPPORTED,
                            identity() + " cannot compile for " + target.arch +
                                " (it supports " + list + ")");
}

template <typename TakeOutput>
gpu::CompiledProgram NvrtcCompiler::run_nvrtc(
    const gpu::RtcProgram& program, const std::vector<std::string>& options,
    TakeOutput&& take_output) const {
  std::vector<const char*> header_texts;
  std::vector<const char*> header_names;
  for (const gpu::RtcHeader& header : program.headers) {
    header_texts.push_back(header.text.c_str());
    header_names.push_back(header.name.c_str());
  }
  nvrtcProgram raw = nullptr;
  check(api_.nvrtcCreateProgram(&raw, program.source_text.c_str(),
                                program.source_name.c_str(),
                                static_cast<int>(header_texts.size()),
                                header_texts.data(), header_names.data()),
        "nvrtcCreateProgram");
  const ProgramHandle handle(api_, raw);
  for (const std::string& expression : program.name_expressions) {
    check(api_.nvrtcAddNameExpression(handle.get(), expression.c_str()),
          "nvrtcAddNameExpression");
  }
  const std::vector<std::string> run_options = with_usable_threads(options);
  std::vector<const char*> option_texts;
  for (const std::string& option : run_options) {
    option_texts.push_back(option.c_str());
  }
  const nvrtcResult compiled = api_.nvrtcCompileProgram(
      handle.get(), static_cast<int>(option_texts.size()), option_texts.data());

  gpu::CompiledProgram result;
  std::size_t log_size = 0;
  check(api_.nvrtcGetProgramLogSize(handle.get(), &log_size),
        "nvrtcGetProgramLogSize");
  if (log_size > 1) {
    result.log.resize(log_size);
    check(api_.nvrtcGetProgramLog(handle.get(), result.log.data()),
          "nvrtcGetProgramLog");
    result.log.resize(log_size - 1);  // the terminating NUL
  }
  if (compiled != NVRTC_SUCCESS) {
    throw gpu::RtcCompileError(api_.nvrtcGetErrorString(compiled),
                               std::move(result.log));
  }
  for (const std::string& expression : program.name_expressions) {
    const char* lowered = nullptr;
    check(api_.nvrtcGetLoweredName(handle.get(), expression.c_str(), &lowered),
          "nvrtcGetLoweredName");
    result.lowered_names.emplace_back(lowered != nullptr ? lowered : "");
  }
  take_output(handle.get(), result);
  return result;
}

gpu::CompiledProgram NvrtcCompiler::compile(
    const gpu::RtcProgram& program, const gpu::GpuTarget& target) const {
  check_arch_supported(target);
  if (program.name_expressions.size() > 1 && links_apart(target)) {
    return compile_linked_apart(program, target);
  }
  const auto take_binary = [&](nvrtcProgram compiled,
                               gpu::CompiledProgram& result) {
    std::size_t size = 0;
    if (target.binary_format == "cubin") {
      check(api_.nvrtcGetCUBINSize(compiled, &size), "nvrtcGetCUBINSize");
      result.binary.resize(size);
      check(api_.nvrtcGetCUBIN(compiled, result.binary.data()),
            "nvrtcGetCUBIN");
    } else {
      // Kept NUL-terminated (the size includes it): cuModuleLoadData
      // reads PTX as a C string.
      check(api_.nvrtcGetPTXSize(compiled, &size), "nvrtcGetPTXSize");
      result.binary.resize(size);
      check(api_.nvrtcGetPTX(compiled, result.binary.data()), "nvrtcGetPTX");
    }
    result.format = target.binary_format;
  };
  if (program.name_expressions.size() == 1) {
    // One kernel leaves --split-compile nothing to split, and starting its
    // threads cost a first launch's compile about 10 ms on the H200 host's
    // 16 cores (docs/results/compile-throughput.md). The kernel's code is
    // the same without it; only ptxas's note of its options differs.
    return run_nvrtc(program, without_split(program.options), take_binary);
  }
  return run_nvrtc(program, program.options, take_binary);
}

gpu::CompiledProgram NvrtcCompiler::compile_linked_apart(
    const gpu::RtcProgram& program, const gpu::GpuTarget& target) const {
  // One front end for the batch: NVRTC parses and instantiates every
  // expression once and stops at LTO IR; nvJitLink then optimizes and
  // assembles each kernel alone, the kernels on threads of their own (what
  // --split-compile did for the shared cubin, so it is left out here).
  std::vector<std::string> options = without_split(program.options);
  options.emplace_back("-dlto");
  std::string ltoir;
  gpu::CompiledProgram result = run_nvrtc(
      program, options, [&](nvrtcProgram compiled, gpu::CompiledProgram&) {
        std::size_t size = 0;
        check(api_.nvrtcGetLTOIRSize(compiled, &size), "nvrtcGetLTOIRSize");
        ltoir.resize(size);
        check(api_.nvrtcGetLTOIR(compiled, ltoir.data()), "nvrtcGetLTOIR");
      });
  const std::size_t count = result.lowered_names.size();
  result.binaries.resize(count);
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  const auto link_some = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        result.binaries[i] =
            linker_->link(ltoir, result.lowered_names[i], target.arch);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const std::size_t threads = std::min<std::size_t>(
      count,
      compile_threads_ == 0 ? detail::usable_cpus().count : compile_threads_);
  {
    std::vector<std::jthread> helpers;
    for (std::size_t t = 1; t < threads; ++t) {
      try {
        helpers.emplace_back(link_some);
      } catch (const std::system_error&) {
        break;  // no more threads: the ones there link the rest
      }
    }
    link_some();
  }  // joins the helpers
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  result.format = target.binary_format;
  return result;
}

}  // namespace jitwarm::cuda
