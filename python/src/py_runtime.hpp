// jitwarm.Runtime and the objects it reports (py_runtime.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace jitwarm::python {

namespace py = pybind11;

void bind_runtime(py::module_& m);

}  // namespace jitwarm::python
