// Tuning results (docs/tuning.md): the winning config of a key per kind of
// device, which a launch or a warmup for that kind compiles instead of the
// default config.
//
// * A result is a cache entry of the untuned key, with a fingerprint of its
//   own (the device kind and the implementation's fingerprint of the key),
//   so the persistent tiers (disk, system, remote) and bundles carry it as
//   they carry binaries, and a changed kernel source or compiler is a miss.
// * Results found or missed are remembered in memory, per (key, device
//   kind): a launch asks only when it prepares a new signature, and asks
//   the tiers once.
// * Nothing here benchmarks: tuner.hpp measures and stores through store().
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "compile_cache.hpp"
#include "log.hpp"
#include "registry.hpp"

namespace jitwarm::detail {

class TuneResults {
 public:
  TuneResults(CompileCache& cache, const Logger& logger);
  TuneResults(const TuneResults&) = delete;
  TuneResults& operator=(const TuneResults&) = delete;

  // Remembers `result` for `key` (untuned) of `impl` and writes it to the
  // persistent tiers; true when one kept it.
  bool store(const ImplRecord& impl, const CompileKey& key,
             const TuneResult& result);
  // The result for `key` (its config ignored) on `device_kind`, or nullopt:
  // none, an implementation that is not tunable, or a winner it no longer
  // offers (logged). Throws Error when the implementation's
  // tune_candidates or fingerprint fails.
  std::optional<TuneResult> find(const ImplRecord& impl, const CompileKey& key,
                                 std::string_view device_kind);
  // The key a compile for `device_kind` uses: `key` with its result's
  // winner, or `key` itself (tuned already, no result, the winner is the
  // default). Never throws: a failing lookup is logged and leaves `key`.
  CompileKey resolve(const ImplRecord& impl, const CompileKey& key,
                     std::string_view device_kind);

 private:
  std::string fingerprint(const ImplRecord& impl, const CompileKey& key,
                          std::string_view device_kind) const;

  CompileCache& cache_;
  const Logger& logger_;
  std::mutex mutex_;  // only for known_
  // (untuned key's encoding, device kind) -> its result, or none.
  std::map<std::pair<std::string, std::string>, std::optional<TuneResult>>
      known_;
};

// A result as a cache entry's binary (JSON) and back; decoding throws
// Error(JW_ERROR_IO) for anything but what encoding makes.
std::string encode_tune_result(const TuneResult& result);
TuneResult decode_tune_result(std::string_view bytes);

// The entry format of a tuning result.
inline constexpr std::string_view kTuneResultFormat = "jitwarm-tune-result";

}  // namespace jitwarm::detail
