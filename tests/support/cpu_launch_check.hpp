// A launch whose result is known, for tests that must see a right launch
// after a cache tier refused an entry: silu_and_mul on the CPU reference
// plugin over one row of x = 1, every output silu(1).
#pragma once

#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <array>
#include <cmath>
#include <vector>

namespace jitwarm::test {

inline void launch_silu_and_mul_and_check(Runtime& runtime) {
  constexpr int64_t h = 8;
  std::vector<float> x(2 * h, 1.0f), out(h, 0.0f);
  const std::array<int64_t, 2> x_shape{1, 2 * h}, out_shape{1, h};
  const jw_tensor xt = make_tensor(x.data(), JW_DTYPE_FLOAT32, x_shape);
  const jw_tensor ot = make_tensor(out.data(), JW_DTYPE_FLOAT32, out_shape);
  LaunchOptions cpu;
  cpu.platform = "cpu";
  runtime.kernel("vllm.model_executor.layers.activation.silu_and_mul")
      .launch({arg(ot), arg(xt), arg_int(1), arg_int(h)}, cpu);
  const float silu_1 = 1.0f / (1.0f + std::exp(-1.0f));
  for (const float v : out) CHECK(v == doctest::Approx(silu_1));
}

}  // namespace jitwarm::test
