#include "py_overrides.hpp"

#include <pybind11/stl.h>

#include <fmt/format.h>

#include <optional>

#include "py_callable.hpp"
#include "py_errors.hpp"
#include "py_kernel.hpp"
#include "py_values.hpp"

namespace jitwarm::python {
namespace {

// The stream of the launch whose Python override runs on this thread.
thread_local std::optional<void*> t_override_stream;

class StreamScope {
 public:
  explicit StreamScope(void* stream) : previous_(t_override_stream) {
    t_override_stream = stream;
  }
  ~StreamScope() { t_override_stream = previous_; }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  std::optional<void*> previous_;
};

py::object argument_to_python(const jw_arg_value& a, const std::string& where) {
  switch (a.kind) {
    case JW_VALUE_SCALAR: return scalar_to_python(a.value.scalar);
    case JW_VALUE_TENSOR:
      for (const LaunchContext* c = current_launch_context(); c != nullptr;
           c = c->previous) {
        if (c->args == nullptr) continue;
        if (PyObject* original = c->args->original(a.value.tensor))
          return py::reinterpret_borrow<py::object>(original);
      }
      throw jitwarm::Error(
          JW_ERROR_UNSUPPORTED,
          fmt::format("{} got a tensor that was not passed from Python (a "
                      "launch from C or C++); Python overrides take launches "
                      "from Python",
                      where));
    default: return py::none();
  }
}

struct RegistrationPy {
  RegistrationHandle handle;
};

}  // namespace

HostKernel python_host_kernel(const std::string& kernel_name,
                              const std::string& platform, py::handle fn,
                              std::vector<std::string> param_names,
                              const std::string& impl_name) {
  if (!PyCallable_Check(fn.ptr())) {
    throw jitwarm::Error(
        JW_ERROR_INVALID_ARGUMENT,
        fmt::format("register_kernels: the override of {} is "
                    "not callable ({})",
                    kernel_name, py::repr(fn).cast<std::string>()));
  }
  HostKernel k;
  k.platform = platform;
  k.impl_name = impl_name;
  k.param_names = param_names;
  const std::string where =
      fmt::format("the Python override '{}' of {}", impl_name, kernel_name);
  k.launch = [holder = hold_callable(fn), names = std::move(param_names),
              where](std::span<const jw_arg_value> args, void* stream) {
    if (PythonCallable::interpreter_finalizing()) {
      throw jitwarm::Error(JW_ERROR_LAUNCH_FAILED,
                           where + ": the Python interpreter is finalizing");
    }
    py::gil_scoped_acquire gil;
    StreamScope scope(stream);
    try {
      if (names.empty()) {
        py::tuple values(args.size());
        for (std::size_t i = 0; i < args.size(); ++i)
          values[i] = argument_to_python(args[i], where);
        holder->get()(*values);
      } else {
        py::dict values;
        for (std::size_t i = 0; i < args.size(); ++i)
          values[py::str(names[i])] = argument_to_python(args[i], where);
        holder->get()(**values);
      }
    } catch (py::error_already_set& e) {
      e.restore();
      throw PendingPythonError(JW_ERROR_LAUNCH_FAILED, where);
    }
  };
  return k;
}

void bind_overrides(py::module_& m) {
  py::class_<RegistrationPy>(m, "Registration", R"doc(
The overrides one register_kernels call made. release() (or leaving a `with`
block) removes them all and restores what each replaced.)doc")
      .def("release", [](RegistrationPy& r) { r.handle.release(); })
      .def_property_readonly(
          "active", [](const RegistrationPy& r) { return r.handle.active(); })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](RegistrationPy& r, py::args) {
        r.handle.release();
        return false;
      });
  m.def(
      "current_launch_stream",
      []() -> py::object {
        if (!t_override_stream) return py::none();
        return py::int_(reinterpret_cast<uintptr_t>(*t_override_stream));
      },
      R"doc(Inside a Python override: the stream handle of the launch that
called it (0 for the default stream). Outside one: None.)doc");
  m.def(
      "_make_registration",
      [](Runtime& runtime, py::list entries, const std::string& origin) {
        std::vector<KernelOverride> overrides;
        for (py::handle e : entries) {
          py::tuple t = py::reinterpret_borrow<py::tuple>(e);
          KernelOverride o;
          o.kernel_name = t[0].cast<std::string>();
          o.host = python_host_kernel(
              o.kernel_name, t[1].cast<std::string>(), t[2],
              t[3].cast<std::vector<std::string>>(), t[4].cast<std::string>());
          overrides.push_back(std::move(o));
        }
        return RegistrationPy{call_core([&] {
          return runtime.register_kernels(std::move(overrides), origin);
        })};
      },
      py::arg("runtime"), py::arg("entries"), py::arg("origin"));
}

}  // namespace jitwarm::python
