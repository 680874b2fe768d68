// A Python callable held by the core (an override, a warmup filter, a
// progress or log callback). The core may drop it on any thread, with or
// without the GIL, so the last reference is released with the GIL taken, and
// not at all once the interpreter is finalizing (then it is leaked, as
// CPython does with objects that outlive it).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

namespace jitwarm::python {

namespace py = pybind11;

class PythonCallable {
 public:
  explicit PythonCallable(py::handle fn) : fn_(fn.ptr()) { Py_INCREF(fn_); }
  ~PythonCallable() {
    if (!Py_IsInitialized() || interpreter_finalizing()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(fn_);
    PyGILState_Release(state);
  }
  PythonCallable(const PythonCallable&) = delete;
  PythonCallable& operator=(const PythonCallable&) = delete;

  // The callable; use it with the GIL held.
  py::handle get() const { return fn_; }

  static bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
  }

 private:
  PyObject* fn_;
};

inline std::shared_ptr<PythonCallable> hold_callable(py::handle fn) {
  return std::make_shared<PythonCallable>(fn);
}

}  // namespace jitwarm::python
