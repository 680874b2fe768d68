// Tuning results as cache entries (see tune_results.hpp).
#include "tune_results.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "compile_service.hpp"
#include "errors.hpp"

namespace jitwarm::detail {
namespace {

using json = nlohmann::json;

json config_json(const TuneConfig& config) {
  json out = json::object();
  for (const TuneValue& v : config) out[v.name] = v.value;
  return out;
}

TuneConfig config_from(const json& object) {
  if (!object.is_object()) {
    fail(JW_ERROR_IO, "tuning result: a config is not an object");
  }
  TuneConfig config;
  for (const auto& [name, value] : object.items()) {
    if (!value.is_number_integer()) {
      fail(JW_ERROR_IO, "tuning result: config value '{}' is not an integer",
           name);
    }
    config.push_back(TuneValue{name, value.get<int64_t>()});
  }
  std::sort(config.begin(), config.end());
  return config;
}

}  // namespace

std::string encode_tune_result(const TuneResult& result) {
  json timings = json::array();
  for (const TuneTiming& t : result.timings) {
    json timing = {{"config", config_json(t.config)}};
    if (t.error.empty()) {
      timing["seconds"] = t.seconds;
    } else {
      timing["error"] = t.error;
    }
    timings.push_back(std::move(timing));
  }
  const json out = {
      {"format", kTuneResultFormat},      {"version", 1},
      {"key", result.key_text},           {"device_kind", result.device_kind},
      {"best", config_json(result.best)}, {"timings", std::move(timings)}};
  return out.dump();
}

TuneResult decode_tune_result(std::string_view bytes) {
  try {
    const json in = json::parse(bytes);
    if (!in.is_object() || in.value("format", "") != kTuneResultFormat ||
        in.value("version", 0) != 1) {
      fail(JW_ERROR_IO, "not a version-1 {}", kTuneResultFormat);
    }
    TuneResult result;
    result.key_text = in.at("key").get<std::string>();
    result.device_kind = in.at("device_kind").get<std::string>();
    result.best = config_from(in.at("best"));
    for (const json& t : in.at("timings")) {
      TuneTiming timing;
      timing.config = config_from(t.at("config"));
      if (t.contains("error")) {
        timing.error = t.at("error").get<std::string>();
      } else {
        timing.seconds = t.at("seconds").get<double>();
      }
      result.timings.push_back(std::move(timing));
    }
    return result;
  } catch (const json::exception& e) {
    fail(JW_ERROR_IO, "tuning result: {}", e.what());
  }
}

TuneResults::TuneResults(CompileCache& cache, const Logger& logger)
    : cache_(cache), logger_(logger) {}

std::string TuneResults::fingerprint(const ImplRecord& impl,
                                     const CompileKey& key,
                                     std::string_view device_kind) const {
  // The implementation's fingerprint of the key names its source and
  // compiler: a result measured with other code is no result for this.
  return fmt::format("tuning result v1 for {}; {}", device_kind,
                     key_fingerprint(impl, key).value_or("no fingerprint"));
}

bool TuneResults::store(const ImplRecord& impl, const CompileKey& key,
                        const TuneResult& result) {
  const CompileKey untuned = key.with_config({});
  {
    std::lock_guard lock(mutex_);
    known_[{untuned.encoding(), result.device_kind}] = result;
  }
  Artifact entry;
  entry.binary = encode_tune_result(result);
  entry.format = std::string(kTuneResultFormat);
  return cache_.store_entry(
      EntryRef(untuned, fingerprint(impl, untuned, result.device_kind)), entry);
}

std::optional<TuneResult> TuneResults::find(const ImplRecord& impl,
                                            const CompileKey& key,
                                            std::string_view device_kind) {
  const CompileKey untuned = key.with_config({});
  const std::pair<std::string, std::string> id{untuned.encoding(),
                                               std::string(device_kind)};
  {
    std::lock_guard lock(mutex_);
    if (const auto it = known_.find(id); it != known_.end()) return it->second;
  }
  std::optional<TuneResult> found;
  const std::vector<TuneConfig> candidates = tune_candidates(impl, untuned);
  if (!candidates.empty()) {
    if (std::optional<Artifact> entry =
            cache_
                .load_entry(
                    EntryRef(untuned, fingerprint(impl, untuned, device_kind)),
                    /*counted=*/false)
                .artifact) {
      try {
        TuneResult result = decode_tune_result(entry->binary);
        result.key_hash = untuned.hash();
        result.stored = true;
        if (std::find(candidates.begin(), candidates.end(), result.best) !=
            candidates.end()) {
          found = std::move(result);
        } else {
          logger_.log(JW_LOG_WARNING,
                      fmt::format("tuning result for {} on {}: its winner {} "
                                  "is no longer a candidate; using the "
                                  "default config",
                                  untuned.text(), device_kind,
                                  tune_config_text(result.best)));
        }
      } catch (const Error& e) {
        logger_.log(JW_LOG_WARNING,
                    fmt::format("tuning result for {} on {} is unreadable "
                                "({}); using the default config",
                                untuned.text(), device_kind, e.what()));
      }
    }
  }
  std::lock_guard lock(mutex_);
  return known_.try_emplace(id, std::move(found)).first->second;
}

CompileKey TuneResults::resolve(const ImplRecord& impl, const CompileKey& key,
                                std::string_view device_kind) {
  if (!key.config().empty() || impl.c.tune_candidates == nullptr) return key;
  try {
    const std::optional<TuneResult> result = find(impl, key, device_kind);
    if (!result) return key;
    // The default (the first candidate timed) is the untuned key's binary:
    // one entry, not two.
    if (!result->timings.empty() &&
        result->timings.front().config == result->best) {
      return key;
    }
    return key.with_config(result->best);
  } catch (const std::exception& e) {
    logger_.log(JW_LOG_WARNING,
                fmt::format("tuning result for {} on {}: {}; using the "
                            "default config",
                            key.text(), device_kind, e.what()));
    return key;
  }
}

}  // namespace jitwarm::detail
