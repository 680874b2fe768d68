#include "warmup_targets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iostream>
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

WarmupManifestFile read_manifest_file(const std::string& path) {
  try {
    return read_warmup_manifest_file(path);
  } catch (const Error& e) {
    if (e.status() == JW_ERROR_IO) throw CommandError(kExitBadInput, e.what());
    throw;
  }
}

std::vector<WarmupRequest> load_requests(
    const std::vector<std::string>& manifests) {
  std::vector<WarmupRequest> requests;
  for (const auto& path : manifests) {
    const WarmupManifestFile file = read_manifest_file(path);
    WarmupManifest m = parse_warmup_manifest(file.text, file.path);
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

std::string cpu_fallback_note(const Runtime& runtime,
                              const std::string& platform,
                              const std::vector<std::string>& targets,
                              const std::vector<CompileKey>& keys) {
  if (!platform.empty() || !targets.empty()) return "";
  const auto cpu_key = std::find_if(keys.begin(), keys.end(), [](auto& key) {
    return key.target().starts_with("cpu:");
  });
  if (cpu_key == keys.end()) return "";
  const std::string reason = runtime.cpu_fallback_reason();
  if (reason.empty()) return "";
  return fmt::format(
      "{} is the CPU reference, warmed because no --platform or --target was "
      "given and {}; --target sm_90 (or gfx942) warms for a GPU, --platform "
      "cpu says the CPU is meant",
      cpu_key->target(), reason);
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

RemoteOutcome remote_outcome(const WarmupResult& result) {
  return {result.remote_answered, result.remote_failed, !result.keys.empty()};
}

RemoteOutcome remote_outcome(const CacheStats& before, const CacheStats& after,
                             bool worked) {
  return {after.remote_answered() - before.remote_answered(),
          after.remote_errors - before.remote_errors, worked};
}

Persistence persistence_of(const CacheSettings& settings,
                           const RemoteOutcome& remote) {
  Persistence p;
  if (!settings.directory.empty() && settings.problem.empty())
    p.kept_in.push_back(settings.directory);
  std::string remote_problem;  // why the remote tier kept nothing
  if (!settings.remote.empty()) {
    const uint64_t operations = remote.answered + remote.failed;
    if (remote.failed > 0 && remote.answered == 0) {
      p.remote_failed = true;
      remote_problem = fmt::format(
          "nothing reached the remote cache {}: it answered none of {} "
          "operations",
          settings.remote_display, operations);
    } else if (remote.failed > 0) {
      p.remote_failed = true;
      p.kept_in.push_back(settings.remote_display);
      p.notes.push_back(
          {fmt::format("the remote cache {} did not answer {} "
                       "of {} operations: some keys may be "
                       "missing from it",
                       settings.remote_display, remote.failed, operations),
           true});
    } else if (remote.answered > 0) {
      p.kept_in.push_back(settings.remote_display);
    } else if (remote.worked) {
      p.notes.push_back({fmt::format("the remote cache {} was not needed "
                                     "(every key was found nearer), so "
                                     "nothing was written to it",
                                     settings.remote_display),
                         false});
    }
  }
  if (!p.kept_in.empty()) {
    if (!remote_problem.empty()) p.notes.push_back({remote_problem, true});
    return p;
  }
  const bool none_asked =
      settings.directory_source == CacheDirSource::disabled_by_option ||
      settings.directory_source == CacheDirSource::disabled_by_environment;
  p.directory_failed = !none_asked;
  const std::string directory =
      settings.problem.empty()
          ? fmt::format(
                "no persistent cache ({}); the compiled keys end "
                "with this command",
                to_string(settings.directory_source))
          : fmt::format("{} ({})", settings.problem,
                        to_string(settings.directory_source));
  p.notes.push_back(
      {fmt::format("nothing was saved: {}{}",
                   remote_problem.empty() ? "" : remote_problem + "; ",
                   directory),
       p.directory_failed || p.remote_failed});
  return p;
}

int report_persistence(const std::string& command, const Persistence& kept,
                       bool made) {
  for (const Persistence::Note& note : kept.notes) {
    std::cerr << "jitwarm " << command << ": "
              << (note.warning ? "warning: " : "") << note.text << "\n";
  }
  const bool lost = kept.remote_failed || (kept.directory_failed && made);
  return lost ? kExitEnvironment : kExitOk;
}

}  // namespace jitwarm::cli
