// The arguments of expand for three int32 buffers in device memory (output
// of 6 elements, x and cu_num_tokens of 3, on device 0 unless told), replacing
// 5 by 0:
// what test_cuda_launch.cpp (on a GPU) and test_cuda_launch_contexts.cpp
// (on the model driver) launch. Header-only: those tests link no test
// support library.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <cstdint>

namespace jitwarm::gpu_test {

class ExpandDeviceArgs {
 public:
  ExpandDeviceArgs(uint64_t output, uint64_t x, uint64_t cu_num_tokens,
                   int64_t max_num_tokens, int32_t device = 0)
      : output_(on_device(output, 6, device)),
        x_(on_device(x, 3, device)),
        cu_(on_device(cu_num_tokens, 3, device)),
        args_{arg(output_), arg(x_),    arg(cu_),
              arg_int(5),   arg_int(0), arg_int(max_num_tokens)} {}
  // The arguments point into this object.
  ExpandDeviceArgs(const ExpandDeviceArgs&) = delete;
  ExpandDeviceArgs& operator=(const ExpandDeviceArgs&) = delete;

  std::span<const jw_arg_value> args() const { return args_; }

 private:
  static jw_tensor on_device(uint64_t pointer, int64_t elements,
                             int32_t device) {
    const std::array<int64_t, 1> shape{elements};
    return make_tensor(reinterpret_cast<void*>(pointer), JW_DTYPE_INT32, shape,
                       device);
  }
  jw_tensor output_, x_, cu_;
  std::array<jw_arg_value, 6> args_;
};

}  // namespace jitwarm::gpu_test
