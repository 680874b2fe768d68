// jitwarm.Kernel: a kernel handle callable from Python. Calling it launches:
// arguments by position (schema order) or by parameter name, converted
// straight into jw_arg_value (py_values.hpp) and handed to
// KernelHandle::launch. It is a plain CPython type with vectorcall, so a
// launch builds no tuple, no dict and no string; the handle resolves the
// implementation through the registry at every launch, so an override is
// seen at once.
#pragma once

#include <pybind11/pybind11.h>

#include <jitwarm/jitwarm.hpp>

namespace jitwarm::python {

namespace py = pybind11;

class LaunchArgs;

void bind_kernel(py::module_& m);

// A new jitwarm.Kernel for `handle` (default launch options).
py::object make_kernel(KernelHandle handle);

// What a Python override may ask about the launch that called it.
struct LaunchContext {
  const LaunchArgs* args = nullptr;  // null when the launch came from C/C++
  const LaunchContext* previous = nullptr;
};
const LaunchContext* current_launch_context();

}  // namespace jitwarm::python
