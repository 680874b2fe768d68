// Warmup requests from Python: jitwarm.WarmupRequest (python/jitwarm) into
// jitwarm::WarmupRequest. Axis values follow the manifest's (docs/warmup.md):
// a value or a list; ranges (Python range objects); tensors as a dtype, a
// WarmupTensor or a table {"dtype": ..., "aligned": ..., "strides": ...}
// whose fields may be lists (their product is taken); zipped groups;
// exclusions; and a Python filter that sees each combination as a dict.
#pragma once

#include <pybind11/pybind11.h>

#include <jitwarm/jitwarm.hpp>

#include <vector>

namespace jitwarm::python {

namespace py = pybind11;

WarmupRequest request_from(py::handle request);
std::vector<WarmupRequest> requests_from(py::handle requests);
// A warmup value as Python sees it (a filter's argument).
py::object warmup_value_to_python(const WarmupValue& value);

void bind_warmup(py::module_& m);

}  // namespace jitwarm::python
