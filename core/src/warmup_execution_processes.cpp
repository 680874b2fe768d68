// Process-parallel warmup (WarmupOptions::parallel = processes), the part
// of WarmupExecution that runs in worker processes (warm_in_processes; the
// rest is warmup_execution.cpp's): the units of a warmup (batches of one
// implementation and target, or single keys) dealt to worker processes of
// the core's worker pool (worker_pool.hpp), which forks them from this
// process, so they have its plugins and registry without loading anything
// again.
//
// * Units one at a time to whichever worker is free, as the warmup's
//   schedule deals them (warmup_schedule.hpp: by what their keys cost, as
//   measured while the warmup goes).
// * Each unit's result comes back as JSON, a record per key (compiled,
//   failed, the error and its status) and what the worker's remote tier
//   answered and did not, and progress moves as each arrives.
// * Artifacts travel through a persistent store: the runtime's cache when
//   it has one (every later run reads them too), else a private temporary
//   directory, removed at the end. This process then takes every warmed
//   key into its memory cache, from that store, so a launch here is a hit.
// * A worker that crashes or runs past the timeout fails its unit's keys,
//   saying how; a new worker takes the next unit.
// * A private store of a process killed mid-warmup is removed by the next
//   process-parallel warmup that needs one (its name holds the dead pid).
// * Workers never outlive this process: its death sends them SIGTERM
//   (PR_SET_PDEATHSIG), on which they remove the cache file they are
//   writing (in_flight_files.hpp) and die of the signal; SIGINT and SIGHUP
//   do the same.
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "disk_cache.hpp"
#include "errors.hpp"
#include "in_flight_files.hpp"
#include "temporary_directory.hpp"
#include "warmup_execution.hpp"
#include "worker_pool.hpp"

