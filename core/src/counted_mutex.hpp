// CountedMutex: a std::mutex that counts how often the calling thread took
// it. The launch path promises to take no registry or platform mutex on a
// hit (docs/architecture.md); tests/unit/test_launch.cpp holds it to that
// by reading the count around launches. One thread-local increment per
// acquisition, on paths that already lock.
#pragma once

#include <cstdint>
#include <mutex>

namespace jitwarm::detail {

class CountedMutex {
 public:
  void lock() {
    mutex_.lock();
    count_acquisition();
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    count_acquisition();
    return true;
  }
  void unlock() { mutex_.unlock(); }

  // Acquisitions of any CountedMutex by the calling thread so far.
  static uint64_t acquisitions_on_this_thread();

 private:
  static void count_acquisition();
  std::mutex mutex_;
};

}  // namespace jitwarm::detail
