#include "py_kernel.hpp"

#include <pybind11/stl.h>
#include <structmember.h>

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <vector>

#include "py_errors.hpp"
#include "py_values.hpp"

namespace jitwarm::python {
namespace {

thread_local const LaunchContext* t_launch_context = nullptr;

// Makes `context` the innermost launch of this thread for its scope (a
// Python override may launch another kernel).
class LaunchScope {
 public:
  explicit LaunchScope(LaunchContext& context) {
    context.previous = t_launch_context;
    t_launch_context = &context;
    context_ = &context;
  }
  ~LaunchScope() { t_launch_context = context_->previous; }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  LaunchContext* context_;
};

// What a Kernel object holds: the handle, the launch options bound by on(),
// and the schema's parameter names (interned, compared by pointer first).
struct KernelState {
  explicit KernelState(KernelHandle h) : handle(std::move(h)) {
    // The registry keeps a schema for its life; the handle keeps the
    // registry.
    schema = &handle.schema();
    for (const ParamDesc& p : schema->params()) {
      PyObject* name = PyUnicode_FromStringAndSize(
          p.name.data(), static_cast<Py_ssize_t>(p.name.size()));
      if (name == nullptr) throw py::error_already_set();
      PyUnicode_InternInPlace(&name);
      names.push_back(py::reinterpret_steal<py::object>(name));
    }
  }
  KernelHandle handle;
  const KernelSchema* schema = nullptr;
  std::vector<py::object> names;
  LaunchOptions options;
  bool has_platform = false;
  bool has_device = false;
  bool has_stream = false;
};

struct KernelObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  KernelState* state;
};

PyTypeObject* g_kernel_type = nullptr;

KernelState& state_of(PyObject* self) {
  return *reinterpret_cast<KernelObject*>(self)->state;
}

std::string parameter_list(const KernelSchema& schema) {
  std::string out;
  for (const ParamDesc& p : schema.params())
    out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

std::size_t index_of_keyword(const KernelState& k, PyObject* keyword) {
  for (std::size_t i = 0; i < k.names.size(); ++i) {
    if (k.names[i].ptr() == keyword) return i;
  }
  for (std::size_t i = 0; i < k.names.size(); ++i) {
    const int equal = PyUnicode_Compare(k.names[i].ptr(), keyword);
    if (equal == 0) return i;
    if (equal == -1 && PyErr_Occurred()) throw py::error_already_set();
  }
  invalid(
      fmt::format("{}: unexpected argument name '{}'; the parameters are: {}",
                  k.schema->name(), py::str(keyword).cast<std::string>(),
                  parameter_list(*k.schema)));
}

// Converts the call's arguments (positional in schema order, then by name)
// into `args`; a gap before the last given argument takes the parameter's
// default, and the core reports missing trailing ones.
void collect(const KernelState& k, PyObject* const* argv, std::size_t nargs,
             PyObject* kwnames, LaunchArgs& args) {
  const auto& params = k.schema->params();
  const std::string& kernel = k.schema->name();
  if (nargs > params.size()) {
    invalid(fmt::format("{}: takes {} arguments, got {}", kernel, params.size(),
                        nargs));
  }
  const std::size_t nkw =
      kwnames != nullptr ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames))
                         : 0;
  if (nkw > LaunchArgs::kMaxArgs) {
    invalid(fmt::format("{}: a launch takes at most {} arguments, got {}",
                        kernel, LaunchArgs::kMaxArgs, nargs + nkw));
  }
  std::size_t count = nargs;
  std::size_t kw_index[LaunchArgs::kMaxArgs];
  for (std::size_t j = 0; j < nkw; ++j) {
    kw_index[j] = index_of_keyword(k, PyTuple_GET_ITEM(kwnames, j));
    if (kw_index[j] < nargs) {
      invalid(fmt::format("{}: argument '{}' given by position and by name",
                          kernel, params[kw_index[j]].name));
    }
    count = std::max(count, kw_index[j] + 1);
  }
  args.resize(count);
  const void* stream = k.has_stream ? k.options.stream : nullptr;
  const int32_t device = k.has_device ? k.options.device : -1;
  uint64_t given = 0;
  for (std::size_t i = 0; i < nargs; ++i) {
    args.set(i, argv[i], kernel, params[i].name, k.has_stream,
             const_cast<void*>(stream), device);
    given |= uint64_t{1} << i;
  }
  for (std::size_t j = 0; j < nkw; ++j) {
    const std::size_t i = kw_index[j];
    if ((given & (uint64_t{1} << i)) != 0) {
      invalid(
          fmt::format("{}: argument '{}' given twice", kernel, params[i].name));
    }
    args.set(i, argv[nargs + j], kernel, params[i].name, k.has_stream,
             const_cast<void*>(stream), device);
    given |= uint64_t{1} << i;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if ((given & (uint64_t{1} << i)) != 0) continue;
    if (!params[i].has_flag(JW_PARAM_HAS_DEFAULT)) {
      invalid(fmt::format("{}: missing argument '{}'", kernel, params[i].name));
    }
    args.set_default(i, params[i].default_value);
  }
}

