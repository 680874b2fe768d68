// Warmup execution: from requests (or exact keys) to a plan of (schema,
// implementation, key), then compile-only through the launch path's cache,
// in this process's threads or in worker processes
// (warmup_execution_processes.cpp), unit by unit as warmup_schedule.hpp deals
// them. Expansion of requests into keys is warmup.cpp's.
#include <fmt/format.h>

#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "errors.hpp"
#include "miss_explanation.hpp"
#include "warmup_execution.hpp"

namespace jitwarm::detail {

RemoteUse RemoteUse::of(const CacheStats& stats) {
  return {stats.remote_answered(), stats.remote_errors};
}

RemoteUse RemoteUse::since(const RemoteUse& earlier) const {
  return {answered - earlier.answered, failed - earlier.failed};
}

WarmupExecution::WarmupExecution(Registry& registry, Platforms& platforms,
                                 RuntimeCaches& caches,
                                 CompileService& compiler,
                                 TuneResults& tune_results, Logger& logger)
    : registry_(registry),
      platforms_(platforms),
      caches_(caches),
      compiler_(compiler),
      tune_results_(tune_results),
      logger_(logger) {}

std::vector<WarmupWork> WarmupExecution::plan(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  std::vector<WarmupWork> work;
  std::set<std::string> seen;
  // What a person typed (sm_90) as every host reads it.
  const std::string asked_target =
      options.target.empty() ? std::string() : parse_target(options.target);
  bool fallback_said = false;
  for (const WarmupRequest& request : requests) {
    // An explicit platform (or target) from the caller wins over the
    // manifest's, so one manifest can warm several platforms.
    std::string platform = options.platform;
    if (platform.empty() && !asked_target.empty()) {
      platform = asked_target.substr(0, asked_target.find(':'));
    }
    if (platform.empty() && !request.platform.empty()) {
      platform = request.platform;
    }
    if (platform.empty()) {
      platform = std::string(platforms_.default_platform());
      if (!fallback_said) {
        fallback_said = true;
        warn_of_cpu_fallback();
      }
    }
    std::string target = asked_target;
    std::string device_kind = options.device_kind;
    if (target.empty()) {
      try {
        target = platforms_.target_for(platform, 0);
        if (device_kind.empty()) {
          device_kind = platforms_.device_kind(platform, 0);
        }
      } catch (const Error& e) {
        fail(e.status(),
             "warmup on {}: no target given and none detected ({}); pass a "
             "target "
             "such as {}:sm_90",
             platform, e.what(), platform);
      }
    }
    if (target.rfind(platform + ":", 0) != 0) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "warmup target '{}' is not a {} target ('{}:...')", target, platform,
           platform);
    }
    std::shared_ptr<KernelSlot> slot;
    try {
      slot = registry_.resolve(request.kernel_name);
    } catch (const Error& e) {
      // A manifest's request names its file and line, like a parse error.
      fail(e.status(), "{}: {}",
           request.origin.empty() ? std::string("warmup") : request.origin,
           e.what());
    }
    const auto reading = registry_.read_guard();  // registry_.hpp I2
    const KernelState* state = slot->state.load(std::memory_order_acquire);
    const KernelState::Platform* entry = state->find(platform);
    if (entry == nullptr) {
      fail(JW_ERROR_NOT_FOUND,
           "warmup: {} has no implementation for platform {} (implemented on: "
           "{})",
           slot->name, platform, state->platform_list());
    }
    const std::shared_ptr<ImplRecord>& impl = entry->stack.front();
    for (CompileKey& key : enumerate_warmup_keys(*state->schema, request,
                                                 target, impl->impl_name)) {
      // The config a launch on that kind of device uses (tune_results.hpp).
      if (!device_kind.empty() && impl->c.tune_candidates != nullptr) {
        key = tune_results_.resolve(*impl, key, device_kind);
      }
      if (seen.insert(key.encoding()).second) {
        work.push_back(WarmupWork{state->schema, impl, std::move(key)});
      }
    }
  }
  return work;
}

void WarmupExecution::warn_of_cpu_fallback() {
  const std::string reason = platforms_.cpu_fallback_reason();
  if (reason.empty()) return;
  logger_.log(
      JW_LOG_WARNING,
      fmt::format("warmup: no platform or target given: warming cpu, the CPU "
                  "reference, since {}; give a target (cuda:sm_90, sm_90, "
                  "gfx942) to warm for a GPU without one, or the platform cpu "
                  "to warm the CPU reference without this warning",
                  reason));
}

WarmupResult WarmupExecution::warm(const std::vector<WarmupRequest>& requests,
                                   const WarmupOptions& options) {
  return compile_all(plan(requests, options), options);
}

