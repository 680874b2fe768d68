// A compile-only warmup must leave the CUDA driver uninitialized, so that a
// process may still fork children that use CUDA (docs/plugin-abi.md
// "Platforms"; vLLM forks its workers when the parent has not initialized
// CUDA). NVRTC 12.9 and later initialize the driver inside a compile to
// reach the driver's compute cache unless told not to: a child forked after
// such a compile gets CUDA_ERROR_NOT_INITIALIZED from every driver call.
//
// Its own program, not a case of test_cuda_launch: that one initializes the
// driver before its first case. Here nothing before the fork touches a
// device: the warmup names its target (compile_only_warmup.hpp), and the
// platform is asked only for its capabilities. Without a CUDA driver or a
// device it only compiles and exits 77 (skipped): no child could use a
// device anyway.
#include <jitwarm/jitwarm.hpp>

#include "compile_only_warmup.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

constexpr int kSkipped = 77;

// The child: jitwarm's CUDA platform initializes the driver on first use.
int use_cuda_in_child(const jw_platform_desc& cuda) {
  void* memory = nullptr;
  if (cuda.allocate(cuda.user_data, 0, 256, &memory) != JW_OK) {
    const std::string error = jw_last_error();
    std::cout << "child: allocating on the CUDA platform failed: " << error
              << "\n";
    return error.find("CUDA_ERROR_NO_DEVICE") != std::string::npos ? kSkipped
                                                                   : 1;
  }
  if (cuda.free_memory(cuda.user_data, 0, memory) != JW_OK) {
    std::cout << "child: freeing failed: " << jw_last_error() << "\n";
    return 1;
  }
  std::cout << "child: the CUDA platform allocated and freed device memory\n";
  return 0;
}

}  // namespace

int main() {
  jitwarm::RuntimeOptions options;
  options.no_cache_dir = true;  // compile, never read a cache
  jitwarm::Runtime runtime(options);
  runtime.load_plugins();
  const jw_platform_desc& cuda = runtime.platform("cuda");
  uint32_t flags = 0;
  if (cuda.capabilities(cuda.user_data, &flags, nullptr) != JW_OK) {
    std::cout << "capabilities failed: " << jw_last_error() << "\n";
    return 1;
  }
  if ((flags & JW_PLATFORM_CAN_COMPILE) == 0) {
    std::cout << "the CUDA plugin cannot compile here\n";
    return 1;
  }
  const jitwarm::WarmupResult result = jitwarm::test::warm_cuda_keys(runtime);
  if (result.compiled != jitwarm::test::kWarmedCudaKeys || result.failed != 0) {
    std::cout << "the warmup compiled " << result.compiled << " and failed "
              << result.failed << " keys\n";
    for (const auto& key : result.keys) std::cout << "  " << key.error << "\n";
    return 1;
  }
  for (const auto& key : result.keys) {
    std::cout << "parent: compiled " << key.key_text << "\n";
  }
  if ((flags & JW_PLATFORM_CAN_LAUNCH) == 0) {
    std::cout << "no CUDA driver: the fork is skipped\n";
    return kSkipped;
  }

  std::cout.flush();
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    const int status = use_cuda_in_child(cuda);
    std::cout.flush();
    _exit(status);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
    std::cout << "the child did not exit normally\n";
    return 1;
  }
  return WEXITSTATUS(status);
}
