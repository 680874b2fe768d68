// Why a key misses (miss_explanation.hpp): factors from the key encoding
// and from the fingerprint text, and the entries of a disk cache ranked by
// how many factors set them apart.
#include "miss_explanation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace jitwarm::detail {
namespace {

constexpr std::string_view kNone = "(none)";
constexpr std::string_view kParameter = "parameter ";

std::string_view platform_of(std::string_view target) {
  return target.substr(0, target.find(':'));
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// The "label: value" lines after the first, each as (factor, value): a
// header's factor names the header ("header: <name> xxh128 <hash>" ->
// "header <name>"), every other label is its own factor name. nullopt
// when a line has another shape, or there is no such line.
using Labelled = std::vector<std::pair<std::string, std::string_view>>;
std::optional<Labelled> labelled_lines(
    const std::vector<std::string_view>& lines) {
  if (lines.size() < 2) return std::nullopt;
  Labelled out;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const std::size_t colon = line.find(": ");
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    std::string factor(line.substr(0, colon));
    std::string_view value = line.substr(colon + 2);
    if (factor == "header") {
      const std::size_t space = value.find(' ');
      factor += ' ';
      factor += value.substr(0, space);
      value = space == std::string_view::npos ? std::string_view()
                                              : value.substr(space + 1);
    }
    out.emplace_back(std::move(factor), value);
  }
  return out;
}

std::string_view value_of(const Labelled& lines, std::string_view factor) {
  for (const auto& [name, value] : lines) {
    if (name == factor) return value;
  }
  return kNone;
}

bool has_factor(const std::vector<MissFactor>& factors, std::string_view name) {
  return std::any_of(factors.begin(), factors.end(),
                     [&](const MissFactor& f) { return f.name == name; });
}

bool differs_in_parameters(const std::vector<MissFactor>& factors) {
  return std::any_of(factors.begin(), factors.end(), [](const MissFactor& f) {
    return f.name.starts_with(kParameter);
  });
}

// "cuda:sm_90" -> "sm_90": a target's name as its platform's compiler
// options and fingerprints spell it.
std::string_view target_name(std::string_view target) {
  const std::size_t colon = target.find(':');
  return colon == std::string_view::npos ? target : target.substr(colon + 1);
}

// Whether `f`'s found value, with every `found_target` in it spelled
// `wanted_target`, is its wanted value: a line that differs only because
// the target does.
bool differs_by_target_only(const MissFactor& f, std::string_view wanted_target,
                            std::string_view found_target) {
  if (found_target.empty()) return false;
  std::string found = f.found;
  for (std::size_t at = found.find(found_target); at != std::string::npos;
       at = found.find(found_target, at + wanted_target.size())) {
    found.replace(at, found_target.size(), wanted_target);
  }
  return found == f.wanted;
}

// Everything that sets (found, found_fingerprint) apart from the key: the
// key's factors first; a fingerprint factor the key already names (its
// target, its implementation) is not repeated, nor one that differs only
// because the target does (the top comment says why).
std::vector<MissFactor> factors_between(const CompileKey& key,
                                        std::string_view fingerprint,
                                        const EntryIdentity& found) {
  std::vector<MissFactor> factors = key_factors(key, found.key);
  const bool other_target = key.target() != found.key.target();
  for (MissFactor& f : fingerprint_factors(fingerprint, found.fingerprint)) {
    if (has_factor(factors, f.name)) continue;
    if (other_target &&
        differs_by_target_only(f, target_name(key.target()),
                               target_name(found.key.target()))) {
      continue;
    }
    factors.push_back(std::move(f));
  }
  return factors;
}

}  // namespace

std::vector<MissFactor> fingerprint_factors(std::string_view wanted,
                                            std::string_view found) {
  std::vector<MissFactor> factors;
  if (wanted == found) return factors;
  const std::vector<std::string_view> a = lines_of(wanted);
  const std::vector<std::string_view> b = lines_of(found);
  const std::optional<Labelled> la = labelled_lines(a);
  const std::optional<Labelled> lb = labelled_lines(b);
  if (la && lb) {
    if (a.front() != b.front()) {
      factors.push_back(
          {"jitwarm version", std::string(a.front()), std::string(b.front())});
    }
    for (const auto& [name, value] : *la) {
      const std::string_view other = value_of(*lb, name);
      if (value != other && !has_factor(factors, name))
        factors.push_back({name, std::string(value), std::string(other)});
    }
    for (const auto& [name, value] : *lb) {
      if (value_of(*la, name) == kNone && !has_factor(factors, name))
        factors.push_back({name, std::string(kNone), std::string(value)});
    }
    return factors;
  }
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string_view x = i < a.size() ? a[i] : kNone;
    const std::string_view y = i < b.size() ? b[i] : kNone;
    if (x != y)
      factors.push_back({"fingerprint line", std::string(x), std::string(y)});
  }
  if (factors.empty()) {
    // The same lines, other bytes (a trailing newline).
    factors.push_back(
        {"fingerprint line", std::string(wanted), std::string(found)});
  }
  return factors;
}

std::vector<MissFactor> key_factors(const CompileKey& wanted,
                                    const CompileKey& found) {
  std::vector<MissFactor> factors;
  if (wanted.target() != found.target())
    factors.push_back({"target", wanted.target(), found.target()});
  if (wanted.impl_name() != found.impl_name())
    factors.push_back(
        {"implementation", wanted.impl_name(), found.impl_name()});
  for (const ParamSpec& p : wanted.params()) {
    const ParamSpec* q = found.find_param(p.name);
    if (q == nullptr) {
      factors.push_back(
          {std::string(kParameter) + p.name, p.text(), std::string(kNone)});
    } else if (!(p == *q)) {
      factors.push_back(
          {std::string(kParameter) + p.name, p.text(), q->text()});
    }
  }
  for (const ParamSpec& q : found.params()) {
    if (wanted.find_param(q.name) == nullptr) {
      factors.push_back(
          {std::string(kParameter) + q.name, std::string(kNone), q.text()});
    }
  }
  return factors;
}

