// tools/names.cpp: suggestions, kernel short names, target shorthand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli.hpp"
#include "names.hpp"

namespace cli = jitwarm::cli;

namespace {

const std::vector<std::string> kCommands = {"cache",   "conformance", "explain",
                                            "kernels", "plugins",     "warmup"};

const std::vector<std::string> kKernels = {
    "vllm.model_executor.layers.layernorm.rms_norm",
    "vllm.model_executor.layers.activation.silu_and_mul",
    "acme.fused.silu_and_mul",
    "toplevel",
};

// The message of the jitwarm::Error `f` throws, and its status.
template <class F>
std::pair<jw_status, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const jitwarm::Error& e) {
    return {e.status(), e.what()};
  }
  FAIL("no error thrown");
  return {JW_OK, ""};
}

}  // namespace

TEST_CASE("given a typo of a command, then the closest command is suggested") {
  CHECK(cli::closest_spellings("warmp", kCommands) ==
        std::vector<std::string>{"warmup"});
  CHECK(cli::closest_spellings("expalin", kCommands) ==
        std::vector<std::string>{"explain"});
  CHECK(cli::closest_spellings("kernel", kCommands) ==
        std::vector<std::string>{"kernels"});
  CHECK(cli::closest_spellings("conf", kCommands) ==
        std::vector<std::string>{"conformance"});
  CHECK(cli::closest_spellings("--platfrom", {"--platform", "--plugin"}) ==
        std::vector<std::string>{"--platform"});
}

TEST_CASE("given a word close to nothing, then nothing is suggested") {
  CHECK(cli::closest_spellings("frobnicate", kCommands).empty());
  CHECK(cli::closest_spellings("x", kCommands).empty());
  CHECK(cli::did_you_mean({}).empty());
  CHECK(cli::did_you_mean({"a"}) == "; did you mean 'a'?");
  CHECK(cli::did_you_mean({"a", "b"}) == "; did you mean one of 'a', 'b'?");
}

TEST_CASE("given a kernel's full or unique short name, then it resolves") {
  CHECK(cli::resolve_kernel_name("rms_norm", kKernels) == kKernels[0]);
  CHECK(cli::resolve_kernel_name(kKernels[1], kKernels) == kKernels[1]);
  CHECK(cli::resolve_kernel_name("toplevel", kKernels) == "toplevel");
  CHECK(cli::short_kernel_name("a.b.c") == "c");
  CHECK(cli::short_kernel_name("c") == "c");
}

TEST_CASE(
    "given a short name two kernels share, then it is an error listing "
    "both") {
  const auto [status, message] = error_of(
      [] { (void)cli::resolve_kernel_name("silu_and_mul", kKernels); });
  CHECK(status == JW_ERROR_INVALID_ARGUMENT);
  CHECK(message.find("ambiguous") != std::string::npos);
  CHECK(message.find("'vllm.model_executor.layers.activation.silu_and_mul'") !=
        std::string::npos);
  CHECK(message.find("'acme.fused.silu_and_mul'") != std::string::npos);
}

TEST_CASE("given an unknown kernel, then the error suggests the closest") {
  const auto [status, message] =
      error_of([] { (void)cli::resolve_kernel_name("rms_nrom", kKernels); });
  CHECK(status == JW_ERROR_NOT_FOUND);
  CHECK(message ==
        "unknown kernel 'rms_nrom'; did you mean "
        "'vllm.model_executor.layers.layernorm.rms_norm'?");
  const auto [status2, message2] = error_of(
      [] { (void)cli::resolve_kernel_name("nothing_like_it", kKernels); });
  CHECK(status2 == JW_ERROR_NOT_FOUND);
  CHECK(message2.find("(known kernels: ") != std::string::npos);
}

TEST_CASE("given --kernel filters, then globs must match and names resolve") {
  CHECK_NOTHROW(cli::check_kernel_filter("rms_*", kKernels));
  CHECK_NOTHROW(cli::check_kernel_filter("vllm.*", kKernels));
  CHECK_NOTHROW(cli::check_kernel_filter("rms_norm", kKernels));
  CHECK(error_of([] { cli::check_kernel_filter("nope*", kKernels); }).first ==
        JW_ERROR_NOT_FOUND);
  CHECK(error_of([] {
          cli::check_kernel_filter("silu_and_mul", kKernels);
        }).first == JW_ERROR_INVALID_ARGUMENT);
}

TEST_CASE(
    "given the target shorthand of docs/cli.md, then it gets its platform") {
  CHECK(cli::expand_target("sm_90") == "cuda:sm_90");
  CHECK(cli::expand_target("sm_90a") == "cuda:sm_90a");
  CHECK(cli::expand_target("compute_90") == "cuda:compute_90");
  CHECK(cli::expand_target("gfx942") == "hip:gfx942");
  CHECK(cli::expand_target("gfx90a:xnack-") == "hip:gfx90a:xnack-");
  CHECK(cli::expand_target("cuda:sm_90") == "cuda:sm_90");
  CHECK(cli::expand_target("cpu:x86_64") == "cpu:x86_64");
  CHECK(cli::expand_target("acme:v2") == "acme:v2");
}

TEST_CASE("given a target that is neither, then it is a usage error") {
  for (const char* bad : {"ampere", "sm_", "gfx", ":sm_90", "cuda:", ""}) {
    CAPTURE(bad);
    try {
      (void)cli::expand_target(bad);
      FAIL("accepted");
    } catch (const cli::CommandError& e) {
      CHECK(e.exit_code() == cli::kExitUsage);
      CHECK(std::string(e.what()).find("PLATFORM:ARCH") != std::string::npos);
    }
  }
}
