// worker_pool.hpp — running work items in worker processes, so an item
// that crashes or hangs is reported as such and the run goes on: the
// conformance runner's cases and
// process-parallel warmup's batches (warmup_execution.cpp).
//
// Owns the worker lifecycle and its pipe protocol; starting, killing and
// reaping a worker are child_process.hpp's. The parent forks
// workers (it has touched no device and loaded no plugin: plan.hpp); each
// worker runs `setup` once (load plugins, create a runtime) and then many
// items, announcing "start" before each and sending its result after. The
// parent notes when each item started; if the worker dies during an item,
// that item ended in a crash, and if it runs past the timeout the worker is
// killed and the item timed out. Either way a new worker takes the next
// item. A worker may also ask to be replaced after an item (a device error
// can leave its context unusable). Workers take items from the parent one
// at a time, so `jobs` workers share the list; an ItemSchedule decides
// which item goes next.
//
// Generic over what an item is: results travel as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace jitwarm::detail {

struct ItemOutcome {
  nlohmann::json result;
  bool replace_worker = false;
};

// Runs one item inside a worker.
using ItemRunner = std::function<ItemOutcome(std::size_t item)>;
// Runs once in each new worker process and returns its item runner. An
// exception here fails the item the worker was given.
using WorkerSetup = std::function<ItemRunner()>;

struct IsolationOptions {
  unsigned jobs = 1;
  double item_timeout_seconds = 60;
  // Added to the first item's allowance of each worker, for its setup
  // (plugin loading, device initialization).
  double setup_allowance_seconds = 120;
  // What an item is, in the messages of a crash or a timeout ("the worker
  // process ... during the case").
  const char* item_noun = "item";
  // What a worker gets when its parent dies (PR_SET_PDEATHSIG): SIGKILL, or
  // a signal its setup handles to clean up first (warmup's workers remove
  // the cache file they are writing on SIGTERM).
  int parent_death_signal = SIGKILL;
};

enum class ItemEndKind {
  completed,  // `result` holds the runner's result
  failed,     // the runner (or the worker's setup) threw: `detail`
  crashed,    // the worker died during the item: `detail` says how
  timed_out,  // killed after the timeout
};

struct ItemEnd {
  std::size_t item = 0;
  ItemEndKind kind = ItemEndKind::completed;
  nlohmann::json result;
  std::string detail;
  double seconds = 0;  // from the item's start to its end
};

// Which item a free worker runs next: asked each time one is free, and told
// of every end (so it can learn how long items take, and deal the rest by
// that). The items need not be dense: an item is a number the worker's
// runner understands.
class ItemSchedule {
 public:
  virtual ~ItemSchedule() = default;
  // The next item to run, or std::nullopt when none is left.
  virtual std::optional<std::size_t> next() = 0;
  // An item ended, before `on_end` hears of it.
  virtual void ended(const ItemEnd& end) { (void)end; }
};

// Runs items [0, count) and returns one end per item, in item order.
// `on_end` (optional) is called in the parent as each item ends.
std::vector<ItemEnd> run_isolated(
    std::size_t count, const WorkerSetup& setup,
    const IsolationOptions& options,
    const std::function<void(const ItemEnd&)>& on_end = {});

// Runs what `schedule` hands out, until it has nothing left; returns one end
// per item run, in the order they ended.
std::vector<ItemEnd> run_isolated(
    ItemSchedule& schedule, const WorkerSetup& setup,
    const IsolationOptions& options,
    const std::function<void(const ItemEnd&)>& on_end = {});

// Runs `work` in a child process and returns its JSON; throws
// std::runtime_error when the child throws, dies or runs past the timeout.
nlohmann::json run_in_child(const std::function<nlohmann::json()>& work,
                            double timeout_seconds);

}  // namespace jitwarm::detail
