// Warmup execution: from requests (or exact keys) to a plan of (schema,
// implementation, key), then compile-only through the launch path's cache,
// in parallel threads when asked. Expansion of requests into keys is
// warmup.cpp's; worker processes are the tool's (tools/).
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "errors.hpp"
#include "runtime_impl.hpp"

namespace jitwarm::detail {

std::vector<RuntimeImpl::WarmupWork> RuntimeImpl::plan(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  std::vector<WarmupWork> work;
  std::set<std::string> seen;
  for (const WarmupRequest& request : requests) {
    // An explicit platform (or target) from the caller wins over the
    // manifest's, so one manifest can warm several platforms.
    std::string platform = options.platform;
    if (platform.empty() && !options.target.empty()) {
      platform = options.target.substr(0, options.target.find(':'));
    }
    if (platform.empty()) {
      platform = !request.platform.empty()
                     ? request.platform
                     : std::string(platforms_.default_platform());
    }
    std::string target = options.target;
    if (target.empty()) {
      try {
        target = platforms_.target_for(platform, 0);
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
    auto slot = registry_.slot(request.kernel_name);
    if (!slot)
      fail(JW_ERROR_NOT_FOUND, "warmup: unknown kernel '{}'",
           request.kernel_name);
    const auto reading = registry_.read_guard();  // registry_.hpp I2
    const KernelState* state = slot->state.load(std::memory_order_acquire);
    const KernelState::Platform* entry = state->find(platform);
    if (entry == nullptr) {
      fail(JW_ERROR_NOT_FOUND,
           "warmup: {} has no implementation for platform {} (implemented on: "
           "{})",
           request.kernel_name, platform, state->platform_list());
    }
    const std::shared_ptr<ImplRecord>& impl = entry->stack.front();
    for (CompileKey& key : enumerate_warmup_keys(*state->schema, request,
                                                 target, impl->impl_name)) {
      if (seen.insert(key.encoding()).second) {
        work.push_back(WarmupWork{state->schema, impl, std::move(key)});
      }
    }
  }
  return work;
}

WarmupResult RuntimeImpl::warmup(const std::vector<WarmupRequest>& requests,
                                 const WarmupOptions& options) {
  return compile_all(plan(requests, options), options);
}

std::vector<CompileKey> RuntimeImpl::warmup_plan(
    const std::vector<WarmupRequest>& requests, const WarmupOptions& options) {
  std::vector<CompileKey> keys;
  for (auto& w : plan(requests, options)) keys.push_back(std::move(w.key));
  return keys;
}

WarmupResult RuntimeImpl::warmup_keys(const std::vector<CompileKey>& keys,
                                      const WarmupOptions& options) {
  std::vector<WarmupWork> work;
  for (const CompileKey& key : keys) {
    const auto colon = key.target().find(':');
    const std::string platform = key.target().substr(0, colon);
    auto slot = registry_.slot(key.kernel_name());
    if (!slot)
      fail(JW_ERROR_NOT_FOUND, "warmup: unknown kernel '{}'",
           key.kernel_name());
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
    work.push_back(WarmupWork{state->schema, impl, key});
  }
  return compile_all(work, options);
}

namespace {

// The units warmup hands to its workers: each is the indices of keys of one
// implementation and target compiled together (at most batch_size of
// them), or a single key. The largest units come first, so the workers
// that take them are not the last to finish.
std::vector<std::vector<std::size_t>> warmup_units(
    const std::vector<RuntimeImpl::WarmupWork>& work, unsigned batch_size) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::pair<const ImplRecord*, std::string>, std::size_t> group_of;
  for (std::size_t i = 0; i < work.size(); ++i) {
    const ImplRecord* impl = work[i].impl.get();
    if (batch_size <= 1 || impl->c.compile_batch == nullptr) {  // 0 too
      groups.push_back({i});
      continue;
    }
    const auto [it, fresh] =
        group_of.try_emplace({impl, work[i].key.target()}, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::vector<std::vector<std::size_t>> units;
  for (const std::vector<std::size_t>& group : groups) {
    for (std::size_t first = 0; first < group.size(); first += batch_size) {
      const std::size_t last = std::min(group.size(), first + batch_size);
      units.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(first),
                         group.begin() + static_cast<std::ptrdiff_t>(last));
    }
  }
  std::stable_sort(
      units.begin(), units.end(),
      [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return units;
}

void note_failure(WarmupKeyResult& r, const std::exception& e) {
  r.failed = true;
  r.error = e.what();
  const auto* error = dynamic_cast<const Error*>(&e);
  r.status = error != nullptr ? error->status() : JW_ERROR_INTERNAL;
}

}  // namespace

void RuntimeImpl::warm_unit(const std::vector<WarmupWork>& work,
                            const std::vector<std::size_t>& unit,
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
            compile(*w.impl, *w.schema, w.key, /*from_launch=*/false).compiled;
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
      compile_batch(*first.impl, *first.schema, batch_keys);
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

WarmupResult RuntimeImpl::compile_all(const std::vector<WarmupWork>& work,
                                      const WarmupOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  WarmupResult result;
  result.keys.resize(work.size());
  std::vector<std::vector<std::size_t>> units =
      warmup_units(work, options.batch_size);
  std::mutex progress_mutex;
  std::size_t done = 0;
  const std::function<void(std::size_t)> report = [&](std::size_t i) {
    if (!options.progress) return;
    std::lock_guard lock(progress_mutex);
    options.progress(++done, work.size(), work[i].key);
  };
  const unsigned jobs = std::max(
      1u,
      std::min<unsigned>(options.jobs, static_cast<unsigned>(units.size())));
  if (options.parallel == WarmupParallelism::processes && jobs > 1) {
    // What a worker compiles reaches this process through a persistent
    // store, so only implementations with a fingerprint can go there; the
    // others (host functions, in-memory plugins) are warmed here.
    std::vector<std::vector<std::size_t>> in_workers;
    for (auto& unit : units) {
      if (work[unit.front()].impl->c.fingerprint != nullptr) {
        in_workers.push_back(std::move(unit));
      } else {
        warm_unit(work, unit, result.keys, report);
      }
    }
    if (in_workers.size() > 1) {
      warm_in_processes(
          work, in_workers,
          std::min<unsigned>(jobs, static_cast<unsigned>(in_workers.size())),
          result.keys, report);
    } else if (!in_workers.empty()) {
      warm_unit(work, in_workers.front(), result.keys, report);
    }
  } else {
    std::atomic<std::size_t> next{0};
    const auto worker = [&]() {
      for (std::size_t u = next.fetch_add(1); u < units.size();
           u = next.fetch_add(1)) {
        warm_unit(work, units[u], result.keys, report);
      }
    };
    if (jobs <= 1) {
      worker();
    } else {
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(worker);
      for (auto& t : threads) t.join();
    }
  }
  result.count_outcomes();
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

}  // namespace jitwarm::detail
