// numbered_key(n): a distinct compile key per n (one constexpr parameter,
// BLOCK = n), for the cache tests that need many keys and no kernel behind
// them.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <string>
#include <vector>

namespace jitwarm::test {

inline CompileKey numbered_key(int n,
                               const std::string& target = "cuda:sm_90") {
  std::vector<ParamSpec> params(1);
  params[0].name = "BLOCK";
  params[0].kind = JW_PARAM_CONSTEXPR;
  params[0].constexpr_value = scalar_int(n);
  return CompileKey("ns.k", "impl", target, params);
}

}  // namespace jitwarm::test
