// StripedCounter: a counter that many threads bump at once without sharing
// a cache line (each thread adds to its own stripe; reading sums them).
// For hot-path statistics, where one shared atomic would make concurrent
// launches contend.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace jitwarm::detail {

// The calling thread's stripe: threads take stripes in turn, so up to
// `stripes` threads never share one.
inline std::size_t thread_stripe(std::size_t stripes) {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t stripe =
      next.fetch_add(1, std::memory_order_relaxed);
  return stripe % stripes;
}

class StripedCounter {
 public:
  static constexpr std::size_t kStripes = 16;
  void add(uint64_t n) {
    counts_[thread_stripe(kStripes)].value.fetch_add(n,
                                                     std::memory_order_relaxed);
  }
  uint64_t sum() const {
    uint64_t total = 0;
    for (const auto& c : counts_)
      total += c.value.load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct alignas(64) Count {
    std::atomic<uint64_t> value{0};
  };
  std::array<Count, kStripes> counts_{};
};

}  // namespace jitwarm::detail
