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

std::shared_ptr<const CompiledKernel> CompiledKernelMemo::find(
    const std::string& identity) {
  Result result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(identity);
    if (found == entries_.end()) return nullptr;
    result = found->second;
  }
  try {
    return result.get();
  } catch (...) {
    return nullptr;  // that compile failed: the caller tries its own
  }
}

std::vector<std::shared_ptr<const CompiledKernel>>
CompiledKernelMemo::put_batch(
    std::vector<std::pair<std::string, CompiledKernel>> compiled) {
  std::vector<Result> results;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.compiles;
    for (auto& [identity, kernel] : compiled) {
      ++counters_.requests;
      const auto found = entries_.find(identity);
      if (found != entries_.end()) {
        results.push_back(found->second);
        continue;
      }
      std::promise<std::shared_ptr<const CompiledKernel>> ready;
      ready.set_value(
          std::make_shared<const CompiledKernel>(std::move(kernel)));
      results.push_back(ready.get_future().share());
      entries_.emplace(identity, results.back());
    }
  }
  std::vector<std::shared_ptr<const CompiledKernel>> out;
  for (Result& r : results) {
    try {
      out.push_back(r.get());
    } catch (...) {
      out.push_back(nullptr);  // an earlier compile of it failed meanwhile
    }
  }
  return out;
}

CompiledKernelMemo::Counters CompiledKernelMemo::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

}  // namespace jitwarm::gpu
