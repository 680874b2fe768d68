// Trust from Python (py_trust.cpp; docs/python.md, "Trust"): signing keys,
// and the keyword arguments of the trust settings every call that reads or
// writes the cache takes.
#pragma once

#include <pybind11/pybind11.h>
#include <jitwarm/jitwarm.hpp>

namespace jitwarm::python {

namespace py = pybind11;

// signing_key (a path), trusted_keys (a key's text, a path, or a list of
// them), remote_cache_mode ("read-write" | "read-only"), into `options`;
// None leaves a field to the environment.
struct TrustArguments {
  py::object signing_key = py::none(), trusted_keys = py::none(),
             remote_cache_mode = py::none();
  void apply(RuntimeOptions& options) const;
};

void bind_trust(py::module_& m);

}  // namespace jitwarm::python
