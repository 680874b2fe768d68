// Flight<T>: one computation that several threads may be waiting for — the
// shared core of the two single-flight caches, the core's CompileCache
// (core/src/compile_cache.hpp: key -> artifact, sharded) and the GPU
// plugins' CompiledKernelMemo (plugins/common/compiled_kernel_memo.hpp:
// program -> compiled kernel).
//
// Each cache keeps its own map and decides who asked first: the thread that
// put a key's Flight into the map owns it and runs the computation outside
// the map's lock; whoever finds the Flight there waits on it. The owner
// ends the flight exactly once:
//  * publish(value): every waiter, and every later reader, gets the value;
//  * abandon(error): every waiter of this attempt gets the error. The cache
//    makes the Flight unreachable from its map (a failure is not kept: the
//    next asker starts a fresh attempt); waiters that hold it still read it.
//
// What stays with each cache, because the two differ where it matters:
//  * where a Flight lives. CompileCache owns its entries (a Flight inside an
//    entry, behind a unique_ptr, never freed while the cache lives), so the
//    address of a published value stays valid and is handed out as a plain
//    pointer; CompiledKernelMemo holds Flights by shared_ptr and erases a
//    failed one, since what it hands out is itself a shared_ptr.
//  * how a hit is found. CompileCache's hit takes only a shared lock on one
//    shard, then ready(): one acquire load, no lock on the Flight. The memo
//    takes its one mutex.
//  * when a failed Flight leaves the map, relative to abandon().
//
// A Flight never moves (it holds a mutex): the value's address is stable
// for the Flight's life. T is default-constructible (the value is stored in
// place, written once by publish).
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <utility>

namespace jitwarm::detail {

template <typename T>
class Flight {
 public:
  Flight() = default;
  Flight(const Flight&) = delete;
  Flight& operator=(const Flight&) = delete;

  // The published value, or nullptr while the computation runs or after it
  // failed. Never waits, takes no lock: one acquire load, for hit paths.
  const T* ready() const noexcept {
    return ready_.load(std::memory_order_acquire) ? &value_ : nullptr;
  }

  // Waits until the owner publishes or abandons: the value, or rethrows the
  // owner's error.
  const T& get() {
    std::unique_lock lock(mutex_);
    wait_done(lock);
    if (state_ == State::ready) return value_;
    std::rethrow_exception(error_);
  }

  // Waits as get() does: the value, or nullptr when the computation failed.
  const T* wait() {
    std::unique_lock lock(mutex_);
    wait_done(lock);
    return state_ == State::ready ? &value_ : nullptr;
  }

  // The owner, once: stores `value` (its address is stable from here on)
  // and wakes every waiter.
  const T& publish(T value) {
    {
      std::lock_guard lock(mutex_);
      value_ = std::move(value);
      state_ = State::ready;
      ready_.store(true, std::memory_order_release);
    }
    done_.notify_all();
    return value_;
  }

  // The owner, once, instead of publish: every waiter gets `error`.
  void abandon(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      state_ = State::failed;
      error_ = std::move(error);
    }
    done_.notify_all();
  }

 private:
  enum class State { running, ready, failed };
  void wait_done(std::unique_lock<std::mutex>& lock) {
    done_.wait(lock, [&] { return state_ != State::running; });
  }

  std::mutex mutex_;
  std::condition_variable done_;
  State state_ = State::running;
  T value_{};
  std::exception_ptr error_;
  // Set (release) once value_ is complete; read without the mutex.
  std::atomic<bool> ready_{false};
};

}  // namespace jitwarm::detail
