// HiprtcCompiler: one hiprtcProgram per compile, destroyed on every path;
// the comgr gate before any hiprtc call.
#include "hiprtc_compiler.hpp"

#include <jitwarm/plugin.hpp>

#include "code_object.hpp"
#include "hip_libraries.hpp"

#include <mutex>

namespace jitwarm::hip {
namespace {

// Destroys the program when the compile leaves, successful or not.
class ProgramHandle {
 public:
  ProgramHandle(const HiprtcApi& api, hiprtcProgram program)
      : api_(api), program_(program) {}
  ~ProgramHandle() {
    if (program_ != nullptr) api_.hiprtcDestroyProgram(&program_);
  }
  ProgramHandle(const ProgramHandle&) = delete;
  ProgramHandle& operator=(const ProgramHandle&) = delete;
  hiprtcProgram get() const { return program_; }

 private:
  const HiprtcApi& api_;
  hiprtcProgram program_;
};

// Every hiprtc program of the process is created, compiled and destroyed
// under this lock. Debian's hiprtc 5.2 is not thread-safe: two compiles at
// once abort the process ("LLVM ERROR: inconsistency in registered
// CommandLine options", or a double free), also after a first compile has
// initialized it. Parallel warmup therefore uses worker processes
// (`jitwarm warmup --jobs N`, the default), which do scale.
std::mutex& hiprtc_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

HiprtcApi::HiprtcApi(const gpu::DynamicLibrary& library) {
#define JW_RESOLVE_HIPRTC_FUNCTION(name) \
  name = gpu::LibraryFunction<decltype(&::name)>(library, #name);
  JW_HIPRTC_FUNCTIONS(JW_RESOLVE_HIPRTC_FUNCTION)
#undef JW_RESOLVE_HIPRTC_FUNCTION
}

std::vector<std::string> HiprtcApi::missing() const {
  std::vector<std::string> names;
#define JW_NOTE_MISSING(name) \
  if (!name.available()) names.emplace_back(name.symbol());
  JW_HIPRTC_FUNCTIONS(JW_NOTE_MISSING)
#undef JW_NOTE_MISSING
  return names;
}

std::unique_ptr<HiprtcCompiler> HiprtcCompiler::open(std::string& why_not) {
  // ROCm 6 and 7 ship hiprtc as libhiprtc; ROCm 5 and Debian keep it in
  // libamdhip64 (whose ROCm 6+ builds no longer export it).
  std::string not_opened;
  gpu::DynamicLibrary library = open_library_with(
      library_candidates({"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5",
                          "libamdhip64.so.7", "libamdhip64.so.6",
                          "libamdhip64.so.5", "libhiprtc.so",
                          "libamdhip64.so"}),
      [](const gpu::DynamicLibrary& candidate) {
        return HiprtcApi(candidate).missing();
      },
      not_opened);
  if (!library.is_open()) {
    why_not = "hiprtc not found (" + not_opened + ")";
    return nullptr;
  }
  ComgrIsaList isas =
      ComgrIsaList::open(mapped_file_of(library, "hiprtcCompileProgram"));
  if (!isas.available()) {
    why_not = "hiprtc in " + library.name() +
              " is not used: its ISA list is unknown (" + isas.why_not() + ")";
    return nullptr;
  }
  return std::make_unique<HiprtcCompiler>(std::move(library), std::move(isas));
}

HiprtcCompiler::HiprtcCompiler(gpu::DynamicLibrary library, ComgrIsaList isas)
    : library_(std::move(library)), api_(library_), isas_(std::move(isas)) {
  library_path_ = mapped_file_of(library_, "hiprtcCompileProgram");
  if (library_path_.empty()) library_path_ = library_.name();
  const std::string version = soname_version(library_path_);
  // hiprtcVersion() is not the ROCm version (Debian's 5.2 answers 9.0), so
  // the library's file version names the release; both go in the identity.
  int major = 0;
  int minor = 0;
  check(api_.hiprtcVersion(&major, &minor), "hiprtcVersion");
  identity_ = "hiprtc " + (version.empty() ? std::string("?") : version) +
              " (" + library_path_ + ", hiprtcVersion " +
              std::to_string(major) + "." + std::to_string(minor) + ", comgr " +
              isas_.version() + ")";
}

void HiprtcCompiler::check_lowered_name(hiprtcProgram program,
                                        const std::string& expression,
                                        const std::string& kernel) const {
  const char* lowered = nullptr;
  const hiprtcResult found =
      api_.hiprtcGetLoweredName(program, expression.c_str(), &lowered);
  // "Not valid" is hiprtc 5.2 failing to match the demangled text
  // (code_object.hpp); the kernel found in the code object stands.
  if (found == HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID) return;
  check(found, "hiprtcGetLoweredName");
  if (lowered == nullptr || kernel != lowered) {
    throw plugin::PluginError(
        JW_ERROR_INTERNAL,
        identity_ + " lowers " + expression + " to " +
            (lowered != nullptr ? lowered : "(null)") +
            ", but its code object's kernel of that template is " + kernel);
  }
}

void HiprtcCompiler::check(hiprtcResult result, const char* call) const {
  if (result == HIPRTC_SUCCESS) return;
  throw plugin::PluginError(
      result == HIPRTC_ERROR_OUT_OF_MEMORY ? JW_ERROR_OUT_OF_MEMORY
                                           : JW_ERROR_INTERNAL,
      std::string(call) + " failed: " + api_.hiprtcGetErrorString(result));
}

std::string HiprtcCompiler::identity() const {
  return identity_;
}

std::vector<std::string> HiprtcCompiler::options_for(
    const gpu::GpuTarget& target) const {
  // The same language and optimization level as the clang path; no
  // fast-math (the kernels must match the CPU reference, docs/kernels.md,
  // "Floating point").
  return {"--offload-arch=" + target.arch, "-O3", "-std=c++17"};
}

bool HiprtcCompiler::knows(const gpu::GpuTarget& target) const {
  return isas_.knows(target.arch);
}

gpu::CompiledProgram HiprtcCompiler::compile(
    const gpu::RtcProgram& program, const gpu::GpuTarget& target) const {
  if (!knows(target)) {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        identity_ + " cannot compile for " + target.arch + ": comgr (" +
            isas_.library() + ") lists " + isas_.summary() +
            ", and hiprtc would abort the process on an ISA it does not list");
  }
  std::vector<const char*> header_texts;
  std::vector<const char*> header_names;
  for (const gpu::RtcHeader& header : program.headers) {
    header_texts.push_back(header.text.c_str());
    header_names.push_back(header.name.c_str());
  }
  // One expression: hiprtc instantiates it (and may lower it). Several:
  // markers instantiate them and say which kernel is whose
  // (code_object.hpp).
  const bool markers = program.name_expressions.size() > 1;
  const std::string source =
      markers
          ? program.source_text + lowered_name_markers(program.name_expressions)
          : program.source_text;
  // Taken before the program exists, so the program is destroyed (handle's
  // destructor) before it is released.
  const std::lock_guard<std::mutex> one_compile_at_a_time(hiprtc_mutex());
  hiprtcProgram raw = nullptr;
  check(api_.hiprtcCreateProgram(&raw, source.c_str(),
                                 program.source_name.c_str(),
                                 static_cast<int>(header_texts.size()),
                                 header_texts.data(), header_names.data()),
        "hiprtcCreateProgram");
  const ProgramHandle handle(api_, raw);
  if (!markers) {
    for (const std::string& expression : program.name_expressions) {
      check(api_.hiprtcAddNameExpression(handle.get(), expression.c_str()),
            "hiprtcAddNameExpression");
    }
  }
  std::vector<const char*> options;
  for (const std::string& option : program.options) {
    options.push_back(option.c_str());
  }
  const hiprtcResult compiled = api_.hiprtcCompileProgram(
      handle.get(), static_cast<int>(options.size()), options.data());

  gpu::CompiledProgram result;
  std::size_t log_size = 0;
  check(api_.hiprtcGetProgramLogSize(handle.get(), &log_size),
        "hiprtcGetProgramLogSize");
  if (log_size > 0) {
    result.log.resize(log_size);
    check(api_.hiprtcGetProgramLog(handle.get(), result.log.data()),
          "hiprtcGetProgramLog");
    while (!result.log.empty() && result.log.back() == '\0') {
      result.log.pop_back();
    }
  }
  if (compiled != HIPRTC_SUCCESS) {
    throw gpu::RtcCompileError(
        identity_ + ": " + api_.hiprtcGetErrorString(compiled),
        std::move(result.log));
  }
  std::size_t size = 0;
  check(api_.hiprtcGetCodeSize(handle.get(), &size), "hiprtcGetCodeSize");
  result.binary.resize(size);
  check(api_.hiprtcGetCode(handle.get(), result.binary.data()),
        "hiprtcGetCode");
  const std::optional<CodeObject> code_object = read_code_object(result.binary);
  if (!code_object) {
    throw plugin::PluginError(JW_ERROR_INTERNAL,
                              identity_ +
                                  " did not produce an AMDGPU ELF "
                                  "code object for " +
                                  target.arch);
  }
  result.lowered_names = lowered_names_in(
      *code_object, program.name_expressions, markers, identity_);
  if (!markers && !result.lowered_names.empty()) {
    check_lowered_name(handle.get(), program.name_expressions.front(),
                       result.lowered_names.front());
  }
  result.format = target.binary_format;
  return result;
}

}  // namespace jitwarm::hip
