// What a vendor DeviceDriver (plugins/cuda, plugins/hip) caches, with the
// locking both need: values made once per device (limits, contexts) and
// loaded modules made once per key. Every launch reads both, so reads of
// what is already made take no exclusive lock; making takes one, and a
// `make` or `load` that throws leaves nothing behind.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jitwarm::gpu {

// One T per device, made by the first get() of that device and then read
// with a single acquire load.
template <typename T>
class PerDevice {
 public:
  // Sized once, when the driver learns its device count, before any get.
  void resize(int32_t devices) {
    const auto count = static_cast<std::size_t>(devices > 0 ? devices : 0);
    slots_ = std::make_unique<std::atomic<const T*>[]>(count);
    for (std::size_t d = 0; d < count; ++d) slots_[d].store(nullptr);
    count_ = count;
  }

  // The device's value; `make()` (returning a T) runs once per device.
  // The caller has checked `device` against the device count.
  template <typename Make>
  const T& get(int32_t device, Make&& make) {
    std::atomic<const T*>& slot = slots_[static_cast<std::size_t>(device)];
    if (const T* made = slot.load(std::memory_order_acquire)) return *made;
    std::lock_guard<std::mutex> lock(mutex_);
    if (const T* made = slot.load(std::memory_order_acquire)) return *made;
    storage_.push_back(std::make_unique<T>(make()));
    slot.store(storage_.back().get(), std::memory_order_release);
    return *storage_.back();
  }

  // Calls `visit(device, value)` for every value made so far, then forgets
  // them all (at shutdown: no get() may run concurrently).
  template <typename Visit>
  void clear(Visit&& visit) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t d = 0; d < count_; ++d) {
      if (const T* made = slots_[d].load(std::memory_order_acquire)) {
        visit(static_cast<int32_t>(d), *made);
      }
      slots_[d].store(nullptr);
    }
    storage_.clear();
  }

 private:
  std::mutex mutex_;
  std::unique_ptr<std::atomic<const T*>[]> slots_;
  std::size_t count_ = 0;
  std::vector<std::unique_ptr<T>> storage_;  // what the slots point to
};

// Loaded modules by key: a hit takes a shared lock; a miss loads once under
// the exclusive lock (a racing miss of the same key finds it loaded).
template <typename Key, typename Module, typename Hash>
class ModuleCache {
 public:
  // The module of `key`; `load()` (returning a Module) runs on a miss.
  template <typename Load>
  Module find_or_load(const Key& key, Load&& load) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      const auto found = modules_.find(key);
      if (found != modules_.end()) return found->second;
    }
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto found = modules_.find(key);
    if (found == modules_.end()) found = modules_.emplace(key, load()).first;
    return found->second;
  }

  // Calls `unload(key, module)` for every module, then forgets them all.
  template <typename Unload>
  void clear(Unload&& unload) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    for (const auto& [key, module] : modules_) unload(key, module);
    modules_.clear();
  }

  std::size_t size() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return modules_.size();
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<Key, Module, Hash> modules_;
};

}  // namespace jitwarm::gpu
