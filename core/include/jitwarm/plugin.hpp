// jitwarm/plugin.hpp — the plugin SDK: everything a jitwarm plugin needs
// besides the C ABI itself (jitwarm.h), header-only, C++20.
//
// A plugin includes this (or the one header it needs) and never links
// libjitwarm: it talks to the core only through the host table it is given
// (docs/plugin-abi.md). docs/plugin-sdk.md shows a whole plugin and how to
// build one with Meson (pkg-config: jitwarm-plugin) or CMake
// (find_package(jitwarm), target jitwarm::plugin). The bundled plugins use
// these same headers.
//
//   plugin/error.hpp      PluginError, check_host
//   plugin/host.hpp       the host tables; log, set_error, append;
//                         JITWARM_DEFINE_PLUGIN_HOST_API()
//   plugin/guarded.hpp    guarded(): every exception becomes a jw_status
//   plugin/negotiate.hpp  answer_negotiation, register_with_host
//   plugin/raw_enum.hpp   raw_enum, known_enum: enums that came from C
//   plugin/dtype.hpp      the dtype table; kDtypeOf<T>
//   plugin/names.hpp      names of parameter kinds, scalar kinds, integer
//                         types and classes, dtype sets; parsing them
//   plugin/float16.hpp    numeric::Float16 / BFloat16, ulp distances
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/plugin/dtype.hpp>
#include <jitwarm/plugin/error.hpp>
#include <jitwarm/plugin/float16.hpp>
#include <jitwarm/plugin/guarded.hpp>
#include <jitwarm/plugin/host.hpp>
#include <jitwarm/plugin/names.hpp>
#include <jitwarm/plugin/negotiate.hpp>
#include <jitwarm/plugin/raw_enum.hpp>
