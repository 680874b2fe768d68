// Warmup execution: from requests (or exact keys) to a plan of (schema,
// implementation, key), then compile-only through the launch path's cache,
// in parallel threads when asked. Expansion of requests into keys is
// warmup.cpp's; worker processes are the tool's (tools/).
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
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

WarmupResult RuntimeImpl::compile_all(const std::vector<WarmupWork>& work,
                                      const WarmupOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  WarmupResult result;
  result.keys.resize(work.size());
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  std::size_t done = 0;
  const auto worker = [&]() {
    for (std::size_t i = next.fetch_add(1); i < work.size();
         i = next.fetch_add(1)) {
      const WarmupWork& w = work[i];
      WarmupKeyResult& r = result.keys[i];
      r.key_text = w.key.text();
      r.key_hash = w.key.hash();
      try {
        // The inputs a real launch would pass must give this very key.
        (void)warmup_inputs_for(*w.schema, w.key);
        r.compiled =
            compile(*w.impl, *w.schema, w.key, /*from_launch=*/false).compiled;
      } catch (const std::exception& e) {
        r.failed = true;
        r.error = e.what();
        const auto* error = dynamic_cast<const Error*>(&e);
        r.status = error != nullptr ? error->status() : JW_ERROR_INTERNAL;
      }
      if (options.progress) {
        std::lock_guard lock(progress_mutex);
        options.progress(++done, work.size(), w.key);
      }
    }
  };
  const unsigned jobs = std::max(
      1u, std::min<unsigned>(options.jobs, static_cast<unsigned>(work.size())));
  if (jobs <= 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }
  result.count_outcomes();
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

}  // namespace jitwarm::detail
