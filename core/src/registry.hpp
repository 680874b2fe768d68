// The registry: kernel schemas, per-(kernel, platform) stacks of
// implementations, and the lock-free snapshots the launch path reads.
//
// Two layers, kept apart on purpose:
//  * Bookkeeping (mutex-protected, mutable): schemas, every registered
//    implementation with a token, pending implementations whose schema is not
//    defined yet.
//  * Hot state (immutable KernelState per kernel, published through an atomic
//    pointer in the kernel's KernelSlot): what a launch reads, inside a
//    ReadGuard (two atomic increments and decrements), with one load and no
//    lock.
// Invariants:
//  I1. After every bookkeeping change under the mutex, the affected slots'
//      KernelState is rebuilt from the bookkeeping and published.
//  I2. A published KernelState is never modified. Whoever follows a slot's
//      pointer holds a ReadGuard (read_guard()) while using the state; a
//      state that was replaced is retired and freed only once every reader
//      that could have loaded it has left (StateReaders), never under a
//      reader's feet. Readers never wait and never lock.
//  I3. KernelSlots are created once per schema and never removed, so handles
//      that hold one stay valid.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "counted_mutex.hpp"
#include "log.hpp"

namespace jitwarm::detail {

// Where an implementation comes from, which decides its place on its
// (kernel, platform) stack whatever the registration order
// (docs/plugin-abi.md P10): a host override beats a user plugin (one the
// user pointed at: JITWARM_PLUGIN_PATH, an explicit path), which beats a
// bundled plugin (the installed plugin directory). Within one source the
// newest registration wins.
enum class ImplSource : uint8_t {
  bundled_plugin = 0,
  user_plugin = 1,
  host = 2
};
std::string_view to_string(ImplSource source);

// One registered implementation. Owns copies of every string of the C
// struct; keeps the library it came from loaded.
struct ImplRecord {
  // What the core calls: the guarded callbacks of plugin_calls.hpp, with
  // this record as user_data and the string pointers re-pointed into the
  // members below. No exception thrown by `plugin` gets past them.
  jw_kernel_impl c{};
  jw_kernel_impl plugin{};  // the implementation's own callbacks and data
  std::string kernel_name, platform, impl_name, origin;
  std::vector<std::string> param_names;
  std::vector<const char*> param_name_ptrs;
  // impl position -> schema parameter index; filled when bound to a schema.
  std::vector<uint32_t> schema_index;
  // schema_index is the identity: a launch passes its arguments on as they
  // are (unless some are left to their defaults).
  bool positional = true;
  ImplSource source = ImplSource::host;
  // Where a failing destroy callback is reported (null: nowhere; host
  // overrides' destroy is the core's own and cannot fail).
  const Logger* logger = nullptr;
  std::shared_ptr<void> keep_alive;  // plugin library, or host callback state

  ImplRecord() = default;
  ImplRecord(const ImplRecord&) = delete;
  ImplRecord& operator=(const ImplRecord&) = delete;
  ~ImplRecord();

  // Copies `impl` (validating the callbacks it must have).
  static std::shared_ptr<ImplRecord> from_c(const jw_kernel_impl& impl,
                                            std::string origin,
                                            std::shared_ptr<void> keep_alive);
  ImplementationInfo info(bool pending = false) const;
};

// Binds an implementation's parameter names to a schema: by name when they
// are the schema's names, positional when none is, an error otherwise.
void bind_to_schema(ImplRecord& impl, const KernelSchema& schema);

// A pending implementation that did not bind to the schema it waited for,
// and was dropped when that schema was defined.
struct DroppedImpl {
  std::string origin;  // who registered it
  std::string kernel;  // "name [platform]", as the load report lists it
  std::string why;
};

class PreparedLaunchTable;  // prepared_launch.hpp
struct PreparedLaunchTableDeleter {
  void operator()(PreparedLaunchTable* table) const;
};

// What a launch reads: immutable once published (its prepared-launch tables
// only grow, lock-free; prepared_launch.hpp).
struct KernelState {
  std::shared_ptr<const KernelSchema> schema;
  struct Platform {
    std::string name;
    // The winner first: by source (ImplSource), then newest first.
    std::vector<std::shared_ptr<ImplRecord>> stack;
    // Launches of the winner (stack.front()) prepared so far. Declared
    // after the stack so it is destroyed first: a prepared launch is
    // released before its implementation can be destroyed.
    std::unique_ptr<PreparedLaunchTable, PreparedLaunchTableDeleter> prepared;
  };
  std::vector<Platform> platforms;
  // The platform's entry when it has an implementation, else nullptr.
  const Platform* find(std::string_view platform) const;
  const ImplRecord* winner(std::string_view platform) const;
  std::string platform_list() const;
};

struct KernelSlot {
  std::string name;
  std::atomic<const KernelState*> state{nullptr};
};

// Grace periods for retired KernelStates, without locks or waits on the
// read side. A reader enters in the current epoch, counted in one of two
// counters by the epoch's parity (striped over cache lines, so threads
// launching at once do not share one). The registry advances the epoch
// from e to e + 1 only when no reader of epoch e - 1 remains; then a state
// retired in epoch t can no longer be held by anyone once the epoch is past
// t + 1, because its readers entered in epoch t or before. The registry
// checks this after each change and, while states wait, after each read
// (collect_retired): it tries, never waits (a launch may be compiling for
// seconds, or registering kernels itself). So with no launch in flight a
// released override is destroyed before remove() returns, and otherwise when
// the launches that could hold it have ended.
class StateReaders {
 public:
  class Guard {
   public:
    Guard(Guard&& other) noexcept : count_(other.count_) {
      other.count_ = nullptr;
    }
    Guard& operator=(Guard&&) = delete;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() {
      if (count_ != nullptr) count_->fetch_sub(1, std::memory_order_seq_cst);
    }