// The launch options for these arguments: what on() bound, else the
// tensors' device, their stream (torch's current stream, a
// __cuda_array_interface__ stream), and the cpu platform when every tensor
// is in host memory.
LaunchOptions options_for(const KernelState& k, LaunchArgs& args) {
  LaunchOptions options = k.options;
  if (!k.has_platform && args.device() < 0 && args.has_host_tensors())
    options.platform = "cpu";
  if (!k.has_device) options.device = args.device() >= 0 ? args.device() : 0;
  if (!k.has_stream) {
    finish_stream_hint(args);
    if (args.has_stream_hint()) options.stream = args.stream_hint();
  }
  return options;
}

// Turns what a body throws into a Python error; returns nullptr then.
template <typename Body>
PyObject* guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const jitwarm::Error& e) {
    set_python_error(e);
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* kernel_vectorcall(PyObject* self, PyObject* const* argv,
                            size_t nargsf, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    const KernelState& k = state_of(self);
    LaunchArgs args;
    collect(k, argv, static_cast<std::size_t>(PyVectorcall_NARGS(nargsf)),
            kwnames, args);
    const LaunchOptions options = options_for(k, args);
    LaunchContext context;
    context.args = &args;
    LaunchScope scope(context);
    call_core([&] { k.handle.launch(args.values(), options); });
    Py_RETURN_NONE;
  });
}

PyObject* kernel_key_for(PyObject* self, PyObject* const* argv,
                         Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    const KernelState& k = state_of(self);
    LaunchArgs args;
    collect(k, argv, static_cast<std::size_t>(nargs), kwnames, args);
    const LaunchOptions options = options_for(k, args);
    return py::cast(call_core([&] {
             return k.handle.key_for(args.values(), options);
           }))
        .release()
        .ptr();
  });
}

// Runtime::tune of this kernel on these arguments (real device tensors),
// with the default TuneOptions and the launch options a launch would use.
PyObject* kernel_tune(PyObject* self, PyObject* const* argv, Py_ssize_t nargs,
                      PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    const KernelState& k = state_of(self);
    LaunchArgs args;
    collect(k, argv, static_cast<std::size_t>(nargs), kwnames, args);
    jitwarm::TuneOptions options;
    options.launch = options_for(k, args);
    LaunchContext context;
    context.args = &args;
    LaunchScope scope(context);
    return py::cast(
               call_core([&] { return k.handle.tune(args.values(), options); }))
        .release()
        .ptr();
  });
}

// A stream given as an int, an object with .cuda_stream (torch.cuda.Stream)
// or with __cuda_stream__() (the stream protocol: (version, handle)).
void* stream_from(py::handle stream) {
  py::object handle;
  if (PyLong_Check(stream.ptr())) {
    handle = py::reinterpret_borrow<py::object>(stream);
  } else if (py::hasattr(stream, "__cuda_stream__")) {
    handle = py::tuple(stream.attr("__cuda_stream__")())[1];
  } else if (py::hasattr(stream, "cuda_stream")) {
    handle = stream.attr("cuda_stream");
  } else {
    invalid(fmt::format(
        "stream {} is not an int, a torch.cuda.Stream or an object with "
        "__cuda_stream__",
        py::repr(stream).cast<std::string>()));
  }
  void* p = PyLong_AsVoidPtr(handle.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
  return p;
}

PyObject* kernel_on(PyObject* self, PyObject* args, PyObject* kwargs) {
  return guarded([&]() -> PyObject* {
    static const char* keywords[] = {"platform", "device", "stream", nullptr};
    PyObject* platform = Py_None;
    PyObject* device = Py_None;
    PyObject* stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO:on",
                                     const_cast<char**>(keywords), &platform,
                                     &device, &stream)) {
      return nullptr;
    }
    const KernelState& k = state_of(self);
    auto state = std::make_unique<KernelState>(k);
    if (platform != Py_None) {
      state->options.platform = py::cast<std::string>(platform);
      state->has_platform = true;
    }
    if (device != Py_None) {
      state->options.device = py::cast<int32_t>(device);
      state->has_device = true;
    }
    if (stream != Py_None) {
      state->options.stream = stream_from(stream);
      state->has_stream = true;
    }
    PyObject* obj = g_kernel_type->tp_alloc(g_kernel_type, 0);
    if (obj == nullptr) return nullptr;
    auto* ko = reinterpret_cast<KernelObject*>(obj);
    ko->vectorcall = kernel_vectorcall;
    ko->state = state.release();
    return obj;
  });
}

