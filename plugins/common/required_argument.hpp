// require_argument: the check of a pointer or struct a C caller must pass,
// for the GPU layer's entry points (the C callbacks, prepare, launch).
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/error.hpp>

#include <string>

namespace jitwarm::gpu {

// Throws JW_ERROR_INVALID_ARGUMENT "<what> is missing" unless `condition`.
inline void require_argument(bool condition, const char* what) {
  if (!condition) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              std::string(what) + " is missing");
  }
}

}  // namespace jitwarm::gpu
