// The caches from Python (py_cache.cpp): cache settings as the core resolves
// them, bundles, and the cache options every call that picks a cache takes.
#pragma once

#include <pybind11/pybind11.h>
#include <jitwarm/jitwarm.hpp>

namespace jitwarm::python {

namespace py = pybind11;

// The keyword arguments of the cache options, into `options` (None leaves
// a field to the environment): cache_dir, no_cache_dir, system_cache_dir,
// cache_max_bytes (bytes), remote_cache,
// no_remote_cache, remote_timeout (seconds).
struct CacheArguments {
  py::object cache_dir = py::none(), no_cache_dir = py::none(),
             system_cache_dir = py::none(), cache_max_bytes = py::none(),
             remote_cache = py::none(), no_remote_cache = py::none(),
             remote_timeout = py::none();
  void apply(RuntimeOptions& options) const;
};

void bind_cache(py::module_& m);

}  // namespace jitwarm::python
