// jitwarm.Runtime and the objects it reports (py_runtime.cpp), its warmup
// methods (py_runtime_warmup.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <jitwarm/jitwarm.hpp>

namespace jitwarm::python {

namespace py = pybind11;

void bind_runtime(py::module_& m);

// Runtime._warmup, warmup_plan and _warmup_keys, on the class bind_runtime
// made.
void bind_runtime_warmup(py::class_<Runtime>& runtime);

}  // namespace jitwarm::python
