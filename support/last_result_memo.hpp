// LastResultMemo<N>: what the last call with some inputs gave, kept for the
// next call with the same inputs, for launch paths that repeat themselves
// (a server launches one kernel with one shape again and again): the core's
// memo of a launch's arguments and the prepared launch they found
// (core/src/prepared_launch.hpp), the GPU plugins' memo of a launch plan
// (plugins/common/launch_plan.hpp). Inputs (the key) and the result are
// words; both fit in N words, and the key's length is kept with it.
//
// Contract:
//  * recall() never waits and never writes: it copies the result only if
//    the memo holds a key equal to the one asked for, and no remember()
//    changed the words while it read them (a sequence lock: the version is
//    odd while written and is read again after the words).
//  * remember() replaces the memo unless another thread is replacing it at
//    that moment (then this result is simply not kept).
//  * Every word is read and written atomically (relaxed, ordered by the
//    version's acquire/release and fences), so a read that overlaps a write
//    is a torn read that is thrown away, never a data race; ThreadSanitizer
//    sees atomics only.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace jitwarm::detail {

// The key a memo holds, as recall_matching() shows it to a caller that
// compares it with inputs it has not written out as words: each word is an
// atomic load (what it reads may be torn; recall_matching then throws the
// answer away).
class MemoKey {
 public:
  MemoKey(uint64_t* words, std::size_t size) : words_(words), size_(size) {}
  std::size_t size() const { return size_; }
  uint64_t operator[](std::size_t i) const {
    return std::atomic_ref<uint64_t>(words_[i]).load(std::memory_order_relaxed);
  }

 private:
  uint64_t* words_;
  std::size_t size_;
};

template <std::size_t N>
class LastResultMemo {
 public:
  static constexpr std::size_t kWords = N;

  // The result kept for `key` into `result` (the size it was kept with),
  // or false.
  bool recall(std::span<const uint64_t> key, std::span<uint64_t> result) const {
    return recall_matching(
        [&](const MemoKey& kept) {
          if (kept.size() != key.size()) return false;
          for (std::size_t w = 0; w < key.size(); ++w) {
            if (kept[w] != key[w]) return false;
          }
          return true;
        },
        result);
  }

  // The same with the comparison the caller's: `matches(const MemoKey&)`
  // says whether the kept key is its inputs'.
  template <typename Matches>
  bool recall_matching(Matches&& matches, std::span<uint64_t> result) const {
    const uint64_t before = version_.load(std::memory_order_acquire);
    if (before == 0 || (before & 1) != 0) return false;  // empty, or written
    // The size may be another write's than the words read next (the
    // version check catches that), but it must not send them past the end.
    const uint64_t size = word(0).load(std::memory_order_relaxed);
    if (size + result.size() > N || !matches(MemoKey(&words_[1], size))) {
      return false;
    }
    for (std::size_t w = 0; w < result.size(); ++w) {
      result[w] = word(1 + size + w).load(std::memory_order_relaxed);
    }
    // The words were read before the version is read again.
    std::atomic_thread_fence(std::memory_order_acquire);
    return version_.load(std::memory_order_relaxed) == before;
  }

  void remember(std::span<const uint64_t> key,
                std::span<const uint64_t> result) const {
    if (key.size() + result.size() > N) return;
    if (writing_.exchange(true, std::memory_order_acquire)) return;
    const uint64_t version = version_.load(std::memory_order_relaxed);
    version_.store(version + 1, std::memory_order_relaxed);  // odd
    // Readers see the odd version before any word changes.
    std::atomic_thread_fence(std::memory_order_release);
    word(0).store(key.size(), std::memory_order_relaxed);
    for (std::size_t w = 0; w < key.size(); ++w) {
      word(1 + w).store(key[w], std::memory_order_relaxed);
    }
    for (std::size_t w = 0; w < result.size(); ++w) {
      word(1 + key.size() + w).store(result[w], std::memory_order_relaxed);
    }
    version_.store(version + 2, std::memory_order_release);
    writing_.store(false, std::memory_order_release);
  }

 private:
  std::atomic_ref<uint64_t> word(std::size_t i) const {
    return std::atomic_ref<uint64_t>(words_[i]);
  }

  alignas(64) mutable std::atomic<uint64_t> version_{0};  // 0: never kept
  mutable std::atomic<bool> writing_{false};
  // The key's length, the key, the result.
  alignas(8) mutable std::array<uint64_t, 1 + N> words_{};
};

}  // namespace jitwarm::detail
