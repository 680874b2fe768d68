// jitwarm cache stats|list|verify|prune|clear|export|import|why: the
// persistent compile cache. Which directory comes from the core's one
// resolution of cache settings (resolve_cache_settings), so the command and a
// runtime always agree on it; every action but import refuses a directory that
// does not exist rather than make one.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "cli.hpp"
#include "names.hpp"
#include "trust_options.hpp"
#include "warmup_targets.hpp"

namespace jitwarm::cli {

const std::vector<std::string>& cache_actions() {
  static const std::vector<std::string> actions = {"stats",  "list",  "verify",
                                                   "prune",  "clear", "export",
                                                   "import", "why",   "keygen"};
  return actions;
}

namespace {

struct CacheCommand {
  std::string action, file, output, cache_dir, max_bytes, platform, sha256;
  TrustOptions trust;
  std::vector<std::string> manifests;  // why: where a key's text is found
  PluginOptions plugins;               // why: the keys' implementations
  std::vector<std::string> targets;    // expanded
  bool json = false;
  RuntimeOptions options;  // what picks the directory
  CacheSettings settings;
};

// The targets' entries, and every target's, per target.
struct Tally {
  std::size_t entries = 0;
  uint64_t bytes = 0;
};

nlohmann::json settings_json(const CacheSettings& s) {
  return {{"cache_dir", s.directory},
          {"source", std::string(to_string(s.directory_source))},
          {"system_cache_dir", s.system_directory}};
}

// A public cache action, with the command's words for a missing
// directory: where the settings found it, and whether anything was ever
// cached there.
template <typename Action>
auto in_cache(const CacheCommand& c, Action&& action) {
  if (c.settings.directory.empty()) {
    throw usage_error(
        fmt::format("no cache directory ({}); name one with --cache-dir",
                    to_string(c.settings.directory_source)));
  }
  try {
    return action();
  } catch (const Error& e) {
    if (e.status() != JW_ERROR_NOT_FOUND) throw;
    throw CommandError(kExitBadInput,
                       fmt::format("{}, from {}{}", e.what(),
                                   to_string(c.settings.directory_source),
                                   c.settings.default_directory()
                                       ? " (nothing has been cached there yet)"
                                       : ""));
  }
}

int stats(const CacheCommand& c) {
  const CacheReport s =
      in_cache(c, [&] { return cache_directory_stats(c.options); });
  nlohmann::json j = settings_json(c.settings);
  j["entries"] = s.entries;
  j["bytes"] = s.bytes;
  if (!c.settings.system_directory.empty()) {
    j["system_entries"] = s.system_entries;
    j["system_bytes"] = s.system_bytes;
  }
  j["bundles"] = nlohmann::json::array();
  for (const CacheBundleUse& b : s.bundles) {
    j["bundles"].push_back({{"name", b.name},
                            {"id", b.id},
                            {"imported", b.imported},
                            {"entries", b.entries},
                            {"entries_ever_hit", b.entries_ever_hit}});
  }
  for (const std::string& problem : s.bundle_problems)
    std::cerr << "warning: " << problem << "\n";
  if (c.json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{}: {} entries, {} bytes ({})\n",
                           c.settings.directory, s.entries, s.bytes,
                           to_string(c.settings.directory_source));
  if (!c.settings.system_directory.empty()) {
    std::cout << fmt::format(
        "{}: {} entries, {} bytes (system cache, read "
        "only)\n",
        c.settings.system_directory, s.system_entries, s.system_bytes);
  }
  for (const CacheBundleUse& b : s.bundles) {
    const std::time_t when = static_cast<std::time_t>(b.imported);
    std::tm utc{};
    gmtime_r(&when, &utc);
    char date[32];
    std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &utc);
    std::cout << fmt::format(
        "bundle {} (imported {}): {} entries, {} ever hit\n", b.name, date,
        b.entries, b.entries_ever_hit);
  }
  return kExitOk;
}

int list(const CacheCommand& c) {
  const CacheListing listing =
      in_cache(c, [&] { return list_cache(c.targets, c.options); });
  std::map<std::string, Tally> by_target;
  Tally total;
  for (const CacheEntryInfo& e : listing.entries) {
    Tally& t = by_target[e.target];
    ++t.entries;
    t.bytes += e.bytes;
    ++total.entries;
    total.bytes += e.bytes;
  }
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["entries"] = total.entries;
    j["bytes"] = total.bytes;
    j["targets"] = nlohmann::json::array();
    for (const auto& [target, t] : by_target) {
      j["targets"].push_back(
          {{"target", target}, {"entries", t.entries}, {"bytes", t.bytes}});
    }
    j["list"] = nlohmann::json::array();
    for (const CacheEntryInfo& e : listing.entries) {
      j["list"].push_back({{"key", e.key},
                           {"kernel", e.kernel},
                           {"implementation", e.implementation},
                           {"target", e.target},
                           {"bytes", e.bytes},
                           {"layer", e.system ? "system" : "user"}});
    }
    j["corrupt"] = nlohmann::json::array();
    for (const CorruptCacheEntry& e : listing.corrupt) {
      j["corrupt"].push_back({{"path", e.path}, {"why", e.why}});
    }
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  for (const CacheEntryInfo& e : listing.entries) {
    std::cout << fmt::format("{:<14} {:>10}  {}{}\n", e.target, e.bytes, e.key,
                             e.system ? "  (system)" : "");
  }
  for (const auto& [target, t] : by_target) {
    std::cout << fmt::format("{}: {} entries, {} bytes\n", target, t.entries,
                             t.bytes);
  }
  if (!listing.corrupt.empty()) {
    std::cout << fmt::format(
        "{} corrupt entries ('jitwarm cache verify' lists them)\n",
        listing.corrupt.size());
  }
  std::cout << fmt::format("{} entries, {} bytes in {}\n", total.entries,
                           total.bytes, c.settings.directory);
  return kExitOk;
}

int verify(const CacheCommand& c) {
  const CacheReport s = in_cache(c, [&] { return verify_cache(c.options); });
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["entries"] = s.entries;
    j["corrupt"] = s.corrupt;
    j["corrupt_files"] = s.corrupt_files;
    j["signers"] = nlohmann::json::array();
    for (const auto& [id, n] : s.signers)
      j["signers"].push_back({{"key_id", id}, {"entries", n}});
    j["untrusted"] = nlohmann::json::array();
    for (const auto& u : s.untrusted)
      j["untrusted"].push_back({{"path", u.path}, {"why", u.why}});
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& f : s.corrupt_files) std::cout << "corrupt " << f << "\n";
    for (const auto& u : s.untrusted)
      std::cout << "untrusted " << u.path << ": " << u.why << "\n";
    for (const auto& [id, n] : s.signers) {
      std::cout << fmt::format("{} entries {}\n", n,
                               id.empty() ? "unsigned" : "signed by key " + id);
    }
    std::cout << fmt::format(
        "{} entries checked, {} corrupt{}\n", s.entries, s.corrupt,
        c.settings.trusted_keys.empty()
            ? std::string()
            : fmt::format(", {} untrusted", s.untrusted.size()));
  }
  return s.corrupt > 0 || !s.untrusted.empty() ? kExitFailures : kExitOk;
}

