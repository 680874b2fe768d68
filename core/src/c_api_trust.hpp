// The C ABI's trust settings (jitwarm.h, jw_runtime_options' fields
// appended with "Trust"), for c_api_support.cpp's one reading of the
// options.
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/jitwarm.hpp>

namespace jitwarm::detail {

// Sets `options`' signing key, trusted keys and remote cache mode from the
// caller's struct (already read to its full size: zeros beyond the
// caller's). Throws Error(JW_ERROR_INVALID_ARGUMENT) for a null key in the
// list or an unknown mode.
void apply_trust_options(const jw_runtime_options& c, RuntimeOptions& options);

}  // namespace jitwarm::detail
