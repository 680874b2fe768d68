// Errors between the core and Python: jitwarm::Error becomes the Python
// exception of its status (jitwarm/_errors.py), carrying the status and the
// message; a Python exception raised inside a callback the core calls (an
// override, a warmup filter, a progress or log callback) travels through the
// core as a C++ exception and comes out as the original Python exception.
#pragma once

#include <pybind11/pybind11.h>

#include <jitwarm/jitwarm.hpp>

#include <exception>
#include <string>

namespace jitwarm::python {

namespace py = pybind11;

// Throws jitwarm::Error(JW_ERROR_INVALID_ARGUMENT): a bad argument from
// Python, reported as the core reports its own (a ValueError-like
// jitwarm exception carrying the status).
[[noreturn]] void invalid(const std::string& message);

// Loads jitwarm._errors and registers the exception translator. Called once,
// at import.
void bind_errors(py::module_& m);

// Sets the Python error for a jitwarm::Error (the calling thread holds the
// GIL). Used by the code paths that do not go through pybind11's translator
// (the Kernel type's vectorcall).
void set_python_error(const jitwarm::Error& error);

// A Python exception raised in a callback, held while the core unwinds. The
// core sees a jitwarm::Error (so its own guards and messages work); the
// binding that called into the core re-raises the original (rethrow_pending).
class PendingPythonError : public jitwarm::Error {
 public:
  // Takes the current Python error (the GIL is held).
  PendingPythonError(jw_status status, const std::string& where);
};

// Called right after a core call returns or throws, on the thread that made
// it, with the GIL held: when a callback of this call raised, restores that
// Python exception and throws py::error_already_set.
void rethrow_pending_python_error();
// Drops a pending error (a core call that swallowed the callback's error).
void clear_pending_python_error();

// Runs a core call that may call back into Python and translates what it
// throws, restoring a callback's original exception.
template <typename Body>
decltype(auto) call_core(Body&& body) {
  clear_pending_python_error();
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      clear_pending_python_error();
    } else {
      decltype(auto) result = body();
      clear_pending_python_error();
      return result;
    }
  } catch (const jitwarm::Error&) {
    rethrow_pending_python_error();
    throw;
  }
}

}  // namespace jitwarm::python