void kernel_dealloc(PyObject* self) {
  auto* k = reinterpret_cast<KernelObject*>(self);
  delete k->state;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* kernel_repr(PyObject* self) {
  return guarded([&]() -> PyObject* {
    const KernelState& k = state_of(self);
    std::string bound;
    if (k.has_platform) bound += ", platform='" + k.options.platform + "'";
    if (k.has_device) bound += fmt::format(", device={}", k.options.device);
    if (k.has_stream)
      bound += fmt::format(", stream={:#x}",
                           reinterpret_cast<uintptr_t>(k.options.stream));
    return py::str(
               fmt::format("<jitwarm.Kernel '{}'{}>", k.handle.name(), bound))
        .release()
        .ptr();
  });
}

PyObject* kernel_get_name(PyObject* self, void*) {
  return guarded([&]() -> PyObject* {
    return py::str(state_of(self).handle.name()).release().ptr();
  });
}

PyObject* kernel_get_schema(PyObject* self, void*) {
  return guarded([&]() -> PyObject* {
    return py::cast(*state_of(self).schema, py::return_value_policy::copy)
        .release()
        .ptr();
  });
}

PyObject* kernel_get_option(PyObject* self, void* which) {
  return guarded([&]() -> PyObject* {
    const KernelState& k = state_of(self);
    const auto field = reinterpret_cast<uintptr_t>(which);
    if (field == 0)
      return k.has_platform ? py::str(k.options.platform).release().ptr()
                            : py::none().release().ptr();
    if (field == 1)
      return k.has_device ? py::int_(k.options.device).release().ptr()
                          : py::none().release().ptr();
    return k.has_stream
               ? py::int_(reinterpret_cast<uintptr_t>(k.options.stream))
                     .release()
                     .ptr()
               : py::none().release().ptr();
  });
}

PyMethodDef kernel_methods[] = {
    {"key_for",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(kernel_key_for)),
     METH_FASTCALL | METH_KEYWORDS,
     "key_for(*args, **kwargs) -> CompileKey\n--\n\nThe compile key a launch "
     "with these arguments would use (WarmupTensor arguments allowed)."},
    {"tune",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(kernel_tune)),
     METH_FASTCALL | METH_KEYWORDS,
     "tune(*args, **kwargs) -> TuneResult\n--\n\nBenchmarks every candidate "
     "config of the key these arguments (device tensors) launch, keeps the "
     "fastest and stores it for the device's kind (docs/tuning.md)."},
    {"on",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(kernel_on)),
     METH_VARARGS | METH_KEYWORDS,
     "on(platform=None, device=None, stream=None) -> Kernel\n--\n\nThis "
     "kernel with launch options bound: a platform name, a device index, a "
     "stream (an int handle, a torch.cuda.Stream or an object with "
     "__cuda_stream__). Unbound options come from the tensors."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kernel_getset[] = {
    {"name", kernel_get_name, nullptr, "The kernel's fully qualified name.",
     nullptr},
    {"schema", kernel_get_schema, nullptr, "The kernel's schema.", nullptr},
    {"platform", kernel_get_option, nullptr,
     "The platform bound by on(), or None.", reinterpret_cast<void*>(0)},
    {"device", kernel_get_option, nullptr, "The device bound by on(), or None.",
     reinterpret_cast<void*>(1)},
    {"stream", kernel_get_option, nullptr,
     "The stream handle bound by on(), or None.", reinterpret_cast<void*>(2)},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET,
     static_cast<Py_ssize_t>(offsetof(KernelObject, vectorcall)), READONLY,
     nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

const LaunchContext* current_launch_context() {
  return t_launch_context;
}

py::object make_kernel(KernelHandle handle) {
  auto state = std::make_unique<KernelState>(std::move(handle));
  PyObject* obj = g_kernel_type->tp_alloc(g_kernel_type, 0);
  if (obj == nullptr) throw py::error_already_set();
  auto* k = reinterpret_cast<KernelObject*>(obj);
  k->vectorcall = kernel_vectorcall;
  k->state = state.release();
  return py::reinterpret_steal<py::object>(obj);
}

void bind_kernel(py::module_& m) {
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(kernel_dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(kernel_repr)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_methods, kernel_methods},
      {Py_tp_getset, kernel_getset},
      {Py_tp_members, kernel_members},
      {Py_tp_doc, const_cast<char*>(
                      "A kernel: call it to launch, with arguments by position "
                      "(schema order) or by parameter name.")},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      "jitwarm.Kernel",
      sizeof(KernelObject),
      0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
      slots,
  };
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw py::error_already_set();
  g_kernel_type = reinterpret_cast<PyTypeObject*>(type);
  m.attr("Kernel") = py::reinterpret_steal<py::object>(type);
  Py_INCREF(type);  // g_kernel_type: for the life of the interpreter
}

}  // namespace jitwarm::python
