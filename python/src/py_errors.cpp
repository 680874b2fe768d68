#include "py_errors.hpp"

#include <array>

namespace jitwarm::python {
namespace {

// One Python exception class per status, indexed by the status (set at
// import from jitwarm/_errors.py; the module keeps them alive).
std::array<PyObject*, JW_ERROR_INTERNAL + 1> g_error_classes{};
PyObject* g_base_error_class = nullptr;

// The Python error a callback raised on this thread, waiting for the
// binding that called the core to re-raise it. Plain pointers: the slot is
// only touched with the GIL held, and a thread never ends with one pending
// (call_core clears it).
struct PendingSlot {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
};
thread_local PendingSlot t_pending;

PyObject* class_for(jw_status status) {
  const int index = static_cast<int>(status);
  if (index > 0 && index < static_cast<int>(g_error_classes.size()) &&
      g_error_classes[index] != nullptr) {
    return g_error_classes[index];
  }
  return g_base_error_class;
}

std::string describe_current_python_error() {
  // The error is fetched, described and restored, so the caller still has it.
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = "an unknown Python error";
  if (type != nullptr) {
    const char* name = reinterpret_cast<PyTypeObject*>(type)->tp_name;
    text = name != nullptr ? name : "an exception";
    if (value != nullptr) {
      if (PyObject* s = PyObject_Str(value)) {
        if (const char* utf8 = PyUnicode_AsUTF8(s)) {
          if (*utf8 != '\0') text += std::string(": ") + utf8;
        }
        Py_DECREF(s);
      }
      PyErr_Clear();  // from str() or AsUTF8, if they failed
    }
  }
  PyErr_Restore(type, value, traceback);
  return text;
}

}  // namespace

void invalid(const std::string& message) {
  throw jitwarm::Error(JW_ERROR_INVALID_ARGUMENT, message);
}

void set_python_error(const jitwarm::Error& error) {
  PyObject* cls = class_for(error.status());
  py::object instance = py::reinterpret_steal<py::object>(PyObject_CallFunction(
      cls, "si", error.what(), static_cast<int>(error.status())));
  if (!instance) return;  // the call set its own error
  PyErr_SetObject(cls, instance.ptr());
}

PendingPythonError::PendingPythonError(jw_status status,
                                       const std::string& where)
    : jitwarm::Error(status,
                     where + " raised " + describe_current_python_error()) {
  clear_pending_python_error();
  PyErr_Fetch(&t_pending.type, &t_pending.value, &t_pending.traceback);
}

void clear_pending_python_error() {
  Py_CLEAR(t_pending.type);
  Py_CLEAR(t_pending.value);
  Py_CLEAR(t_pending.traceback);
}

void rethrow_pending_python_error() {
  if (t_pending.type == nullptr) return;
  PyErr_Restore(t_pending.type, t_pending.value, t_pending.traceback);
  t_pending = PendingSlot{};
  throw py::error_already_set();
}

void bind_errors(py::module_& m) {
  py::module_ errors = py::module_::import("jitwarm._errors");
  py::dict by_status = errors.attr("_CLASS_BY_STATUS");
  for (auto item : by_status) {
    const int status = item.first.cast<int>();
    if (status > 0 && status < static_cast<int>(g_error_classes.size())) {
      g_error_classes[status] = item.second.ptr();
    }
  }
  g_base_error_class = errors.attr("Error").ptr();
  // The module keeps the classes alive for the life of the interpreter.
  m.attr("_errors") = errors;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const jitwarm::Error& e) {
      set_python_error(e);
    }
  });
}

}  // namespace jitwarm::python
