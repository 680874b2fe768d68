// checked_pack: kernel arguments packed with every check a launch must not
// get wrong, against the key alone. The plugins trust the core's
// validation (docs/plugin-abi.md P12) and pack with ArgumentPacking
// (launch_plan.hpp); this is the reference test_launch_plan.cpp holds that
// packing to, byte for byte, and the checks the core's validation stands
// in for.
#pragma once

#include <jitwarm/jitwarm.h>

#include "key_params.hpp"
#include "launch_plan.hpp"

#include <span>

namespace jitwarm::gpu_test {

// Packs `args` (schema order) for the key. Checks runtime tensors on one
// device, the key's dtypes, 16-byte alignment where the key promised it,
// integers that fit the key's type and class, constexprs equal to the
// key's. Throws JW_ERROR_INVALID_ARGUMENT naming the key and the parameter.
gpu::KernelArguments checked_pack(const gpu::KeyParams& key,
                                  std::span<const jw_arg_value> args);

}  // namespace jitwarm::gpu_test
