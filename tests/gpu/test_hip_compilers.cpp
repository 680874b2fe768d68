// Finding the HIP plugin's compilers and choosing one per target
// (plugins/hip: comgr_isa_list, clang_hip_compiler, hip_compiler): comgr's
// ISA list gates hiprtc, clang is found and probed, and a target neither
// compiles is refused, naming what was tried, without ever reaching hiprtc
// (Debian's hiprtc 5.2 aborts the process on an ISA its comgr lacks).
#include <jitwarm/plugin.hpp>

#include "clang_hip_compiler.hpp"
#include "comgr_isa_list.hpp"
#include "hip_compiler.hpp"
#include "hip_target.hpp"
#include "hiprtc_compiler.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace gpu = jitwarm::gpu;
namespace hip = jitwarm::hip;
using jitwarm::plugin::PluginError;

namespace {

template <typename Body>
PluginError error_of(Body&& body) {
  try {
    body();
  } catch (const PluginError& e) {
    return e;
  }
  FAIL("no PluginError was thrown");
  return PluginError(JW_OK, "");
}

std::vector<std::string> clang_candidates() {
  std::string searched;
  std::vector<std::string> found =
      hip::ClangHipCompiler::find_candidates(searched);
  REQUIRE_MESSAGE(!found.empty(), "clang-19 is needed: searched " << searched);
  return found;
}

// Sets an environment variable for a scope.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE(
    "given this machine's comgr, then it lists gfx90a and not an invented "
    "ISA") {
  const hip::ComgrIsaList isas = hip::ComgrIsaList::open("");
  REQUIRE_MESSAGE(isas.available(), isas.why_not());
  CHECK_FALSE(isas.version().empty());
  CHECK(isas.knows("gfx90a"));
  CHECK_FALSE(isas.knows("gfx9999"));
  CHECK_FALSE(isas.knows("amdgcn-amd-amdhsa--gfx90a"));  // prefix stripped
  CHECK(std::find(isas.target_ids().begin(), isas.target_ids().end(),
                  "gfx90a") != isas.target_ids().end());
  MESSAGE("comgr " << isas.version() << " at " << isas.library() << ": "
                   << isas.summary());
}

