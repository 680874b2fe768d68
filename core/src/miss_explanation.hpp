// Why a key misses the persistent cache: the entries of its kernel on its
// platform that the disk cache (and its system layer) holds, each compared
// with the key, and what differs (Runtime::explain_miss, `jitwarm cache
// why`, and warmup's one warning about near misses).
//
// * It reads entries (DiskCache::for_each_entry) and compares; it never
//   compiles, writes or removes an entry, and never asks a plugin anything:
//   the key's fingerprint comes from the caller (key_fingerprint).
// * Factors come from two places only: the key encoding (target,
//   implementation, each parameter by name) and the fingerprint text,
//   compared line by line. A fingerprint whose lines after the first are
//   all "label: value" (the GPU plugins') is compared by label, its first
//   line being the format (the jitwarm version that wrote it); any other is
//   compared line by line as "fingerprint line".
// * A fingerprint spells its target too (the GPU plugins' target line, and
//   options such as --gpu-architecture=sm_90): when the target is a factor,
//   a fingerprint factor whose values differ only by the target's name
//   ("sm_90" for "cuda:sm_90") is that same factor and is not named again.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "disk_cache.hpp"

namespace jitwarm::detail {

// What sets an entry's fingerprint apart from a key's.
std::vector<MissFactor> fingerprint_factors(std::string_view wanted,
                                            std::string_view found);
// What sets an entry's key apart from `wanted`: target, implementation and
// parameters (by name).
std::vector<MissFactor> key_factors(const CompileKey& wanted,
                                    const CompileKey& found);

// `key` (with the fingerprint its implementation gives) against every
// entry of `disk`, its system layer included. would_hit when its entry is
// there.
MissExplanation explain_against(const CompileKey& key,
                                std::string_view fingerprint,
                                const DiskCache& disk);

// Keys a warmup compiled whose entry has a near neighbour: an entry of the
// same specialization (parameters alike) that differs in fingerprint,
// target or implementation only, i.e. one that would have served the key
// had one setting matched.
struct NearMisses {
  std::size_t keys = 0;                        // keys with a near neighbour
  std::map<std::string, std::size_t> factors;  // factor -> keys it set apart
  std::string example;  // one key, with its neighbour's factors
  // One line: how many, which factors (with counts), the example.
  std::string warning(std::size_t compiled) const;
};
struct CompiledKey {
  const CompileKey* key;
  std::string fingerprint;
};
NearMisses near_misses(const std::vector<CompiledKey>& compiled,
                       const DiskCache& disk);

}  // namespace jitwarm::detail
