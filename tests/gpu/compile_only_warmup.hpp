// The warmup of a process that forks children afterwards, as the tests of
// the CUDA driver's state use it: two keys of expand, compile-only, for a
// named target, so that no device is asked for its architecture. Two keys
// make a batch, which runs every compiler a warmup may use (NVRTC, and
// nvJitLink where it links a batch's kernels apart).
#pragma once

#include <jitwarm/jitwarm.hpp>

namespace jitwarm::test {

inline constexpr std::size_t kWarmedCudaKeys = 2;

inline WarmupResult warm_cuda_keys(Runtime& runtime) {
  const WarmupManifest manifest = parse_warmup_manifest(
      "version = 1\n"
      "[[kernel]]\n"
      "name = \"vllm.v1.sample.rejection_sampler.expand\"\n"
      "[kernel.params]\n"
      "x = { dtype = [\"int32\"] }\n"
      "MAX_NUM_TOKENS = [8, 16]\n",
      "compile-only warmup");
  WarmupOptions options;
  options.platform = "cuda";
  options.target = "cuda:sm_90";
  return runtime.warmup(manifest.requests, options);
}

}  // namespace jitwarm::test