std::vector<CompileKey> WarmupExecution::plan_keys(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  std::vector<CompileKey> keys;
  for (auto& w : plan(requests, options)) keys.push_back(std::move(w.key));
  return keys;
}

WarmupResult WarmupExecution::warm_keys(const std::vector<CompileKey>& keys,
                                        const WarmupOptions& options) {
  std::vector<WarmupWork> work;
  for (const CompileKey& key : keys) {
    const auto colon = key.target().find(':');
    const std::string platform = key.target().substr(0, colon);
    const std::shared_ptr<KernelSlot> slot =
        registry_.slot_of_key(key, "warmup");
    const auto reading = registry_.read_guard();  // registry_.hpp I2
    const KernelState* state = slot->state.load(std::memory_order_acquire);
    const KernelState::Platform* entry = state->find(platform);
    std::shared_ptr<ImplRecord> impl =
        entry != nullptr ? entry->stack.front() : nullptr;
    if (!impl || impl->impl_name != key.impl_name()) {
      fail(JW_ERROR_NOT_FOUND,
           "warmup: key {} was made for '{}', but {} on {} is now '{}'",
           key.text(), key.impl_name(), key.kernel_name(), platform,
           impl ? impl->impl_name : std::string("not implemented"));
    }
    work.push_back(WarmupWork{
        state->schema, impl,
        options.device_kind.empty() || impl->c.tune_candidates == nullptr
            ? key
            : tune_results_.resolve(*impl, key, options.device_kind)});
  }
  return compile_all(work, options);
}

namespace {

// How many keys of `impl` for `target` one batch takes: the warmup's
// choice, else the implementation's preference, else the default.
unsigned batch_size_for(const ImplRecord& impl, const std::string& target,
                        const std::optional<unsigned>& asked) {
  if (impl.c.compile_batch == nullptr) return 1;
  if (asked) return std::max(*asked, 1u);
  uint32_t preferred = 0;
  if (impl.c.preferred_batch_size != nullptr &&
      impl.c.preferred_batch_size(impl.c.user_data, target.c_str(),
                                  &preferred) == JW_OK &&
      preferred > 0) {
    return preferred;
  }
  return kDefaultWarmupBatchSize;
}

// The groups of a warmup: the keys of one implementation and target, in
// plan order, compiled together up to a batch size at a time where the
// implementation can (one at a time otherwise). warmup_schedule.hpp deals
// them.
std::vector<WarmupSchedule::Group> warmup_groups(
    const std::vector<WarmupWork>& work,
    const std::optional<unsigned>& batch_size) {
  std::vector<WarmupSchedule::Group> groups;
  std::map<std::pair<const ImplRecord*, std::string>, std::size_t> group_of;
  for (std::size_t i = 0; i < work.size(); ++i) {
    const ImplRecord* impl = work[i].impl.get();
    const auto [it, fresh] =
        group_of.try_emplace({impl, work[i].key.target()}, groups.size());
    if (fresh) {
      groups.push_back(
          {{}, batch_size_for(*impl, work[i].key.target(), batch_size)});
    }
    groups[it->second].keys.push_back(i);
  }
  return groups;
}

void note_failure(WarmupKeyResult& r, const std::exception& e) {
  r.failed = true;
  r.error = e.what();
  const auto* error = dynamic_cast<const Error*>(&e);
  r.status = error != nullptr ? error->status() : JW_ERROR_INTERNAL;
}

}  // namespace

void WarmupExecution::warm_unit(
    const std::vector<WarmupWork>& work, std::span<const std::size_t> unit,
    std::vector<WarmupKeyResult>& keys,
    const std::function<void(std::size_t)>& report) {
  // Before a key compiles: the inputs a real launch would pass must give
  // this very key.
  const auto inputs_reproduce = [&](std::size_t i) {
    const WarmupWork& w = work[i];
    WarmupKeyResult& r = keys[i];
    r.key_text = w.key.text();
    r.key_hash = w.key.hash();
    try {
      (void)warmup_inputs_for(*w.schema, w.key);
      return true;
    } catch (const std::exception& e) {
      note_failure(r, e);
      return false;
    }
  };
  if (unit.size() == 1) {
    const std::size_t i = unit.front();
    const WarmupWork& w = work[i];
    if (inputs_reproduce(i)) {
      try {
        keys[i].compiled =
            compiler_.compile(*w.impl, *w.schema, w.key, /*from_launch=*/false)
                .compiled;
      } catch (const std::exception& e) {
        note_failure(keys[i], e);
      }
    }
    if (report) report(i);
    return;
  }
  std::vector<std::size_t> batched;
  std::vector<const CompileKey*> batch_keys;
  for (const std::size_t i : unit) {
    if (inputs_reproduce(i)) {
      batched.push_back(i);
      batch_keys.push_back(&work[i].key);
    } else if (report) {
      report(i);
    }
  }
  if (batched.empty()) return;
  const WarmupWork& first = work[batched.front()];
  const std::vector<CompileCache::BatchLookup> lookups =
      compiler_.compile_batch(*first.impl, *first.schema, batch_keys);
  for (std::size_t k = 0; k < batched.size(); ++k) {
    WarmupKeyResult& r = keys[batched[k]];
    if (lookups[k].error) {
      try {
        std::rethrow_exception(lookups[k].error);
      } catch (const std::exception& e) {
        note_failure(r, e);
      } catch (...) {
        r.failed = true;
        r.error = "unknown exception";
        r.status = JW_ERROR_INTERNAL;
      }
    } else {
      r.compiled = lookups[k].compiled;
    }
    if (report) report(batched[k]);
  }
}

