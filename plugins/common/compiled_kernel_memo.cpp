// CompiledKernelMemo: a map of Flights (single_flight.hpp); the first
// requester compiles outside the lock, later ones wait on its Flight.
#include "compiled_kernel_memo.hpp"

namespace jitwarm::gpu {

std::shared_ptr<const CompiledKernel> CompiledKernelMemo::get_or_compile(
    const std::string& identity, const Compile& compile) {
  std::shared_ptr<Entry> entry;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.requests;
    const auto found = entries_.find(identity);
    if (found != entries_.end()) {
      entry = found->second;
    } else {
      entry = std::make_shared<Entry>();
      entries_.emplace(identity, entry);
      owner = true;
      ++counters_.compiles;
    }
  }
  if (!owner) return entry->get();
  try {
    return entry->publish(std::make_shared<const CompiledKernel>(compile()));
  } catch (...) {
    {
      // Forget the failure before anyone can see it, so the next request
      // compiles again (the failure may have been transient).
      std::lock_guard<std::mutex> lock(mutex_);
      ++counters_.failures;
      entries_.erase(identity);
    }
    entry->abandon(std::current_exception());
    throw;
  }
}

std::shared_ptr<const CompiledKernel> CompiledKernelMemo::find(
    const std::string& identity) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(identity);
    if (found == entries_.end()) return nullptr;
    entry = found->second;
  }
  // nullptr when that compile failed: the caller tries its own.
  const auto* kernel = entry->wait();
  return kernel != nullptr ? *kernel : nullptr;
}

std::vector<std::shared_ptr<const CompiledKernel>>
CompiledKernelMemo::put_batch(
    std::vector<std::pair<std::string, CompiledKernel>> compiled) {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.compiles;
    for (auto& [identity, kernel] : compiled) {
      ++counters_.requests;
      const auto found = entries_.find(identity);
      if (found != entries_.end()) {
        entries.push_back(found->second);
        continue;
      }
      auto ready = std::make_shared<Entry>();
      ready->publish(std::make_shared<const CompiledKernel>(std::move(kernel)));
      entries_.emplace(identity, ready);
      entries.push_back(std::move(ready));
    }
  }
  std::vector<std::shared_ptr<const CompiledKernel>> out;
  for (const std::shared_ptr<Entry>& entry : entries) {
    // nullptr: an earlier compile of it failed meanwhile.
    const auto* kernel = entry->wait();
    out.push_back(kernel != nullptr ? *kernel : nullptr);
  }
  return out;
}

CompiledKernelMemo::Counters CompiledKernelMemo::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

}  // namespace jitwarm::gpu
