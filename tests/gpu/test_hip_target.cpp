// HIP target spellings (plugins/hip/hip_target), the device arch taken from
// the runtime's gcnArchName, and the template prefix that finds a name
// expression's kernel in a code object (plugins/hip/code_object).
#include <jitwarm/plugin.hpp>

#include "code_object.hpp"
#include "hip_target.hpp"

#include <doctest/doctest.h>

#include <string>

namespace gpu = jitwarm::gpu;
namespace hip = jitwarm::hip;
using jitwarm::plugin::PluginError;

namespace {

PluginError refusal_of(const std::string& text) {
  try {
    hip::parse_hip_target(text);
  } catch (const PluginError& e) {
    return e;
  }
  FAIL("'" << text << "' was accepted");
  return PluginError(JW_OK, "");
}

}  // namespace

TEST_CASE(
    "given AMD processors, then the target says hsaco, the processor and "
    "the wavefront width of its family") {
  struct Case {
    const char* text;
    const char* arch;
    uint32_t warp_size;
  };
  for (const Case& c :
       {Case{"hip:gfx90a", "gfx90a", 64}, Case{"hip:gfx942", "gfx942", 64},
        Case{"hip:gfx908", "gfx908", 64}, Case{"hip:gfx803", "gfx803", 64},
        Case{"hip:gfx1030", "gfx1030", 32}, Case{"hip:gfx1100", "gfx1100", 32},
        Case{"hip:gfx1201", "gfx1201", 32}}) {
    CAPTURE(c.text);
    const gpu::GpuTarget target = hip::parse_hip_target(c.text);
    CHECK(target.text == c.text);
    CHECK(target.platform == "hip");
    CHECK(target.arch == c.arch);
    CHECK(target.binary_format == "hsaco");
    CHECK(target.warp_size == c.warp_size);
  }
}

TEST_CASE(
    "given target features in any order, then the arch spells them as "
    "compilers do (sramecc before xnack)") {
  CHECK(hip::parse_hip_target("hip:gfx90a:xnack-:sramecc+").arch ==
        "gfx90a:sramecc+:xnack-");
  CHECK(hip::parse_hip_target("hip:gfx90a:sramecc+:xnack-").arch ==
        "gfx90a:sramecc+:xnack-");
  CHECK(hip::parse_hip_target("hip:gfx942:xnack+").arch == "gfx942:xnack+");
  CHECK(hip::parse_hip_target("hip:gfx942:xnack+").text == "hip:gfx942:xnack+");
  CHECK(hip::parse_hip_target("hip:gfx908:sramecc-").warp_size == 64);
}

TEST_CASE(
    "given malformed or foreign targets, then they are unsupported with the "
    "accepted forms and the reason") {
  struct Case {
    const char* text;
    const char* reason;
  };
  for (const Case& c :
       {Case{"cuda:sm_90", "platform is not 'hip'"},
        Case{"hip:", "not an AMD GPU processor"},
        Case{"hip:sm_90", "not an AMD GPU processor"},
        Case{"hip:gfx", "not an AMD GPU processor"},
        Case{"hip:gfx90", "not an AMD GPU processor"},
        Case{"hip:gfx90g", "not an AMD GPU processor"},
        Case{"hip:gfx12345", "not an AMD GPU processor"},
        Case{"hip:GFX90A", "not an AMD GPU processor"},
        Case{"hip:gfx-generic", "generic targets are not supported"},
        Case{"hip:gfx9-generic", "generic targets are not supported"},
        Case{"hip:gfx11-generic:xnack-", "generic targets are not supported"},
        Case{"hip:gfx90a:", "must end in + or -"},
        Case{"hip:gfx90a:xnack", "must end in + or -"},
        Case{"hip:gfx90a:wavefrontsize64+", "unknown feature"},
        Case{"hip:gfx90a:xnack+:xnack-", "given twice"}}) {
    CAPTURE(c.text);
    const PluginError e = refusal_of(c.text);
    CHECK(e.status() == JW_ERROR_UNSUPPORTED);
    const std::string message = e.what();
    CHECK(message.find(std::string("'") + c.text + "'") != std::string::npos);
    CHECK(message.find(c.reason) != std::string::npos);
    CHECK(message.find("hip:gfx942") != std::string::npos);  // the forms
  }
}

TEST_CASE(
    "given a processor no compiler knows, then parsing accepts it (the "
    "compilers refuse it)") {
  CHECK(hip::parse_hip_target("hip:gfx9999").arch == "gfx9999");
}

TEST_CASE(
    "given the runtime's gcnArchName, then the device arch is its "
    "processor without features") {
  CHECK(hip::hip_arch_for("gfx90a:sramecc+:xnack-") == "gfx90a");
  CHECK(hip::hip_arch_for("gfx942:sramecc+:xnack-") == "gfx942");
  CHECK(hip::hip_arch_for("gfx1100") == "gfx1100");
  for (const char* bad : {"", "Vega 20", "sm_90"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(hip::hip_arch_for(bad), PluginError);
  }
  CHECK(hip::hip_processor("gfx90a:xnack-") == "gfx90a");
}

TEST_CASE(
    "given name expressions, then the mangled prefix of their template is "
    "the Itanium nested name") {
  CHECK(hip::mangled_template_prefix(
            "jw::kernels::rms_norm<jw::bf16, jw::i32, 2>") ==
        "_ZN2jw7kernels8rms_normI");
  CHECK(hip::mangled_template_prefix("::jw::k<int>") == "_ZN2jw1kI");
  CHECK(hip::mangled_template_prefix("k<float, 3>") == "_Z1kI");
  CHECK(hip::mangled_template_prefix("not_a_template") == "");
  CHECK(hip::mangled_template_prefix("jw::bad-name<1>") == "");
  CHECK(hip::mangled_template_prefix("(jw::k)<1>") == "");
}

TEST_CASE("given bytes that are no AMDGPU ELF, then there is no code object") {
  CHECK_FALSE(hip::read_code_object("").has_value());
  CHECK_FALSE(hip::read_code_object("\x7f"
                                    "ELF but not really")
                  .has_value());
  CHECK(hip::lowered_name_marker(3) == "jw_lowered_name_3");
  const std::string markers =
      hip::lowered_name_markers({"jw::kernels::a<1>", "jw::kernels::b<2>"});
  CHECK(markers.find("jw_lowered_name_0 = (void*)&jw::kernels::a<1>;") !=
        std::string::npos);
  CHECK(markers.find("jw_lowered_name_1 = (void*)&jw::kernels::b<2>;") !=
        std::string::npos);
}
