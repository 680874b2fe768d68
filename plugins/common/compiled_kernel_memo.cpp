// CompiledKernelMemo: a map of shared futures; the first requester compiles
// outside the lock, later ones wait on its future.
#include "compiled_kernel_memo.hpp"

namespace jitwarm::gpu {

std::shared_ptr<const CompiledKernel> CompiledKernelMemo::get_or_compile(
    const std::string& identity, const Compile& compile) {
  std::promise<std::shared_ptr<const CompiledKernel>> promise;
  Result result;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.requests;
    const auto found = entries_.find(identity);
    if (found != entries_.end()) {
      result = found->second;
    } else {
      owner = true;
      ++counters_.compiles;
      result = promise.get_future().share();
      entries_.emplace(identity, result);
    }
  }
  if (owner) {
    try {
      promise.set_value(std::make_shared<const CompiledKernel>(compile()));
    } catch (...) {
      {
        // Forget the failure before anyone can see it, so the next request
        // compiles again (the failure may have been transient).
        std::lock_guard<std::mutex> lock(mutex_);
        ++counters_.failures;
        entries_.erase(identity);
      }
      promise.set_exception(std::current_exception());
      throw;
    }
  }
  return result.get();
}

CompiledKernelMemo::Counters CompiledKernelMemo::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

}  // namespace jitwarm::gpu