int prune(const CacheCommand& c) {
  if (c.settings.max_bytes == 0) {
    throw usage_error("prune needs --max-bytes (or JITWARM_CACHE_MAX_BYTES)");
  }
  const CacheReport s = in_cache(c, [&] { return prune_cache(c.options); });
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["removed"] = s.removed;
    j["entries"] = s.entries;
    j["bytes"] = s.bytes;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "removed {} entries; {} entries, {} bytes remain\n", s.removed,
        s.entries, s.bytes);
  }
  return kExitOk;
}

int clear(const CacheCommand& c) {
  const CacheReport cleared =
      in_cache(c, [&] { return clear_cache(c.targets, c.options); });
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["removed"] = cleared.removed;
    j["removed_bytes"] = cleared.removed_bytes;
    j["targets"] = nlohmann::json::array();
    for (const auto& [target, n] : cleared.removed_by_target)
      j["targets"].push_back({{"target", target}, {"removed", n}});
    j["entries"] = cleared.entries;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& [target, n] : cleared.removed_by_target)
    std::cout << fmt::format("{}: {} entries removed\n", target, n);
  std::cout << fmt::format("removed {} entries ({} bytes) from {}; {} remain\n",
                           cleared.removed, cleared.removed_bytes,
                           c.settings.directory, cleared.entries);
  return kExitOk;
}

