// CUDA target strings (plugins/cuda/cuda_target): which become CUBIN, which
// PTX, and which are refused with the accepted forms named.
#include <jitwarm/plugin.hpp>

#include "cuda_target.hpp"

#include <doctest/doctest.h>

#include <string>

using jitwarm::cuda::parse_cuda_target;

TEST_CASE("given sm_ targets, then CUBIN for that architecture") {
  for (const char* text : {"cuda:sm_90", "cuda:sm_90a", "cuda:sm_100f",
                           "cuda:sm_75", "cuda:sm_120"}) {
    CAPTURE(text);
    const auto target = parse_cuda_target(text);
    CHECK(target.platform == "cuda");
    CHECK(target.text == text);
    CHECK(target.arch == std::string(text).substr(5));
    CHECK(target.binary_format == "cubin");
    CHECK(target.warp_size == 32);
  }
}

TEST_CASE("given compute_ targets, then PTX") {
  const auto target = parse_cuda_target("cuda:compute_90");
  CHECK(target.arch == "compute_90");
  CHECK(target.binary_format == "ptx");
}

TEST_CASE("given anything else, then unsupported, naming the accepted forms") {
  for (const char* text :
       {"sm_90", "hip:gfx942", "cuda:gfx942", "cuda:sm_", "cuda:sm_9",
        "cuda:sm_90b", "cuda:compute_x", "cuda:", ""}) {
    CAPTURE(text);
    try {
      parse_cuda_target(text);
      FAIL("accepted");
    } catch (const jitwarm::plugin::PluginError& e) {
      CHECK(e.status() == JW_ERROR_UNSUPPORTED);
      CHECK(std::string(e.what()).find("'cuda:sm_<NN>'") != std::string::npos);
      CHECK(std::string(e.what()).find(std::string("'") + text + "'") !=
            std::string::npos);
    }
  }
  CHECK(jitwarm::cuda::cuda_arch_for(9, 0) == "sm_90");
}