TEST_CASE(
    "given hiprtc, then its identity names the library, its version and "
    "comgr, and it refuses an ISA comgr lacks without compiling") {
  std::string why_not;
  const auto hiprtc = hip::HiprtcCompiler::open(why_not);
  REQUIRE_MESSAGE(hiprtc != nullptr, why_not);
  const std::string identity = hiprtc->identity();
  MESSAGE(identity);
  CHECK(identity.rfind("hiprtc ", 0) == 0);
  CHECK(identity.find(hiprtc->library_path()) != std::string::npos);
  CHECK(identity.find("comgr " + hiprtc->isas().version()) !=
        std::string::npos);
  CHECK(hiprtc->knows(hip::parse_hip_target("hip:gfx90a")));
  CHECK(hiprtc->options_for(hip::parse_hip_target("hip:gfx90a")) ==
        std::vector<std::string>{"--offload-arch=gfx90a", "-O3", "-std=c++17"});
  // gfx9999 is in no comgr: this would abort the process inside hiprtc
  // if the gate let it through.
  gpu::RtcProgram program;
  program.source_name = "empty.hip";
  program.source_text = "\n";
  const PluginError e = error_of(
      [&] { hiprtc->compile(program, hip::parse_hip_target("hip:gfx9999")); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  CHECK(std::string(e.what()).find("gfx9999") != std::string::npos);
  CHECK(std::string(e.what()).find("would abort") != std::string::npos);
}

TEST_CASE(
    "given a hiprtc gated by a list without gfx90a, then it refuses gfx90a "
    "too (the list, not the processor, decides)") {
  std::string why_not;
  auto opened = hip::HiprtcCompiler::open(why_not);
  REQUIRE_MESSAGE(opened != nullptr, why_not);
  // The same library, a narrower list.
  hip::HiprtcCompiler narrow(
      gpu::DynamicLibrary::open_first({opened->library_path().c_str()}),
      hip::ComgrIsaList::from_names({"gfx1030"}, "test"));
  CHECK_FALSE(narrow.knows(hip::parse_hip_target("hip:gfx90a")));
  CHECK(narrow.knows(hip::parse_hip_target("hip:gfx1030")));
  gpu::RtcProgram program;
  program.source_name = "empty.hip";
  program.source_text = "\n";
  CHECK(error_of([&] {
          narrow.compile(program, hip::parse_hip_target("hip:gfx90a"));
        }).status() == JW_ERROR_UNSUPPORTED);
}

TEST_CASE(
    "given this machine's clangs, then the first is probed once and lists "
    "the CDNA and RDNA processors") {
  const std::vector<std::string> candidates = clang_candidates();
  hip::ClangHipCompiler clang(candidates, "test");
  std::string why_not;
  const hip::ClangInstallation* for_gfx942 =
      clang.installation_for("gfx942", why_not);
  REQUIRE_MESSAGE(for_gfx942 != nullptr, why_not);
  CHECK(for_gfx942->path == candidates.front());
  CHECK(for_gfx942->version_line.find("clang version") != std::string::npos);
  for (const char* processor : {"gfx90a", "gfx942", "gfx1100"}) {
    CAPTURE(processor);
    CHECK(for_gfx942->lists(processor));
  }
  CHECK(clang.installation_for("gfx1100", why_not) == for_gfx942);
  CHECK(clang.installation_for("gfx9999", why_not) == nullptr);
  CHECK(why_not.find("does not list gfx9999") != std::string::npos);
  CHECK(why_not.find(candidates.front()) != std::string::npos);
  const gpu::GpuTarget gfx942 = hip::parse_hip_target("hip:gfx942");
  CHECK(clang.identity_for(gfx942) ==
        for_gfx942->version_line + " (" + for_gfx942->path + ")");
  const std::vector<std::string> options = clang.options_for(gfx942);
  CHECK(std::find(options.begin(), options.end(), "--offload-arch=gfx942") !=
        options.end());
  CHECK(std::find(options.begin(), options.end(), "-nogpulib") !=
        options.end());
}

TEST_CASE(
    "given JITWARM_HIP_CLANG, then that clang is tried first, and a wrong "
    "one is reported") {
  const std::vector<std::string> usual = clang_candidates();
  const std::string llvm19 = "/usr/lib/llvm-19/bin/clang++";
  if (std::filesystem::exists(llvm19)) {
    ScopedEnvironment chosen("JITWARM_HIP_CLANG", llvm19.c_str());
    std::string searched;
    const auto found = hip::ClangHipCompiler::find_candidates(searched);
    REQUIRE(!found.empty());
    CHECK(found.front() == llvm19);
    // clang++-19 is the same file: listed once.
    CHECK(found.size() == usual.size());
    CHECK(searched.find("$JITWARM_HIP_CLANG=" + llvm19) != std::string::npos);
  }
  ScopedEnvironment wrong("JITWARM_HIP_CLANG", "/nonexistent/clang++");
  std::string searched;
  const auto found = hip::ClangHipCompiler::find_candidates(searched);
  CHECK(found == usual);
  CHECK(searched.find("/nonexistent/clang++) is not an executable") !=
        std::string::npos);
}

TEST_CASE(
    "given clangs that cannot be used, then no clang is chosen and each "
    "says why") {
  hip::ClangHipCompiler none({}, "nowhere");
  std::string why_not;
  CHECK(none.installation_for("gfx942", why_not) == nullptr);
  CHECK(why_not == "no clang found (searched nowhere)");

  hip::ClangHipCompiler broken({"/bin/false"}, "test");
  CHECK(broken.installation_for("gfx942", why_not) == nullptr);
  CHECK(why_not.find("'/bin/false --version' failed (exited with status 1)") !=
        std::string::npos);
  gpu::RtcProgram program;
  program.source_name = "empty.hip";
  const PluginError e = error_of(
      [&] { broken.compile(program, hip::parse_hip_target("hip:gfx942")); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  CHECK(std::string(e.what()).find("no clang here compiles for gfx942") !=
        std::string::npos);
}

TEST_CASE(
    "given both compilers, then comgr's list sends a target to hiprtc and "
    "every other target clang knows to clang") {
  std::string why_not;
  auto opened = hip::HiprtcCompiler::open(why_not);
  REQUIRE_MESSAGE(opened != nullptr, why_not);
  // A fixed list, so the routing does not depend on the installed comgr.
  auto hiprtc = std::make_unique<hip::HiprtcCompiler>(
      gpu::DynamicLibrary::open_first({opened->library_path().c_str()}),
      hip::ComgrIsaList::from_names({"gfx90a", "gfx1030"}, "test"));
  const hip::HipCompiler compiler(
      std::move(hiprtc), "",
      std::make_unique<hip::ClangHipCompiler>(clang_candidates(), "test"), "");
  auto route = [&](const char* target) {
    return std::string(compiler.choose(hip::parse_hip_target(target)).name);
  };
  CHECK(route("hip:gfx90a") == "hiprtc");
  CHECK(route("hip:gfx1030") == "hiprtc");
  CHECK(route("hip:gfx942") == "clang");
  CHECK(route("hip:gfx1100") == "clang");
  // comgr lists bare processors here: a target with features is clang's.
  CHECK(route("hip:gfx90a:xnack-") == "clang");
  const gpu::GpuTarget gfx90a = hip::parse_hip_target("hip:gfx90a");
  const gpu::GpuTarget gfx942 = hip::parse_hip_target("hip:gfx942");
  CHECK(compiler.identity_for(gfx90a).rfind("hiprtc ", 0) == 0);
  CHECK(compiler.identity_for(gfx942).find("clang version") !=
        std::string::npos);
  CHECK(compiler.options_for(gfx90a) !=
        compiler.options_for(hip::parse_hip_target("hip:gfx1100")));
  CHECK(compiler.identity().find("for comgr's ISAs") != std::string::npos);

  const PluginError e =
      error_of([&] { compiler.choose(hip::parse_hip_target("hip:gfx9999")); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  const std::string message = e.what();
  MESSAGE(message);
  CHECK(message.find("no HIP compiler here compiles for hip:gfx9999") !=
        std::string::npos);
  CHECK(message.find("hiprtc: comgr test") != std::string::npos);
  CHECK(message.find("clang: ") != std::string::npos);
  CHECK(message.find("does not list gfx9999") != std::string::npos);
}

TEST_CASE(
    "given no compiler at all, then every target is refused with both "
    "reasons") {
  const hip::HipCompiler nothing(nullptr, "hiprtc not found (test)", nullptr,
                                 "no clang found (test)");
  const PluginError e =
      error_of([&] { nothing.choose(hip::parse_hip_target("hip:gfx90a")); });
  CHECK(e.status() == JW_ERROR_UNSUPPORTED);
  CHECK(std::string(e.what()).find("hiprtc: hiprtc not found (test); clang: "
                                   "no clang found (test)") !=
        std::string::npos);
  CHECK(nothing.summary().find("no hiprtc (hiprtc not found (test))") !=
        std::string::npos);
}
