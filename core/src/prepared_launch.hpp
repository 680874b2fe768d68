// Prepared launches: what every launch of one specialization needs, built
// once, on the first launch of its signature, and found again by signature
// without a lock (docs/architecture.md, "The hot path and its invariants").
//
// Contract:
//  * A table belongs to one platform entry of one published KernelState
//    (registry.hpp), so it serves exactly one implementation (that entry's
//    winner); a registration publishes a new state with empty tables, and
//    the old tables go with the old state after its grace period (I2).
//  * find() compares the table's last hit first (a kernel launched in a
//    loop sees one signature again and again), then hashes and walks a
//    bucket's chain, one acquire load per link and a word compare: no lock,
//    no allocation. insert() publishes with a compare-and-swap;
//    entries are never removed or changed while the table lives.
//  * recall() is a step before that: the launch whose arguments had the
//    same image (argument_image.hpp) as this launch's, without validating
//    or signing them again (last_result_memo.hpp: no lock, no wait, no
//    write); it only ever returns an entry of this table.
//  * Two threads preparing one signature at once may both prepare; the
//    first to publish wins and the other's launch is released unused.
//  * A prepared launch points into its artifact (compile_cache.hpp: never
//    moves) and its implementation (held by the state's stack, which
//    outlives the table), and releases the plugin's prepared object
//    (jw_kernel_impl.release_prepared) when destroyed.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "argument_image.hpp"
#include "argument_signature.hpp"
#include "compile_cache.hpp"
#include "last_result_memo.hpp"
#include "registry.hpp"

namespace jitwarm::detail {

struct PreparedLaunch {
  PreparedLaunch(const ArgumentSignature& signature, int32_t device,
                 uint64_t hash);
  ~PreparedLaunch();
  PreparedLaunch(const PreparedLaunch&) = delete;
  PreparedLaunch& operator=(const PreparedLaunch&) = delete;

  // The same signature words and device; with `hash`, that first (a
  // chain's cheap reject; the table's last hit is compared without it).
  bool matches(std::span<const uint64_t> words, int32_t device) const;
  bool matches(std::span<const uint64_t> words, int32_t device,
               uint64_t hash) const;

  // Lookup
  const uint64_t hash;
  const int32_t device;
  const uint32_t num_words;
  std::unique_ptr<uint64_t[]> words;
  PreparedLaunch* next = nullptr;  // the bucket's chain; set before publish

  // What a launch uses
  const ImplRecord* impl = nullptr;
  const Artifact* artifact = nullptr;
  const CompileKey* key = nullptr;  // the artifact's own copy
  jw_artifact_view view{};          // points into the artifact
  void* plugin_prepared = nullptr;  // from impl->c.prepare, if it has one
};

class PreparedLaunchTable {
 public:
  PreparedLaunchTable() = default;
  ~PreparedLaunchTable();
  PreparedLaunchTable(const PreparedLaunchTable&) = delete;
  PreparedLaunchTable& operator=(const PreparedLaunchTable&) = delete;

  // The launch prepared for this signature on this device, or nullptr.
  const PreparedLaunch* find(const ArgumentSignature& signature,
                             int32_t device) const;
  // Publishes `launch` unless an equal one was published first; returns
  // the one in the table (the other is destroyed).
  const PreparedLaunch* insert(std::unique_ptr<PreparedLaunch> launch);
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }

  // The launch that the last launch whose arguments had these arguments'
  // image found, or nullptr: equal images pass validation alike and have
  // one signature (argument_image.hpp). remember() keeps the image of
  // arguments that passed validation with the launch they found here.
  const PreparedLaunch* recall(std::span<const jw_arg_value> args,
                               int32_t device) const;
  void remember(const ArgumentImage& image, const PreparedLaunch* launch) const;

 private:
  static constexpr std::size_t kBuckets = 256;
  std::array<std::atomic<PreparedLaunch*>, kBuckets> buckets_{};
  std::atomic<std::size_t> size_{0};
  // The launch find() returned last, stored only when it changes (so a
  // loop's launches read it and never write it), on a line of its own.
  alignas(64) mutable std::atomic<const PreparedLaunch*> last_hit_{nullptr};
  // The last launch's argument image and what it found (a pointer into
  // this table).
  LastResultMemo<ArgumentImage::kMaxWords + 1> last_arguments_;
};

// The hash a table files a signature under, device included.
uint64_t prepared_launch_hash(const ArgumentSignature& signature,
                              int32_t device);

}  // namespace jitwarm::detail