   private:
    friend class StateReaders;
    explicit Guard(std::atomic<int64_t>* count) : count_(count) {}
    std::atomic<int64_t>* count_;
  };

  Guard enter() const;
  // Writer side, under the registry's mutex.
  uint64_t epoch() const { return epoch_.load(std::memory_order_seq_cst); }
  // Whether every reader that entered in `epoch` (or an earlier epoch of the
  // same parity) has left.
  bool no_readers_of(uint64_t epoch) const;
  void advance() { epoch_.fetch_add(1, std::memory_order_seq_cst); }

 private:
  static constexpr std::size_t kStripes = 16;
  struct alignas(64) Count {
    mutable std::atomic<int64_t> value{0};
  };
  std::atomic<uint64_t> epoch_{0};
  std::array<std::array<Count, kStripes>, 2> counts_{};
};

class Registry {
 public:
  explicit Registry(const Logger& logger) : logger_(logger) {}
  ~Registry();

  // Throws Error(JW_ERROR_ALREADY_EXISTS) naming both origins. Returns the
  // pending implementations that did not bind to it (dropped, not added).
  std::vector<DroppedImpl> define_schema(KernelSchema schema);
  // Adds an implementation to its (kernel, platform) stack: above those of
  // its own source or a weaker one (ImplSource), below stronger ones. With
  // allow_pending, an unknown kernel waits for its schema; otherwise it is
  // Error(JW_ERROR_NOT_FOUND). Returns a token for remove().
  uint64_t add(std::shared_ptr<ImplRecord> impl, bool allow_pending);
  // All-or-nothing batch for register_kernels (every kernel must exist).
  std::vector<uint64_t> add_batch(
      std::vector<std::shared_ptr<ImplRecord>> impls);
  void remove(uint64_t token);
  void remove_batch(const std::vector<uint64_t>& tokens);
  // Publishes the kernel's state again, unchanged but for empty prepared-
  // launch tables, so every launch prepares anew (after a tuning result
  // changed which binary a key runs). Nothing for an unknown name.
  void refresh(std::string_view name);
  // Throws when a schema of this name is already defined (for staging).
  void check_schema_is_new(const std::string& name,
                           const std::string& origin) const;

  std::shared_ptr<KernelSlot> slot(std::string_view name) const;  // or null
  // The slot of the kernel `typed` names, for every place a host names a
  // kernel (launch, schema, explain, overrides, warmup requests): its full
  // name, or a short name that one kernel has. Throws what
  // resolve_kernel_name throws (the closest names, or the kernels an
  // ambiguous short name fits).
  std::shared_ptr<KernelSlot> resolve(std::string_view typed) const;
  // The slot of a key's kernel. A key holds its kernel's full name (it is
  // part of the key's identity): a short one is an error naming the full
  // name. Errors start with `what` ("warmup").
  std::shared_ptr<KernelSlot> slot_of_key(const CompileKey& key,
                                          std::string_view what) const;
  // Hold one while using a state loaded from a slot (I2).
  StateReaders::Guard read_guard() const { return readers_.enter(); }
  // After a read: frees the retired states whose grace period has ended,
  // when there are any and the registry mutex is free (never waits).
  void collect_retired();
  // States replaced but not yet freed (for tests).
  std::size_t retired_count() const;
  std::vector<std::string> kernel_names() const;
  std::vector<ImplementationInfo> implementations(std::string_view name) const;
  KernelExplanation explain(std::string_view name) const;
  std::vector<ImplementationInfo> pending() const;

 private:
  struct Entry {
    uint64_t token;
    std::shared_ptr<ImplRecord> impl;
  };
  struct Kernel {
    std::shared_ptr<const KernelSchema> schema;
    std::shared_ptr<KernelSlot> slot;
    std::unique_ptr<const KernelState> published;  // what slot->state names
    std::map<std::string, std::vector<Entry>, std::less<>>
        stacks;  // the winner first: by source, then newest first
  };
  // What a change drops is destroyed after the mutex is released: dropping
  // a state or an implementation may run an implementation's destroy
  // callback or unload a plugin. Mutators declare one before their lock.
  struct Garbage {
    std::vector<std::unique_ptr<const KernelState>> states;
    std::vector<std::shared_ptr<ImplRecord>> impls;
  };
  // Takes `impl` (moves from it) only when it succeeds.
  uint64_t add_locked(std::shared_ptr<ImplRecord>& impl, bool allow_pending);
  void remove_locked(uint64_t token, Garbage& garbage);
  void publish_locked(Kernel& kernel);
  // Never throws: it runs after a change has been made.
  void collect_locked(Garbage& garbage) noexcept;
  struct Retired {
    std::unique_ptr<const KernelState> state;
    uint64_t epoch;  // the epoch it was replaced in
  };
  Kernel& kernel_locked(std::string_view name);

  const Logger& logger_;
  mutable CountedMutex mutex_;
  std::map<std::string, Kernel, std::less<>> kernels_;
  std::vector<Entry> pending_;
  std::vector<Retired> retired_;
  std::atomic<bool> retired_pending_{false};  // !retired_.empty()
  StateReaders readers_;
  uint64_t next_token_ = 1;
};

}  // namespace jitwarm::detail
