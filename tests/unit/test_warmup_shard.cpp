// warmup_shard: N shards of a plan are disjoint, together the plan, balanced
// to one key, in plan order, and the same whatever order the plan lists its
// keys in; shard numbers outside 1..N are refused.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <random>
#include <set>

using namespace jitwarm;

namespace {

std::vector<CompileKey> plan_of(int n) {
  std::vector<CompileKey> plan;
  for (int i = 0; i < n; ++i) {
    std::vector<ParamSpec> params(1);
    params[0].name = "BLOCK";
    params[0].kind = JW_PARAM_CONSTEXPR;
    params[0].constexpr_value = scalar_int(i);
    plan.emplace_back("ns.k", "impl", "cuda:sm_90", params);
  }
  return plan;
}

std::set<std::string> encodings(const std::vector<CompileKey>& keys) {
  std::set<std::string> out;
  for (const auto& k : keys) out.insert(k.encoding());
  return out;
}

}  // namespace

TEST_CASE(
    "given a plan cut into N shards, then they are disjoint, cover it, differ "
    "in size by at most one and keep plan order") {
  const std::vector<CompileKey> plan = plan_of(169);
  for (unsigned count : {1u, 2u, 3u, 8u, 169u, 200u}) {
    CAPTURE(count);
    std::set<std::string> all;
    std::size_t smallest = plan.size(), largest = 0, total = 0;
    for (unsigned shard = 1; shard <= count; ++shard) {
      const std::vector<CompileKey> part = warmup_shard(plan, shard, count);
      total += part.size();
      smallest = std::min(smallest, part.size());
      largest = std::max(largest, part.size());
      for (const auto& k : part) CHECK(all.insert(k.encoding()).second);
      // Plan order: the positions of its keys in the plan ascend.
      std::size_t last = 0;
      for (const auto& k : part) {
        const auto at = static_cast<std::size_t>(
            std::find(plan.begin(), plan.end(), k) - plan.begin());
        CHECK(at >= last);
        last = at;
      }
    }
    CHECK(total == plan.size());
    CHECK(all == encodings(plan));
    CHECK(largest - smallest <= 1);
  }
}

TEST_CASE(
    "given the same plan in another order, then every shard holds the same "
    "keys") {
  const std::vector<CompileKey> plan = plan_of(100);
  std::vector<CompileKey> shuffled = plan;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  for (unsigned shard = 1; shard <= 8; ++shard) {
    CHECK(encodings(warmup_shard(plan, shard, 8)) ==
          encodings(warmup_shard(shuffled, shard, 8)));
  }
}

TEST_CASE("given shard numbers outside 1..N, then they are refused") {
  const std::vector<CompileKey> plan = plan_of(3);
  for (const auto& [shard, count] :
       std::vector<std::pair<unsigned, unsigned>>{{0, 8}, {9, 8}, {1, 0}}) {
    CHECK_THROWS_WITH(warmup_shard(plan, shard, count),
                      doctest::Contains("numbered 1 to their count"));
  }
  CHECK(warmup_shard({}, 1, 4).empty());
}
