// The tuner (see tuner.hpp).
#include "tuner.hpp"

#include <chrono>
#include <cmath>

#include "compile_service.hpp"
#include "errors.hpp"

namespace jitwarm::detail {
namespace {

// The default measure: the host's steady clock around timed launches,
// each side of a synchronize, after untimed ones (which also load the
// module and warm the caches).
double host_clock_seconds(const PlatformRecord& platform, int32_t device,
                          void* stream, const TuneOptions& options,
                          const std::function<void()>& launch_once) {
  if (platform.c.synchronize == nullptr) {
    fail(JW_ERROR_UNSUPPORTED,
         "platform {} cannot synchronize, so launches cannot be timed on the "
         "host: give TuneOptions::measure",
         platform.name);
  }
  const auto synchronize = [&] {
    check_plugin_status(
        platform.c.synchronize(platform.c.user_data, device, stream),
        fmt::format("synchronize of platform {}", platform.name));
  };
  for (uint32_t i = 0; i < options.warmup_launches; ++i) launch_once();
  synchronize();
  const uint32_t timed = std::max(options.timed_launches, 1u);
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < timed; ++i) launch_once();
  synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
             .count() /
         timed;
}

}  // namespace

TuneResult tune_launches(Launcher& launcher, Platforms& platforms,
                         TuneResults& results, const KernelSlot& slot,
                         std::span<const jw_arg_value> args,
                         const TuneOptions& options) {
  // A bound far above any use, so that a mistyped count is an error, not
  // a run that never ends.
  constexpr uint32_t kMaxLaunches = 1u << 20;
  if (options.warmup_launches > kMaxLaunches ||
      options.timed_launches > kMaxLaunches) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "tune: {} warmup and {} timed launches per candidate; at most {} each",
         options.warmup_launches, options.timed_launches, kMaxLaunches);
  }
  TuneResult result;
  const LaunchOptions& where = options.launch;
  launcher.with_tuning_view(
      slot, args, where.platform, where.device, where.stream,
      [&](const Launcher::TuningView& view) {
        const std::vector<TuneConfig> candidates =
            tune_candidates(view.impl, view.key);
        if (candidates.empty()) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "tune {}: {} is not tunable (it offers no configs; a kernel "
               "from a descriptor needs a [tune] table)",
               view.key.text(), view.impl.impl_name);
        }
        PlatformRecord* platform = platforms.find(view.platform);
        if (platform == nullptr) {
          fail(JW_ERROR_NOT_FOUND, "tune: unknown platform '{}'",
               view.platform);
        }
        result.key_text = view.key.text();
        result.key_hash = view.key.hash();
        result.device_kind = platform->device_kind(where.device);
        std::string errors;
        std::optional<std::size_t> best;
        for (std::size_t i = 0; i < candidates.size(); ++i) {
          TuneTiming timing{candidates[i], 0, {}};
          // The default config's binary is the untuned key's own.
          const CompileKey candidate =
              i == 0 ? view.key : view.key.with_config(candidates[i]);
          try {
            const std::function<void()> launch_once =
                view.launch_with(candidate);
            timing.seconds =
                options.measure
                    ? options.measure(candidate, launch_once)
                    : host_clock_seconds(*platform, where.device, where.stream,
                                         options, launch_once);
            if (!std::isfinite(timing.seconds) || timing.seconds < 0) {
              fail(JW_ERROR_INVALID_ARGUMENT,
                   "the measure gave {} seconds per launch", timing.seconds);
            }
          } catch (const std::exception& e) {
            timing.error = e.what();
            errors += fmt::format("\n  {}: {}", tune_config_text(timing.config),
                                  timing.error);
          }
          // Ties go to the earlier candidate (the default first).
          if (timing.error.empty() &&
              (!best || timing.seconds < result.timings[*best].seconds)) {
            best = result.timings.size();
          }
          result.timings.push_back(std::move(timing));
          if (options.progress) {
            options.progress(i + 1, candidates.size(), result.timings.back());
          }
        }
        if (!best) {
          fail(JW_ERROR_LAUNCH_FAILED, "tune {}: no candidate ran:{}",
               view.key.text(), errors);
        }
        result.best = result.timings[*best].config;
        if (options.store) {
          result.stored = results.store(view.impl, view.key, result);
        }
      });
  return result;
}

}  // namespace jitwarm::detail