namespace jitwarm::detail {
namespace {

namespace fs = std::filesystem;

// A unit is compile work of one kernel and target: even a large batch of a
// heavy kernel takes well under this. What runs past it is hung.
constexpr double kUnitTimeoutSeconds = 1800;

constexpr std::string_view kPrivatePrefix = "jitwarm-warmup-";

// Private stores of warmups whose process is gone (killed before it could
// remove its own): their names hold the owner's pid.
void sweep_abandoned_private_stores() {
  std::error_code error;
  for (const auto& entry :
       fs::directory_iterator(fs::temp_directory_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kPrivatePrefix)) continue;
    const pid_t owner = static_cast<pid_t>(
        std::strtol(name.c_str() + kPrivatePrefix.size(), nullptr, 10));
    if (owner <= 0 || (::kill(owner, 0) != 0 && errno == ESRCH)) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

// A private store's directory, removed with everything in it.
// A private store's directory: earlier runs' abandoned ones swept first.
std::unique_ptr<TemporaryDirectory> private_store_directory() {
  sweep_abandoned_private_stores();
  try {
    return std::make_unique<TemporaryDirectory>(
        fmt::format("{}{}-", kPrivatePrefix, ::getpid()));
  } catch (const std::system_error& e) {
    fail(JW_ERROR_IO,
         "process-parallel warmup: {} for the workers' artifacts: {}", e.what(),
         e.code().message());
  }
}

void stop_warmup_worker(int signal_number) {
  remove_in_flight_files();
  // Die of the same signal, so the parent (if any) sees why.
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void install_stop_handlers() {
  struct sigaction stop {};
  stop.sa_handler = stop_warmup_worker;
  sigemptyset(&stop.sa_mask);
  for (const int signal_number : {SIGTERM, SIGINT, SIGHUP}) {
    ::sigaction(signal_number, &stop, nullptr);
  }
}

// The schedule's units as the worker pool's items.
class ScheduledUnits final : public ItemSchedule {
 public:
  explicit ScheduledUnits(WarmupSchedule& schedule) : schedule_(schedule) {}
  std::optional<std::size_t> next() override {
    const std::optional<WarmupUnit> unit = schedule_.next();
    if (!unit) return std::nullopt;
    return schedule_.item(*unit);
  }
  void ended(const ItemEnd& end) override {
    schedule_.finished(schedule_.unit(end.item), end.seconds);
  }

 private:
  WarmupSchedule& schedule_;
};

nlohmann::json key_record(std::size_t index, const WarmupKeyResult& r) {
  return {{"index", index},
          {"compiled", r.compiled},
          {"failed", r.failed},
          {"error", r.error},
          {"status", static_cast<int>(r.status)}};
}

// Loads from the cache directory (as its trust allows), and keeps what is
// compiled in a private directory: how workers hand compiles over when
// trusted keys are required and nothing signs them.
class TrustedLoadsPrivateStores : public ArtifactStore {
 public:
  TrustedLoadsPrivateStores(std::shared_ptr<DiskCache> trusted,
                            std::shared_ptr<DiskCache> handed_over)
      : trusted_(std::move(trusted)), handed_over_(std::move(handed_over)) {}
  // The trusted entry, else one a worker handed over (whose rejects are
  // not the cache's, so not in the answer).
  TierLoad load(const EntryRef& entry) override {
    TierLoad found = trusted_->load(entry);
    if (found.artifact) return found;
    TierLoad handed = handed_over_->load(entry);
    if (handed.artifact) {
      found.artifact = std::move(handed.artifact);
      found.tier = handed.tier;
    }
    return found;
  }
  bool store(const EntryRef& entry, const Artifact& artifact) override {
    return handed_over_->store(entry, artifact);
  }

 private:
  std::shared_ptr<DiskCache> trusted_, handed_over_;
};

}  // namespace

void WarmupExecution::warm_in_processes(
    const std::vector<WarmupWork>& work, WarmupSchedule& schedule,
    std::vector<WarmupKeyResult>& keys,
    const std::function<void(std::size_t)>& report, RemoteUse& remote) {
  std::unique_ptr<TemporaryDirectory> private_directory;
  std::shared_ptr<ArtifactStore> store = caches_.disk_cache();
  const EntryTrust& trust = *caches_.trust();
  if (!store) {
    private_directory = private_store_directory();
    store =
        std::make_shared<DiskCache>(private_directory->path(), "", 0, &logger_);
  } else if (trust.required() && trust.signer() == nullptr) {
    // The workers' compiles would be unsigned, refused on the way back and
    // compiled again here: they come back through a private directory,
    // while the workers still load the trusted entries of the cache.
    private_directory = private_store_directory();
    store = std::make_shared<TrustedLoadsPrivateStores>(
        caches_.disk_cache(), std::make_shared<DiskCache>(
                                  private_directory->path(), "", 0, &logger_));
  }
  const bool private_store = private_directory != nullptr;

  const WorkerSetup setup = [&]() -> ItemRunner {
    // In the forked worker (one thread: the one that forked).
    install_stop_handlers();
    // The host's log sink may need what another thread held at the fork (a
    // lock, Python's GIL): a worker writes its log lines to stderr.
    logger_ = Logger{};
    if (private_store) caches_.cache().set_store(store);
    return [&](std::size_t item) {
      const std::span<const std::size_t> unit =
          schedule.keys(schedule.unit(item));
      std::vector<WarmupKeyResult> local(work.size());
      const RemoteUse before = RemoteUse::of(caches_.cache().stats());
      warm_unit(work, unit, local, {});
      const RemoteUse used =
          RemoteUse::of(caches_.cache().stats()).since(before);
      nlohmann::json records = nlohmann::json::array();
      for (const std::size_t i : unit) {
        records.push_back(key_record(i, local[i]));
      }
      return ItemOutcome{{{"keys", std::move(records)},
                          {"remote_answered", used.answered},
                          {"remote_failed", used.failed}},
                         false};
    };
  };
  IsolationOptions pool;
  pool.jobs = schedule.workers();
  pool.item_timeout_seconds = kUnitTimeoutSeconds;
  pool.setup_allowance_seconds = 60;
  pool.item_noun = "warmup batch";
  pool.parent_death_signal = SIGTERM;
  const auto start = std::chrono::steady_clock::now();
  ScheduledUnits items(schedule);
  run_isolated(items, setup, pool, [&](const ItemEnd& end) {
    const std::span<const std::size_t> unit =
        schedule.keys(schedule.unit(end.item));
    // Where a parallel warmup's time goes: which unit ended when, after
    // how long in its worker (the tail of the schedule shows here).
    logger_.log(
        JW_LOG_DEBUG,
        fmt::format("warmup: {} keys of {} took {:.3f} s, ended at {:.3f} s",
                    unit.size(), work[unit.front()].key.kernel_name(),
                    end.seconds,
                    std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count()));
    for (const std::size_t i : unit) {
      WarmupKeyResult& r = keys[i];
      r.key_text = work[i].key.text();
      r.key_hash = work[i].key.hash();
    }
    bool answered = false;
    if (end.kind == ItemEndKind::completed && end.result.is_object() &&
        end.result.contains("keys")) {
      answered = true;
      for (const nlohmann::json& record : end.result.at("keys")) {
        const std::size_t i = record.at("index").get<std::size_t>();
        WarmupKeyResult& r = keys.at(i);
        r.compiled = record.at("compiled").get<bool>();
        r.failed = record.at("failed").get<bool>();
        r.error = record.at("error").get<std::string>();
        r.status = static_cast<jw_status>(record.at("status").get<int>());
      }
      remote.answered += end.result.value("remote_answered", uint64_t{0});
      remote.failed += end.result.value("remote_failed", uint64_t{0});
    }
    for (const std::size_t i : unit) {
      if (!answered) {
        WarmupKeyResult& r = keys[i];
        r.failed = true;
        r.status = JW_ERROR_COMPILE_FAILED;
        r.error = fmt::format(
            "{}: not warmed: {}", r.key_text,
            end.detail.empty() ? "its worker sent no result" : end.detail);
      }
      if (report) report(i);
    }
  });

  // Into this process's memory cache, from the store the workers wrote.
  for (const std::size_t i : schedule.all_keys()) {
    if (keys[i].failed) continue;
    const WarmupWork& w = work[i];
    try {
      if (!private_store) {
        (void)compiler_.compile(*w.impl, *w.schema, w.key,
                                /*from_launch=*/false);
        continue;
      }
      // The private store is not this cache's: read it in the compile
      // step, and compile only if a worker could not store the entry.
      CompileCache::Compiler compiler =
          compiler_.compiler_for(*w.impl, *w.schema, w.key,
                                 /*from_launch=*/false);
      const auto fingerprint = compiler.fingerprint;
      const auto compile_here = compiler.compile;
      compiler.fingerprint = {};
      compiler.counts_as_compile = false;
      compiler.compile = [&]() {
        std::optional<std::string> print =
            fingerprint ? fingerprint() : std::nullopt;
        if (print) {
          TierLoad handed = store->load(EntryRef(w.key, std::move(*print)));
          if (handed.artifact) return std::move(*handed.artifact);
        }
        return compile_here();
      };
      (void)caches_.cache().get_or_compile(w.key, compiler);
    } catch (const std::exception& e) {
      keys[i].failed = true;
      keys[i].error = e.what();
      const auto* error = dynamic_cast<const Error*>(&e);
      keys[i].status = error != nullptr ? error->status() : JW_ERROR_INTERNAL;
    }
  }
}

}  // namespace jitwarm::detail
