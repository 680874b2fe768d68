// register_kernels from Python: a Python callable as a kernel implementation
// (jitwarm::HostKernel). It is called on the launching thread with the
// launch's own Python objects (the tensors as they were passed, scalars as
// ints, floats and bools), by name when its parameter names are the
// schema's, else by position in schema order.
#pragma once

#include <pybind11/pybind11.h>

#include <jitwarm/jitwarm.hpp>

#include <string>
#include <vector>

namespace jitwarm::python {

namespace py = pybind11;

// `param_names`: the callable's parameter names (called by name) or empty
// (called by position); the core checks them against the schema.
HostKernel python_host_kernel(const std::string& kernel_name,
                              const std::string& platform, py::handle fn,
                              std::vector<std::string> param_names,
                              const std::string& impl_name);

void bind_overrides(py::module_& m);

}  // namespace jitwarm::python
