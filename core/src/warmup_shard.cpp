// Sharding a warmup plan across machines (jitwarm.hpp warmup_shard). Keys
// are dealt out in the order of their hashes rather than the plan's, so the
// shards do not depend on how the manifest orders its requests, and each
// shard gets a mix of kernels (a plan lists one kernel's keys together, and
// kernels differ in compile time).
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <numeric>

#include "errors.hpp"

namespace jitwarm {

std::vector<CompileKey> warmup_shard(const std::vector<CompileKey>& plan,
                                     unsigned shard, unsigned count) {
  if (count == 0 || shard == 0 || shard > count) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "shard {} of {}: shards are numbered 1 to their count", shard,
                 count);
  }
  std::vector<std::size_t> by_hash(plan.size());
  std::iota(by_hash.begin(), by_hash.end(), std::size_t{0});
  std::sort(by_hash.begin(), by_hash.end(), [&](std::size_t a, std::size_t b) {
    const Hash128 ha = plan[a].hash(), hb = plan[b].hash();
    if (ha.hi != hb.hi) return ha.hi < hb.hi;
    if (ha.lo != hb.lo) return ha.lo < hb.lo;
    return plan[a].encoding() < plan[b].encoding();  // a collision, still
  });
  std::vector<bool> mine(plan.size(), false);
  for (std::size_t rank = shard - 1; rank < by_hash.size(); rank += count)
    mine[by_hash[rank]] = true;
  std::vector<CompileKey> keys;
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (mine[i]) keys.push_back(plan[i]);
  return keys;
}

}  // namespace jitwarm