WarmupResult WarmupExecution::compile_all(const std::vector<WarmupWork>& work,
                                          const WarmupOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const RemoteUse remote_before = RemoteUse::of(caches_.cache().stats());
  RemoteUse workers_remote;  // what the workers' remote tier did
  WarmupResult result;
  result.keys.resize(work.size());
  std::vector<WarmupSchedule::Group> groups =
      warmup_groups(work, options.batch_size);
  std::mutex progress_mutex;
  std::size_t done = 0;
  const std::function<void(std::size_t)> report = [&](std::size_t i) {
    if (!options.progress) return;
    std::lock_guard lock(progress_mutex);
    options.progress(++done, work.size(), work[i].key);
  };
  const unsigned jobs = std::max(
      1u, std::min<unsigned>(options.jobs, static_cast<unsigned>(work.size())));
  // Units of `schedule` in this process, on a thread per worker it deals
  // for.
  const auto warm_here = [&](WarmupSchedule& schedule) {
    std::mutex schedule_mutex;
    const auto worker = [&]() {
      for (;;) {
        std::optional<WarmupUnit> unit;
        {
          std::lock_guard lock(schedule_mutex);
          unit = schedule.next();
        }
        if (!unit) return;
        const auto unit_start = std::chrono::steady_clock::now();
        warm_unit(work, schedule.keys(*unit), result.keys, report);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          unit_start)
                .count();
        std::lock_guard lock(schedule_mutex);
        schedule.finished(*unit, seconds);
      }
    };
    const unsigned threads = schedule.workers();
    if (threads <= 1) {
      worker();
      return;
    }
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  };
  if (options.parallel == WarmupParallelism::processes && jobs > 1) {
    // What a worker compiles reaches this process through a persistent
    // store, so only implementations with a fingerprint can go there; the
    // others (host functions, in-memory plugins) are warmed here.
    std::vector<WarmupSchedule::Group> here;
    std::vector<WarmupSchedule::Group> in_workers;
    std::size_t worker_keys = 0;
    for (WarmupSchedule::Group& group : groups) {
      if (work[group.keys.front()].impl->c.fingerprint != nullptr) {
        worker_keys += group.keys.size();
        in_workers.push_back(std::move(group));
      } else {
        here.push_back(std::move(group));
      }
    }
    WarmupSchedule here_schedule(std::move(here), 1);
    warm_here(here_schedule);
    WarmupSchedule worker_schedule(
        std::move(in_workers),
        std::min<unsigned>(jobs, static_cast<unsigned>(worker_keys)));
    if (worker_keys > 1) {
      warm_in_processes(work, worker_schedule, result.keys, report,
                        workers_remote);
    } else {
      warm_here(worker_schedule);
    }
  } else {
    WarmupSchedule schedule(std::move(groups), jobs);
    warm_here(schedule);
  }
  result.count_outcomes();
  const RemoteUse in_this_process =
      RemoteUse::of(caches_.cache().stats()).since(remote_before);
  result.remote_answered = in_this_process.answered + workers_remote.answered;
  result.remote_failed = in_this_process.failed + workers_remote.failed;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (result.compiled > 0 && caches_.disk_cache()) {
    warn_of_near_misses(work, result);
  }
  return result;
}

void WarmupExecution::warn_of_near_misses(const std::vector<WarmupWork>& work,
                                          const WarmupResult& result) const {
  std::vector<CompiledKey> compiled;
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (!result.keys[i].compiled) continue;
    std::optional<std::string> fingerprint =
        key_fingerprint(*work[i].impl, work[i].key);
    if (fingerprint)
      compiled.push_back({&work[i].key, std::move(*fingerprint)});
  }
  if (compiled.empty()) return;
  const NearMisses misses = near_misses(compiled, *caches_.disk_cache());
  if (misses.keys > 0)
    logger_.log(JW_LOG_WARNING, misses.warning(result.compiled));
}

}  // namespace jitwarm::detail
