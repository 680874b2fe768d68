#include "warmup_targets.hpp"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <set>

#include "cli.hpp"

namespace jitwarm::cli {
namespace po = boost::program_options;

std::string Shard::text() const {
  return fmt::format("{}/{}", index, count);
}

void validate(boost::any& v, const std::vector<std::string>& values, Shard*,
              int) {
  po::validators::check_first_occurrence(v);
  const std::string& text = po::validators::get_single_string(values);
  const auto number = [](std::string_view s, unsigned* out) {
    const auto [end, error] =
        std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && error == std::errc() && end == s.data() + s.size();
  };
  const auto slash = text.find('/');
  Shard shard;
  if (slash == std::string::npos ||
      !number(std::string_view(text).substr(0, slash), &shard.index) ||
      !number(std::string_view(text).substr(slash + 1), &shard.count) ||
      shard.count < 1 || shard.index < 1 || shard.index > shard.count ||
      shard.count > 1'000'000) {
    throw po::error_with_option_name(fmt::format(
        "the option '%canonical_option%' takes I/N, shard I of N with 1 <= I "
        "<= N (e.g. 1/8 to 8/8), not '{}'",
        text));
  }
  v = shard;
}

std::vector<WarmupRequest> load_requests(
    const std::vector<std::string>& manifests) {
  std::vector<WarmupRequest> requests;
  for (const auto& path : manifests) {
    WarmupManifest m;
    try {
      m = load_warmup_manifest(path);
    } catch (const Error& e) {
      if (e.status() == JW_ERROR_IO)
        throw CommandError(kExitBadInput, e.what());
      throw;
    }
    for (auto& r : m.requests) requests.push_back(std::move(r));
  }
  return requests;
}

std::vector<CompileKey> plan_for_targets(
    Runtime& runtime, const std::vector<WarmupRequest>& requests,
    const std::string& platform, const std::vector<std::string>& targets,
    const Shard& shard, const std::vector<std::string>& device_kinds) {
  std::vector<CompileKey> plan;
  std::set<std::string> planned;  // encodings: a winner two kinds share once
  const std::vector<std::string> each =
      targets.empty() ? std::vector<std::string>{""} : targets;
  const std::vector<std::string> kinds =
      device_kinds.empty() ? std::vector<std::string>{""} : device_kinds;
  for (const std::string& target : each) {
    for (const std::string& kind : kinds) {
      WarmupOptions options;
      options.platform = platform;
      options.target = target;
      options.device_kind = kind;
      for (CompileKey& key : runtime.warmup_plan(requests, options)) {
        if (planned.insert(key.encoding()).second)
          plan.push_back(std::move(key));
      }
    }
  }
  if (shard.count == 1) return plan;
  return warmup_shard(plan, shard.index, shard.count);
}

std::vector<TargetTally> tally_by_target(const std::vector<CompileKey>& keys,
                                         const WarmupResult& result) {
  std::vector<TargetTally> tallies;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& target = keys[i].target();
    auto [it, fresh] = index.emplace(target, tallies.size());
    if (fresh) tallies.push_back(TargetTally{target});
    TargetTally& t = tallies[it->second];
    const WarmupKeyResult& r = result.keys[i];
    ++t.keys;
    if (r.failed) {
      ++t.failed;
    } else if (r.compiled) {
      ++t.compiled;
    } else {
      ++t.cached;
    }
  }
  return tallies;
}

Persistence persistence_of(const CacheSettings& settings) {
  Persistence p;
  if (!settings.directory.empty() && settings.problem.empty())
    p.kept_in.push_back(settings.directory);
  if (!settings.remote.empty()) p.kept_in.push_back(settings.remote_display);
  if (!p.kept_in.empty()) return p;
  const bool asked =
      settings.directory_source == CacheDirSource::disabled_by_option ||
      settings.directory_source == CacheDirSource::disabled_by_environment;
  p.failed = !asked;
  if (!settings.problem.empty()) {
    p.note = fmt::format("nothing was saved: {} ({})", settings.problem,
                         to_string(settings.directory_source));
  } else {
    p.note = fmt::format(
        "nothing was saved: no persistent cache ({}); the compiled keys end "
        "with this command",
        to_string(settings.directory_source));
  }
  return p;
}

}  // namespace jitwarm::cli