void print_bundle(const CacheBundleSummary& s, bool imported, bool json) {
  if (json) {
    nlohmann::json j;
    j["bundle"] = s.bundle;
    j["cache_dir"] = s.cache_dir;
    j["entries"] = s.entries;
    j["entry_bytes"] = s.entry_bytes;
    j["file_bytes"] = s.file_bytes;
    j["sha256"] = s.sha256;
    j["signer"] = s.signer;
    if (imported) {
      j["written"] = s.written;
      j["present"] = s.present;
    } else {
      j["skipped_corrupt"] = s.skipped_corrupt;
    }
    j["targets"] = nlohmann::json::array();
    for (const auto& [target, n] : s.targets)
      j["targets"].push_back({{"target", target}, {"entries", n}});
    j["manifest"] = nlohmann::json::array();
    for (const auto& e : s.manifest) {
      j["manifest"].push_back(
          {{"key", e.key}, {"target", e.target}, {"bytes", e.bytes}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  for (const auto& [target, n] : s.targets)
    std::cout << fmt::format("{}: {} entries\n", target, n);
  std::cout << fmt::format(
      "sha256 {}, {}\n", s.sha256,
      s.signer.empty() ? "unsigned" : "signed by key " + s.signer);
  if (imported) {
    std::cout << fmt::format(
        "imported {} entries from {} into {}: {} written, {} already there\n",
        s.entries, s.bundle, s.cache_dir, s.written, s.present);
  } else {
    std::cout << fmt::format(
        "exported {} entries ({} bytes, {} compressed) from {} to {}{}\n",
        s.entries, s.entry_bytes, s.file_bytes, s.cache_dir, s.bundle,
        s.skipped_corrupt > 0
            ? fmt::format("; {} corrupt entries left out", s.skipped_corrupt)
            : std::string());
  }
}

nlohmann::json explanation_json(const MissExplanation& e) {
  nlohmann::json j = {{"key", e.key},
                      {"would_hit", e.would_hit},
                      {"not_kept", e.not_kept},
                      {"neighbours", nlohmann::json::array()}};
  for (const MissNeighbour& n : e.neighbours) {
    nlohmann::json factors = nlohmann::json::array();
    for (const MissFactor& f : n.factors) {
      factors.push_back(
          {{"name", f.name}, {"wanted", f.wanted}, {"found", f.found}});
    }
    j["neighbours"].push_back({{"key", n.key},
                               {"target", n.target},
                               {"layer", n.system ? "system" : "user"},
                               {"factors", std::move(factors)}});
  }
  return j;
}

// why ARG: ARG is a manifest (a file that exists), whose keys are those
// `jitwarm warmup` would compile; else a key's text, looked up among the
// keys of --manifest (there is no parser of key text: a key is found where
// the warmup would make it). Exit 1 when a key would miss.
int why(const CacheCommand& c) {
  // A missing directory is the user's mistake, said before any plugin loads
  // (a runtime would make the directory).
  const CacheReport report =
      in_cache(c, [&] { return cache_directory_stats(c.options); });
  std::vector<std::string> manifests = c.manifests;
  const bool is_manifest =
      std::filesystem::exists(warmup_manifest_path(c.file));
  if (is_manifest) manifests.insert(manifests.begin(), c.file);
  if (manifests.empty()) {
    throw CommandError(
        kExitBadInput,
        fmt::format("'{}' is not a manifest file; to explain a key by its "
                    "text, name the manifest that makes it with --manifest",
                    c.file));
  }
  RuntimeOptions options = c.options;
  options.no_remote_cache = true;  // explain_miss reads the disk tiers only
  auto runtime = make_runtime(c.plugins, options);
  std::vector<CompileKey> keys = plan_for_targets(
      *runtime, load_requests(manifests), c.platform, c.targets, Shard{});
  if (!is_manifest) {
    std::erase_if(keys,
                  [&](const CompileKey& k) { return k.text() != c.file; });
    if (keys.empty()) {
      throw CommandError(kExitBadInput,
                         fmt::format("no key of {} has the text '{}' ('jitwarm "
                                     "warmup --dry-run' lists them)",
                                     fmt::join(manifests, ", "), c.file));
    }
  }
  const std::string fallback =
      cpu_fallback_note(*runtime, c.platform, c.targets, keys);
  std::size_t hits = 0;
  std::map<std::string, std::size_t> factors;  // factor -> keys it affects
  std::vector<MissExplanation> explained;
  for (const CompileKey& key : keys) {
    MissExplanation e = runtime->explain_miss(key);
    if (e.would_hit) {
      ++hits;
    } else if (!e.neighbours.empty()) {
      for (const MissFactor& f : e.neighbours.front().factors)
        ++factors[f.name];
    }
    explained.push_back(std::move(e));
  }
  const std::size_t misses = keys.size() - hits;
  if (c.json) {
    nlohmann::json j = settings_json(c.settings);
    j["entries"] = report.entries + report.system_entries;
    j["keys"] = keys.size();
    j["would_hit"] = hits;
    j["would_miss"] = misses;
    j["cpu_fallback"] = fallback;
    j["factors"] = nlohmann::json::array();
    for (const auto& [name, n] : factors)
      j["factors"].push_back({{"name", name}, {"keys", n}});
    j["results"] = nlohmann::json::array();
    for (const MissExplanation& e : explained)
      j["results"].push_back(explanation_json(e));
    std::cout << j.dump(2) << "\n";
  } else {
    for (const MissExplanation& e : explained) {
      if (!e.would_hit) std::cout << e.to_text() << "\n";
    }
    std::string counted;
    for (const auto& [name, n] : factors)
      counted +=
          fmt::format("{}{} ({} keys)", counted.empty() ? "" : ", ", name, n);
    std::cout << fmt::format(
        "{} keys: {} would hit, {} would miss{} ({})\n", keys.size(), hits,
        misses,
        counted.empty()
            ? std::string()
            : fmt::format("; nearest entries differ in {}", counted),
        c.settings.directory);
    if (!fallback.empty()) std::cout << "note: " << fallback << "\n";
  }
  return misses > 0 ? kExitFailures : kExitOk;
}

int keygen(const CacheCommand& c) {
  const CacheKeyPair pair = write_cache_key_pair(c.output);
  if (c.json) {
    std::cout << nlohmann::json{{"secret_key_file", pair.secret_key_file},
                                {"public_key_file", pair.public_key_file},
                                {"public_key", pair.public_key},
                                {"key_id", pair.key_id}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format(
        "wrote secret key {} (keep it on build machines) and public key {} "
        "(key id {}):\n{}\n",
        pair.secret_key_file, pair.public_key_file, pair.key_id,
        pair.public_key);
  }
  return kExitOk;
}

}  // namespace

int cmd_cache(const std::vector<std::string>& args) {
  po::options_description options("options");
  CacheCommand c;
  std::vector<std::string> targets;
  options.add_options()(
      "cache-dir,c", po::value(&c.cache_dir),
      "cache directory (default: $JITWARM_CACHE_DIR, else the per-user "
      "cache, $XDG_CACHE_HOME/jitwarm or ~/.cache/jitwarm)")(
      "target,t", po::value(&targets)->composing(),
      "list, clear, export: only this target's entries (cuda:sm_90, or the "
      "shorthand sm_90, gfx942); why: the target to expand manifests for, "
      "as warmup does; repeatable")(
      "output,o", po::value(&c.output),
      "export: the bundle file to write; keygen: the secret key file (and "
      "FILE.pub)")("sha256", po::value(&c.sha256),
                   "import: refuse the bundle unless its file has this "
                   "SHA-256 (hex)")(
      "max-bytes", po::value(&c.max_bytes),
      "prune: keep at most this much (e.g. 512M, 2G; "
      "default: $JITWARM_CACHE_MAX_BYTES)")(
      "manifest,m", po::value(&c.manifests)->composing(),
      "why: a warmup manifest whose keys are searched for a KEY's text; "
      "repeatable")("platform,p", po::value(&c.platform),
                    "why: the platform to expand manifests for, as warmup "
                    "does")("json", po::bool_switch(&c.json), "print as JSON");
  c.plugins.add_to(options);
  c.trust.add_to(options, TrustOptions::sign | TrustOptions::trust);
  const CommandLine command{
      "cache",
      "ACTION [BUNDLE|MANIFEST|KEY] [--cache-dir D] [--target T]... "
      "[--output FILE] [--max-bytes SIZE] [--manifest FILE]... [--json]",
      "stats: entries and bytes. list: every entry and a breakdown per\n"
      "target. verify: check every entry (exit 1 when one is corrupt).\n"
      "prune: evict the least recently used entries down to --max-bytes.\n"
      "clear: remove every entry (or those of --target). export: write the\n"
      "entries (of --target) into one checksummed, compressed bundle\n"
      "(--output). import BUNDLE: check every entry of a bundle, then add\n"
      "them all (a corrupt or truncated bundle adds none). why MANIFEST:\n"
      "for each key `jitwarm warmup` would compile, whether it would hit,\n"
      "and if not, the nearest entries of its kernel and what differs\n"
      "(exit 1 when a key would miss); why KEY: the same for the key of\n"
      "--manifest with that text. keygen: write a signing key pair\n"
      "(--output FILE and FILE.pub) for --signing-key and --trusted-key.",
      {{"ACTION",
        "stats, list, verify, prune, clear, export, import, why or keygen",
        &c.action},
       {"BUNDLE|MANIFEST|KEY",
        "import: the bundle file to read; why: a manifest, or a key's text",
        &c.file, false}}};
  po::variables_map vm;
  int code = kExitOk;
  if (!parse(command, options, args, vm, &code)) return code;
  if (std::find(cache_actions().begin(), cache_actions().end(), c.action) ==
      cache_actions().end()) {
    throw usage_error(fmt::format(
        "unknown action '{}': use {}{}", c.action,
        fmt::join(cache_actions(), ", "),
        did_you_mean(closest_spellings(c.action, cache_actions()))));
  }
  if (!c.file.empty() && c.action != "import" && c.action != "why") {
    throw usage_error(fmt::format(
        "unexpected argument '{}' (only 'cache import' and 'cache why' take "
        "one)",
        c.file));
  }
  if (c.action == "why" && c.file.empty())
    throw usage_error("missing MANIFEST or KEY (why: what to explain)");
  if ((!c.manifests.empty() || !c.platform.empty()) && c.action != "why")
    throw usage_error("--manifest and --platform are for 'cache why'");
  if (c.action == "import" && c.file.empty())
    throw usage_error("missing BUNDLE (import: the bundle file to read)");
  if (c.action == "export" && c.output.empty())
    throw usage_error("export needs --output FILE (the bundle to write)");
  if (c.action == "keygen" && c.output.empty())
    throw usage_error("keygen needs --output FILE (the secret key to write)");
  if (!c.output.empty() && c.action != "export" && c.action != "keygen")
    throw usage_error("--output is for 'cache export' and 'cache keygen'");
  if (!c.sha256.empty() && c.action != "import")
    throw usage_error("--sha256 is for 'cache import'");
  if (!c.trust.signing_key.empty() && c.action != "export")
    throw usage_error("--signing-key is for 'cache export'");
  if (c.action == "keygen") return keygen(c);
  if (!targets.empty() && c.action != "list" && c.action != "clear" &&
      c.action != "export" && c.action != "why") {
    throw usage_error(
        "--target is for 'cache list', 'clear', 'export' and 'why'");
  }
  for (const auto& t : targets) c.targets.push_back(expand_target(t));

  RuntimeOptions& cache_options = c.options;
  cache_options.cache_dir = c.cache_dir;
  c.trust.apply(cache_options);
  if (!c.max_bytes.empty())
    cache_options.cache_max_bytes = parse_byte_size(c.max_bytes);
  c.settings = resolve_cache_settings(cache_options);

  if (c.action == "stats") return stats(c);
  if (c.action == "list") return list(c);
  if (c.action == "verify") return verify(c);
  if (c.action == "prune") return prune(c);
  if (c.action == "clear") return clear(c);
  if (c.action == "why") return why(c);
  if (c.settings.directory.empty()) in_cache(c, [] {});  // says why
  if (c.action == "export") {
    try {
      print_bundle(export_cache_bundle(c.output, c.targets, cache_options),
                   false, c.json);
    } catch (const Error& e) {
      if (e.status() == JW_ERROR_NOT_FOUND)
        throw CommandError(kExitBadInput, e.what());
      throw;
    }
    return kExitOk;
  }
  // Like every cache action, an import makes no directory: a mistyped
  // --cache-dir would otherwise be filled unseen (the library's
  // import_cache_bundle makes one, as a runtime does).
  (void)in_cache(c, [&] { return cache_directory_stats(cache_options); });
  print_bundle(import_cache_bundle(c.file, cache_options, c.sha256), true,
               c.json);
  return kExitOk;
}

}  // namespace jitwarm::cli