MissExplanation explain_against(const CompileKey& key,
                                std::string_view fingerprint,
                                const DiskCache& disk) {
  MissExplanation explanation;
  explanation.key = key.text();
  const std::string_view platform = platform_of(key.target());
  std::vector<MissNeighbour> neighbours;
  disk.for_each_entry(
      [&](const FoundEntry& entry) {
        if (!entry.identity) return;
        ++explanation.entries;
        const CompileKey& found = entry.identity->key;
        if (found.kernel_name() != key.kernel_name() ||
            platform_of(found.target()) != platform) {
          return;
        }
        if (found.encoding() == key.encoding() &&
            entry.identity->fingerprint == fingerprint) {
          // The very entry, unless the runtime's trusted keys refuse it.
          std::string why;
          const std::optional<ParsedEntry> parsed =
              parse_entry(entry.content, &why);
          if (!parsed || !check_entry_signature(*parsed, disk.trust(), &why)) {
            explanation.would_hit = true;
            return;
          }
          neighbours.push_back(
              {found.text(),
               found.target(),
               entry.system,
               {MissFactor{"signature", "one of a trusted key", why}}});
          return;
        }
        neighbours.push_back(
            {found.text(), found.target(), entry.system,
             factors_between(key, fingerprint, *entry.identity)});
      },
      /*with_system=*/true);
  if (explanation.would_hit) return explanation;
  std::sort(neighbours.begin(), neighbours.end(),
            [&](const MissNeighbour& a, const MissNeighbour& b) {
              if (a.factors.size() != b.factors.size())
                return a.factors.size() < b.factors.size();
              // The key's own entry, refused for its signature, first.
              const bool a_own = a.key == key.text(),
                         b_own = b.key == key.text();
              if (a_own != b_own) return a_own;
              return std::tie(a.key, a.system) < std::tie(b.key, b.system);
            });
  if (neighbours.size() > MissExplanation::kMaxNeighbours)
    neighbours.resize(MissExplanation::kMaxNeighbours);
  explanation.neighbours = std::move(neighbours);
  return explanation;
}

std::string NearMisses::warning(std::size_t compiled) const {
  std::string counted;
  for (const auto& [factor, n] : factors) {
    if (!counted.empty()) counted += ", ";
    counted += fmt::format("{} ({} keys)", factor, n);
  }
  return fmt::format(
      "warmup compiled {} keys, {} of which had an entry in the cache that "
      "differs only in: {}; e.g. {} ('jitwarm cache why' explains a key)",
      compiled, keys, counted, example);
}

NearMisses near_misses(const std::vector<CompiledKey>& compiled,
                       const DiskCache& disk) {
  std::map<std::string_view, std::vector<std::size_t>> by_kernel;
  std::set<std::string> own;  // the entries this warmup wrote
  for (std::size_t i = 0; i < compiled.size(); ++i) {
    by_kernel[compiled[i].key->kernel_name()].push_back(i);
    own.insert(entry_name(*compiled[i].key, compiled[i].fingerprint));
  }
  std::vector<std::optional<std::vector<MissFactor>>> nearest(compiled.size());
  disk.for_each_entry(
      [&](const FoundEntry& entry) {
        if (!entry.identity || own.contains(entry.identity->name)) return;
        const auto of_kernel =
            by_kernel.find(entry.identity->key.kernel_name());
        if (of_kernel == by_kernel.end()) return;
        for (const std::size_t i : of_kernel->second) {
          const CompileKey& key = *compiled[i].key;
          if (platform_of(key.target()) !=
              platform_of(entry.identity->key.target())) {
            continue;
          }
          std::vector<MissFactor> factors =
              factors_between(key, compiled[i].fingerprint, *entry.identity);
          if (differs_in_parameters(factors)) continue;
          if (!nearest[i] || factors.size() < nearest[i]->size())
            nearest[i] = std::move(factors);
        }
      },
      /*with_system=*/true);
  NearMisses misses;
  for (std::size_t i = 0; i < compiled.size(); ++i) {
    if (!nearest[i]) continue;
    ++misses.keys;
    std::string names;
    for (const MissFactor& f : *nearest[i]) {
      ++misses.factors[f.name];
      if (!names.empty()) names += ", ";
      names += f.name;
    }
    if (misses.example.empty())
      misses.example = fmt::format("{} ({})", compiled[i].key->text(), names);
  }
  return misses;
}

}  // namespace jitwarm::detail

namespace jitwarm {

std::string MissExplanation::to_text() const {
  if (would_hit) return key + ": would hit";
  if (!not_kept.empty())
    return fmt::format("{}: would miss, not kept in the persistent cache ({})",
                       key, not_kept);
  if (neighbours.empty()) {
    return fmt::format(
        "{}: would miss: no entry of this kernel and target ({} entries in "
        "the cache)",
        key, entries);
  }
  std::string text = fmt::format(
      "{}: would miss; the nearest {} of this kernel:", key,
      neighbours.size() == 1 ? std::string("entry")
                             : fmt::format("{} entries", neighbours.size()));
  for (const MissNeighbour& n : neighbours) {
    text += fmt::format("\n  {}{}", n.key, n.system ? " (system)" : "");
    for (const MissFactor& f : n.factors) {
      text += fmt::format("\n    {}: wanted {}, found {}", f.name, f.wanted,
                          f.found);
    }
  }
  return text;
}

}  // namespace jitwarm
