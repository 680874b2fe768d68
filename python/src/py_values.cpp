#include "py_values.hpp"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "py_errors.hpp"

namespace jitwarm::python {
namespace {

// Interned attribute names, made once.
struct Names {
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* stride = PyUnicode_InternFromString("stride");
  PyObject* get_device = PyUnicode_InternFromString("get_device");
  PyObject* cuda_array_interface =
      PyUnicode_InternFromString("__cuda_array_interface__");
  PyObject* dlpack = PyUnicode_InternFromString("__dlpack__");
  PyObject* dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  PyObject* stream = PyUnicode_InternFromString("stream");
  PyObject* torch = PyUnicode_InternFromString("torch");
};
const Names& names() {
  static const Names* n = new Names();  // lives as long as the interpreter
  return *n;
}

py::object module_if_loaded(const char* name) {
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* m = PyDict_GetItemString(modules, name);  // borrowed
  return m != nullptr ? py::reinterpret_borrow<py::object>(m) : py::object();
}

// ---------------------------------------------------------------------------
// dtypes
// ---------------------------------------------------------------------------

// torch and NumPy dtype objects are singletons: a few pointer comparisons
// replace a str() and a parse on the launch path.
struct DtypeCacheEntry {
  PyObject* object;  // a strong reference
  jw_dtype dtype;
};
std::array<DtypeCacheEntry, 32> g_dtype_cache{};
std::size_t g_dtype_cache_size = 0;

std::optional<jw_dtype> dtype_from_name(std::string_view text) {
  if (text.rfind("torch.", 0) == 0) text.remove_prefix(6);
  return jitwarm::parse_dtype(text);
}

jw_dtype dtype_from_uncached(py::handle obj) {
  if (py::isinstance<py::str>(obj)) {
    const std::string text = obj.cast<std::string>();
    if (auto d = dtype_from_name(text)) return *d;
    invalid(fmt::format(
        "unknown dtype '{}' (use bool, int8..int64, uint8..uint64, float16, "
        "bfloat16, float32, float64 or their short names)",
        text));
  }
  // A NumPy dtype (its name), a NumPy scalar type (through numpy.dtype), a
  // torch dtype (str() is "torch.float16").
  py::object numpy = module_if_loaded("numpy");
  if (numpy &&
      (py::isinstance(obj, numpy.attr("dtype")) ||
       (PyType_Check(obj.ptr()) &&
        PyObject_IsSubclass(obj.ptr(), numpy.attr("generic").ptr()) == 1))) {
    const std::string name =
        numpy.attr("dtype")(obj).attr("name").cast<std::string>();
    if (auto d = dtype_from_name(name)) return *d;
    invalid(fmt::format("NumPy dtype {} has no jitwarm dtype", name));
  }
  PyErr_Clear();
  const std::string text = py::str(obj).cast<std::string>();
  if (text.rfind("torch.", 0) == 0) {
    if (auto d = dtype_from_name(text)) return *d;
    invalid(fmt::format("torch dtype {} has no jitwarm dtype", text));
  }
  invalid(
      fmt::format("{} is not a dtype (give a name such as 'float16', a "
                  "NumPy dtype or a torch dtype)",
                  text));
}

jw_dtype dtype_from_cached(PyObject* obj) {
  for (std::size_t i = 0; i < g_dtype_cache_size; ++i) {
    if (g_dtype_cache[i].object == obj) return g_dtype_cache[i].dtype;
  }
  const jw_dtype d = dtype_from_uncached(obj);
  if (g_dtype_cache_size < g_dtype_cache.size()) {
    Py_INCREF(obj);
    g_dtype_cache[g_dtype_cache_size++] = DtypeCacheEntry{obj, d};
  }
  return d;
}

// A typestr of the array interfaces ("<f4", "|u1", "|b1") or a buffer
// format ("f", "<e", "?").
jw_dtype dtype_from_kind(char kind, std::size_t size, std::string_view what) {
  switch (kind) {
    case 'b':
      if (size == 1) return JW_DTYPE_BOOL;
      break;
    case 'i':
      switch (size) {
        case 1: return JW_DTYPE_INT8;
        case 2: return JW_DTYPE_INT16;
        case 4: return JW_DTYPE_INT32;
        case 8: return JW_DTYPE_INT64;
      }
      break;
    case 'u':
      switch (size) {
        case 1: return JW_DTYPE_UINT8;
        case 2: return JW_DTYPE_UINT16;
        case 4: return JW_DTYPE_UINT32;
        case 8: return JW_DTYPE_UINT64;
      }
      break;
    case 'f':
      switch (size) {
        case 2: return JW_DTYPE_FLOAT16;
        case 4: return JW_DTYPE_FLOAT32;
        case 8: return JW_DTYPE_FLOAT64;
      }
      break;
  }
  invalid(fmt::format("element type '{}' has no jitwarm dtype", what));
}

jw_dtype dtype_from_typestr(std::string_view typestr) {
  if (typestr.size() < 3 || typestr[0] == '>') {
    invalid(fmt::format(
        "__cuda_array_interface__ typestr '{}' is not a little-endian scalar",
        typestr));
  }
  std::size_t size = 0;
  for (char c : typestr.substr(2)) {
    if (c < '0' || c > '9') invalid(fmt::format("bad typestr '{}'", typestr));
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  return dtype_from_kind(typestr[1], size, typestr);
}

jw_dtype dtype_from_buffer_format(const char* format, Py_ssize_t itemsize) {
  std::string_view f = format != nullptr ? format : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) {
    f.remove_prefix(1);
  } else if (!f.empty() && (f[0] == '>' || f[0] == '!') && itemsize > 1) {
    invalid(fmt::format("buffer format '{}' is big-endian", format));
  }
  if (f.size() != 1)
    invalid(fmt::format("buffer format '{}' has no jitwarm dtype", format));
  const auto size = static_cast<std::size_t>(itemsize);
  switch (f[0]) {
    case '?': return dtype_from_kind('b', size, format);
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n': return dtype_from_kind('i', size, format);
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N': return dtype_from_kind('u', size, format);
    case 'e':
    case 'f':
    case 'd': return dtype_from_kind('f', size, format);
  }
  invalid(fmt::format("buffer format '{}' has no jitwarm dtype", format));
}

jw_dtype dtype_from_dlpack(DLDataType t) {
  if (t.lanes != 1)
    invalid("DLPack tensors with vector lanes are not supported");
  // kDLBool (6) is DLPack 0.8's; Debian's header is 0.6.
  constexpr uint8_t kDLBoolCode = 6;
  const std::size_t bytes = t.bits / 8u;
  switch (t.code) {
    case kDLInt: return dtype_from_kind('i', bytes, "DLPack int");
    case kDLUInt: return dtype_from_kind('u', bytes, "DLPack uint");
    case kDLFloat: return dtype_from_kind('f', bytes, "DLPack float");
    case kDLBfloat:
      if (t.bits == 16) return JW_DTYPE_BFLOAT16;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return JW_DTYPE_BOOL;
      break;
  }
  invalid(fmt::format("DLPack dtype (code {}, {} bits) has no jitwarm dtype",
                      t.code, t.bits));
}

// ---------------------------------------------------------------------------
// Integers
// ---------------------------------------------------------------------------
[[noreturn]] void overflow(PyObject* obj) {
  // The core's message for values it can hold (specialize_integer); the
  // same words for the ones beyond 128 bits, which only Python can make.
  unsigned char bytes[16];
  if (_PyLong_AsByteArray(reinterpret_cast<PyLongObject*>(obj), bytes, 16,
                          /*little_endian=*/1, /*is_signed=*/1) == 0) {
    __int128 value;
    std::memcpy(&value, bytes, sizeof value);
    jitwarm::specialize_integer(value);  // throws its overflow error
  }
  PyErr_Clear();
  invalid(fmt::format("integer {} overflows: it is outside [-2^63, 2^64)",
                      py::str(obj).cast<std::string>()));
}

jw_scalar int_scalar(PyObject* obj) {
  int is_overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(obj, &is_overflow);
  if (is_overflow == 0) {
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return jitwarm::scalar_int(v);
  }
  if (is_overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(obj);
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
      return jitwarm::scalar_uint(u);
    }
    PyErr_Clear();
  }
  overflow(obj);
}

// ---------------------------------------------------------------------------
// What a Python type is, decided once per type
// ---------------------------------------------------------------------------
enum class ValueKind {
  boolean,
  integer,
  floating,
  index,  // has __index__ (NumPy integers, ...)
  float_like,
  numpy_bool,
  torch_tensor,
  warmup_tensor,
  cuda_array_interface,
  buffer,
  dlpack,
  unsupported,
};

struct TypeCacheEntry {
  PyTypeObject* type;  // a strong reference
  ValueKind kind;
};
std::array<TypeCacheEntry, 32> g_type_cache{};
std::size_t g_type_cache_size = 0;

bool is_subclass_of(PyTypeObject* type, py::handle base) {
  if (!base || !PyType_Check(base.ptr())) return false;
  return PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(base.ptr()));
}

ValueKind classify(PyTypeObject* type) {
  if (PyType_IsSubtype(type, &PyBool_Type)) return ValueKind::boolean;
  if (PyType_IsSubtype(type, &PyLong_Type)) return ValueKind::integer;
  if (PyType_IsSubtype(type, &PyFloat_Type)) return ValueKind::floating;
  if (py::object torch = module_if_loaded("torch")) {
    if (is_subclass_of(type, torch.attr("Tensor")))
      return ValueKind::torch_tensor;
  }
  if (is_subclass_of(type, py::type::of<WarmupTensor>()))
    return ValueKind::warmup_tensor;
  if (py::object numpy = module_if_loaded("numpy")) {
    // NumPy scalars export a buffer too; they are numbers here.
    if (is_subclass_of(type, numpy.attr("bool_"))) return ValueKind::numpy_bool;
    if (is_subclass_of(type, numpy.attr("integer"))) return ValueKind::index;
    if (is_subclass_of(type, numpy.attr("floating")))
      return ValueKind::float_like;
  }
  PyObject* t = reinterpret_cast<PyObject*>(type);
  if (PyObject_HasAttr(t, names().cuda_array_interface))
    return ValueKind::cuda_array_interface;
  if (type->tp_as_buffer != nullptr && type->tp_as_buffer->bf_getbuffer)
    return ValueKind::buffer;
  if (PyObject_HasAttr(t, names().dlpack)) return ValueKind::dlpack;
  if (type->tp_as_number != nullptr && type->tp_as_number->nb_index)
    return ValueKind::index;
  if (type->tp_as_number != nullptr && type->tp_as_number->nb_float)
    return ValueKind::float_like;
  return ValueKind::unsupported;
}

ValueKind kind_of(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  for (std::size_t i = 0; i < g_type_cache_size; ++i) {
    if (g_type_cache[i].type == type) return g_type_cache[i].kind;
  }
  const ValueKind kind = classify(type);
  if (g_type_cache_size < g_type_cache.size()) {
    Py_INCREF(type);
    g_type_cache[g_type_cache_size++] = TypeCacheEntry{type, kind};
  }
  return kind;
}

// ---------------------------------------------------------------------------
// Tensor readers: each fills a jw_tensor from its object
// ---------------------------------------------------------------------------
void start_tensor(jw_tensor& t, jw_dtype dtype, std::size_t rank,
                  std::string_view kernel, std::string_view name) {
  if (rank > JW_MAX_RANK) {
    invalid(
        fmt::format("{}: argument '{}' has rank {}; at most {} is supported",
                    kernel, name, rank, JW_MAX_RANK));
  }
  t.struct_size = sizeof(jw_tensor);
  t.next = nullptr;
  t.meta.struct_size = sizeof(jw_tensor_meta);
  t.meta.next = nullptr;
  t.meta.dtype = dtype;
  t.meta.rank = static_cast<uint32_t>(rank);
  t.meta.flags = 0;
}

int64_t tuple_int(PyObject* tuple, Py_ssize_t i) {
  const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

py::object steal_or_throw(PyObject* obj) {
  if (obj == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(obj);
}

// torch.Tensor: its attributes, read directly (no dict, no DLPack capsule).
int32_t read_torch(PyObject* obj, jw_tensor& t, std::string_view kernel,
                   std::string_view name) {
  const Names& n = names();
  py::object dtype = steal_or_throw(PyObject_GetAttr(obj, n.dtype));
  py::object shape = steal_or_throw(PyObject_GetAttr(obj, n.shape));
  if (!PyTuple_Check(shape.ptr())) invalid("torch tensor shape is not a tuple");
  const Py_ssize_t rank = PyTuple_GET_SIZE(shape.ptr());
  start_tensor(t, dtype_from_cached(dtype.ptr()),
               static_cast<std::size_t>(rank), kernel, name);
  py::object strides = steal_or_throw(PyObject_CallMethodNoArgs(obj, n.stride));
  if (!PyTuple_Check(strides.ptr()) || PyTuple_GET_SIZE(strides.ptr()) != rank)
    invalid("torch tensor stride() does not match its shape");
  for (Py_ssize_t i = 0; i < rank; ++i) {
    t.meta.shape[i] = tuple_int(shape.ptr(), i);
    t.meta.strides[i] = tuple_int(strides.ptr(), i);
  }
  t.meta.flags = JW_TENSOR_HAS_STRIDES;
  py::object ptr = steal_or_throw(PyObject_CallMethodNoArgs(obj, n.data_ptr));
  t.data = PyLong_AsVoidPtr(ptr.ptr());
  if (t.data == nullptr && PyErr_Occurred()) throw py::error_already_set();
  py::object device =
      steal_or_throw(PyObject_CallMethodNoArgs(obj, n.get_device));
  const long d = PyLong_AsLong(device.ptr());
  if (d == -1 && PyErr_Occurred()) throw py::error_already_set();
  t.device_index = static_cast<int32_t>(d);
  return t.device_index;
}

// The buffer protocol (NumPy arrays, memoryviews, array.array): host memory.
void read_buffer(PyObject* obj, jw_tensor& t, Py_buffer& view,
                 std::string_view kernel, std::string_view name) {
  if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) != 0)
    throw py::error_already_set();
  start_tensor(t, dtype_from_buffer_format(view.format, view.itemsize),
               static_cast<std::size_t>(view.ndim), kernel, name);
  for (int i = 0; i < view.ndim; ++i) {
    t.meta.shape[i] = view.shape[i];
    if (view.strides[i] % view.itemsize != 0) {
      invalid(fmt::format(
          "{}: argument '{}': stride of {} bytes is not a multiple of the "
          "element size {}",
          kernel, name, view.strides[i], view.itemsize));
    }
    t.meta.strides[i] = view.strides[i] / view.itemsize;
  }
  t.meta.flags = JW_TENSOR_HAS_STRIDES;
  t.data = view.buf;
  t.device_index = -1;
}

// __cuda_array_interface__ (v2/v3): device memory on the caller's device.
void read_cuda_array_interface(PyObject* obj, jw_tensor& t, int32_t device,
                               std::string_view kernel, std::string_view name,
                               bool* has_stream, void** stream) {
  py::object cai =
      steal_or_throw(PyObject_GetAttr(obj, names().cuda_array_interface));
  if (!PyDict_Check(cai.ptr()))
    invalid("__cuda_array_interface__ is not a dict");
  py::dict d = py::reinterpret_borrow<py::dict>(cai);
  if (d.contains("mask") && !d["mask"].is_none())
    invalid(fmt::format("{}: argument '{}': masked arrays are not supported",
                        kernel, name));
  py::tuple shape = d["shape"];
  start_tensor(t, dtype_from_typestr(d["typestr"].cast<std::string>()),
               shape.size(), kernel, name);
  const std::size_t itemsize = dtype_size(t.meta.dtype);
  for (std::size_t i = 0; i < shape.size(); ++i)
    t.meta.shape[i] = shape[i].cast<int64_t>();
  if (d.contains("strides") && !d["strides"].is_none()) {
    py::tuple strides = d["strides"];
    if (strides.size() != shape.size())
      invalid("__cuda_array_interface__ strides do not match its shape");
    for (std::size_t i = 0; i < strides.size(); ++i) {
      const int64_t bytes = strides[i].cast<int64_t>();
      if (bytes % static_cast<int64_t>(itemsize) != 0)
        invalid(fmt::format(
            "{}: argument '{}': stride of {} bytes is not a multiple of the "
            "element size {}",
            kernel, name, bytes, itemsize));
      t.meta.strides[i] = bytes / static_cast<int64_t>(itemsize);
    }
    t.meta.flags = JW_TENSOR_HAS_STRIDES;
  }
  py::tuple data = d["data"];
  t.data = PyLong_AsVoidPtr(data[0].ptr());
  if (t.data == nullptr && PyErr_Occurred()) throw py::error_already_set();
  t.device_index = device >= 0 ? device : 0;
  if (d.contains("stream") && !d["stream"].is_none()) {
    *has_stream = true;
    *stream = PyLong_AsVoidPtr(d["stream"].ptr());
    if (PyErr_Occurred()) throw py::error_already_set();
  }
}

// DLPack: the producer's capsule, kept until the launch ends (dropping an
// unconsumed capsule calls its deleter).
void read_dlpack(PyObject* obj, jw_tensor& t, PyObject** capsule_out,
                 bool has_stream, void* launch_stream, std::string_view kernel,
                 std::string_view name) {
  py::object device =
      steal_or_throw(PyObject_CallMethodNoArgs(obj, names().dlpack_device));
  const int device_type = py::tuple(device)[0].cast<int>();
  const bool host = device_type == kDLCPU || device_type == kDLCUDAHost ||
                    device_type == kDLROCMHost;
  py::object capsule;
  if (host) {
    capsule = steal_or_throw(PyObject_CallMethodNoArgs(obj, names().dlpack));
  } else {
    // The producer makes its work visible to the stream we launch on. With
    // no stream given, 1 is CUDA's legacy default stream (0 is refused by
    // the protocol); ROCm takes 0.
    uintptr_t stream = reinterpret_cast<uintptr_t>(launch_stream);
    if (!has_stream || stream == 0) stream = device_type == kDLROCM ? 0 : 1;
    py::dict kwargs;
    kwargs["stream"] = py::int_(stream);
    capsule =
        py::reinterpret_borrow<py::object>(obj).attr("__dlpack__")(**kwargs);
  }
  auto* managed = static_cast<DLManagedTensor*>(
      PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  *capsule_out = capsule.release().ptr();
  const DLTensor& d = managed->dl_tensor;
  if (d.ndim < 0) invalid("DLPack tensor has a negative rank");
  start_tensor(t, dtype_from_dlpack(d.dtype), static_cast<std::size_t>(d.ndim),
               kernel, name);
  for (int i = 0; i < d.ndim; ++i) {
    t.meta.shape[i] = d.shape[i];
    if (d.strides != nullptr) t.meta.strides[i] = d.strides[i];
  }
  if (d.strides != nullptr) t.meta.flags = JW_TENSOR_HAS_STRIDES;
  t.data = static_cast<char*>(d.data) + d.byte_offset;
  t.device_index = host ? -1 : static_cast<int32_t>(d.device.device_id);
}

// torch._C._cuda_getCurrentRawStream and the torch module it came from
// (fetched again if sys.modules["torch"] changes). Strong references kept
// for the life of the interpreter: a static py::object would be released
// after the interpreter has gone.
PyObject* g_torch_module = nullptr;
PyObject* g_torch_current_stream = nullptr;

}  // namespace

std::string path_from(py::handle path) {
  return py::str(py::module_::import("os").attr("fspath")(path))
      .cast<std::string>();
}

// ---------------------------------------------------------------------------
// Public helpers
// ---------------------------------------------------------------------------
jw_dtype dtype_from(py::handle obj) {
  return dtype_from_cached(obj.ptr());
}

py::str dtype_to_python(jw_dtype dtype) {
  const std::string_view name = jitwarm::dtype_name(dtype);
  return py::str(name.data(), name.size());
}

__int128 integer_from(py::handle obj) {
  if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr())) {
    invalid(
        fmt::format("{} is not an integer", py::repr(obj).cast<std::string>()));
  }
  py::object index = steal_or_throw(PyNumber_Index(obj.ptr()));
  const jw_scalar s = int_scalar(index.ptr());
  return s.kind == JW_SCALAR_UINT ? static_cast<__int128>(s.value.u)
                                  : static_cast<__int128>(s.value.i);
}

py::int_ integer_to_python(__int128 value) {
  unsigned char bytes[16];
  std::memcpy(bytes, &value, sizeof value);
  return py::reinterpret_steal<py::int_>(
      steal_or_throw(_PyLong_FromByteArray(bytes, 16, 1, 1)).release());
}

jw_scalar scalar_from_integer(__int128 value) {
  if (value >= INT64_MIN && value <= INT64_MAX)
    return jitwarm::scalar_int(static_cast<int64_t>(value));
  if (value >= 0 && value <= static_cast<__int128>(UINT64_MAX))
    return jitwarm::scalar_uint(static_cast<uint64_t>(value));
  jitwarm::specialize_integer(value);  // throws the overflow error
  return jitwarm::scalar_int(0);       // not reached
}

py::object scalar_to_python(const jw_scalar& s) {
  switch (s.kind) {
    case JW_SCALAR_INT: return py::int_(s.value.i);
    case JW_SCALAR_UINT: return py::int_(s.value.u);
    case JW_SCALAR_FLOAT: return py::float_(s.value.f);
    case JW_SCALAR_BOOL: return py::bool_(s.value.i != 0);
    default: return py::none();
  }
}

jw_tensor_meta WarmupTensor::meta() const {
  return strides.empty()
             ? jitwarm::make_tensor_meta(dtype, shape, aligned)
             : jitwarm::make_tensor_meta(dtype, shape, strides, aligned);
}

TensorChoice WarmupTensor::choice() const {
  return TensorChoice{dtype, aligned, strides};
}

// ---------------------------------------------------------------------------
// LaunchArgs
// ---------------------------------------------------------------------------
LaunchArgs::~LaunchArgs() {
  for (std::size_t i = 0; i < borrowed_count_; ++i) {
    if (borrowed_[i].has_view) PyBuffer_Release(&borrowed_[i].view);
    Py_XDECREF(borrowed_[i].capsule);
  }
}

LaunchArgs::Borrowed& LaunchArgs::borrow() {
  Borrowed& b = borrowed_[borrowed_count_++];
  b.has_view = false;
  b.capsule = nullptr;
  return b;
}

void LaunchArgs::resize(std::size_t count) {
  if (count > kMaxArgs) {
    invalid(fmt::format("a launch takes at most {} arguments, got {}", kMaxArgs,
                        count));
  }
  for (std::size_t i = count_; i < count; ++i) {
    values_[i] = jw_arg_value{};
    values_[i].struct_size = sizeof(jw_arg_value);
    originals_[i] = nullptr;
  }
  count_ = count;
}

void LaunchArgs::note_device(int32_t device) {
  if (device < 0) {
    host_tensors_ = true;
  } else if (device_ < 0) {
    device_ = device;
  }
}

void LaunchArgs::set_default(std::size_t index, const jw_scalar& value) {
  values_[index].kind = JW_VALUE_SCALAR;
  values_[index].value.scalar = value;
}

void LaunchArgs::set(std::size_t index, PyObject* obj, std::string_view kernel,
                     std::string_view name, bool has_stream,
                     void* launch_stream, int32_t device) {
  jw_arg_value& v = values_[index];
  originals_[index] = nullptr;
  // The common scalars first, before any type lookup.
  if (PyLong_CheckExact(obj)) {
    v.kind = JW_VALUE_SCALAR;
    v.value.scalar = int_scalar(obj);
    return;
  }
  if (PyFloat_CheckExact(obj)) {
    v.kind = JW_VALUE_SCALAR;
    v.value.scalar = jitwarm::scalar_float(PyFloat_AS_DOUBLE(obj));
    return;
  }
  jw_tensor& t = tensors_[index];
  switch (kind_of(obj)) {
    case ValueKind::boolean:
    case ValueKind::numpy_bool: {
      const int truth = PyObject_IsTrue(obj);
      if (truth < 0) throw py::error_already_set();
      v.kind = JW_VALUE_SCALAR;
      v.value.scalar = jitwarm::scalar_bool(truth != 0);
      return;
    }
    case ValueKind::integer:
    case ValueKind::index: {
      py::object index_value = steal_or_throw(PyNumber_Index(obj));
      v.kind = JW_VALUE_SCALAR;
      v.value.scalar = int_scalar(index_value.ptr());
      return;
    }
    case ValueKind::floating:
    case ValueKind::float_like: {
      const double f = PyFloat_AsDouble(obj);
      if (f == -1.0 && PyErr_Occurred()) throw py::error_already_set();
      v.kind = JW_VALUE_SCALAR;
      v.value.scalar = jitwarm::scalar_float(f);
      return;
    }
    case ValueKind::warmup_tensor:
      metas_[index] = py::cast<const WarmupTensor&>(obj).meta();
      v.kind = JW_VALUE_WARMUP_TENSOR;
      v.value.meta = &metas_[index];
      return;
    case ValueKind::torch_tensor:
      note_device(read_torch(obj, t, kernel, name));
      if (t.device_index >= 0) wants_torch_stream_ = true;
      break;
    case ValueKind::buffer: {
      Borrowed& b = borrow();
      read_buffer(obj, t, b.view, kernel, name);
      b.has_view = true;
      note_device(-1);
      break;
    }
    case ValueKind::cuda_array_interface: {
      bool stream_given = false;
      void* stream = nullptr;
      read_cuda_array_interface(obj, t, device, kernel, name, &stream_given,
                                &stream);
      note_device(t.device_index);
      if (stream_given && !has_stream_hint_) {
        has_stream_hint_ = true;
        stream_hint_ = stream;
      }
      break;
    }
    case ValueKind::dlpack: {
      Borrowed& b = borrow();
      read_dlpack(obj, t, &b.capsule, has_stream, launch_stream, kernel, name);
      note_device(t.device_index);
      break;
    }
    case ValueKind::unsupported:
      invalid(fmt::format(
          "{}: argument '{}': cannot pass a {} (pass a tensor: a NumPy "
          "array, a torch tensor, an object with __cuda_array_interface__ or "
          "__dlpack__, a jitwarm.WarmupTensor; or an int, a float or a bool)",
          kernel, name, Py_TYPE(obj)->tp_name));
  }
  v.kind = JW_VALUE_TENSOR;
  v.value.tensor = &t;
  originals_[index] = obj;
}

PyObject* LaunchArgs::original(const jw_tensor* tensor) const {
  if (tensor < tensors_ || tensor >= tensors_ + count_) return nullptr;
  return originals_[tensor - tensors_];
}

void finish_stream_hint(LaunchArgs& args) {
  if (!args.wants_torch_stream_ || args.device_ < 0) return;
  // Every CUDA launch from torch passes here: the interned name and a
  // one-argument vectorcall keep it to a dict lookup and a call.
  PyObject* loaded =
      PyDict_GetItemWithError(PyImport_GetModuleDict(), names().torch);
  if (loaded == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return;
  }
  py::object torch = py::reinterpret_borrow<py::object>(loaded);
  if (torch.ptr() != g_torch_module) {
    py::object c = py::getattr(torch, "_C", py::none());
    py::object fn =
        c.is_none() ? py::object(py::none())
                    : py::getattr(c, "_cuda_getCurrentRawStream", py::none());
    if (fn.is_none()) return;
    Py_XDECREF(g_torch_current_stream);
    Py_XDECREF(g_torch_module);
    g_torch_current_stream = fn.release().ptr();
    g_torch_module = torch.release().ptr();
  }
  py::object device = steal_or_throw(PyLong_FromLong(args.device_));
  py::object stream =
      steal_or_throw(PyObject_CallOneArg(g_torch_current_stream, device.ptr()));
  args.has_stream_hint_ = true;
  args.stream_hint_ = PyLong_AsVoidPtr(stream.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
}

void bind_values(py::module_& m) {
  py::class_<WarmupTensor>(m, "WarmupTensor", R"doc(
Tensor metadata without storage: what a tensor argument contributes to a
compile key (dtype, whether its data is 16-byte aligned, strides), for
warmup requests and for key_for. shape and strides are in elements; no
strides means compact row-major.)doc")
      .def(py::init([](py::handle dtype, std::vector<int64_t> shape,
                       std::optional<std::vector<int64_t>> strides,
                       bool aligned) {
             WarmupTensor t;
             t.dtype = dtype_from(dtype);
             t.shape = std::move(shape);
             if (strides) t.strides = std::move(*strides);
             t.aligned = aligned;
             (void)t.meta();  // checks rank and strides now
             return t;
           }),
           py::arg("dtype"), py::arg("shape") = std::vector<int64_t>{},
           py::arg("strides") = py::none(), py::arg("aligned") = true)
      .def_property_readonly(
          "dtype",
          [](const WarmupTensor& t) { return dtype_to_python(t.dtype); })
      .def_property_readonly(
          "shape",
          [](const WarmupTensor& t) { return py::tuple(py::cast(t.shape)); })
      .def_property_readonly("strides",
                             [](const WarmupTensor& t) -> py::object {
                               if (t.strides.empty()) return py::none();
                               return py::tuple(py::cast(t.strides));
                             })
      .def_readonly("aligned", &WarmupTensor::aligned)
      .def("__eq__",
           [](const WarmupTensor& a, const WarmupTensor& b) {
             return a.dtype == b.dtype && a.shape == b.shape &&
                    a.strides == b.strides && a.aligned == b.aligned;
           })
      .def("__repr__", [](const WarmupTensor& t) {
        return fmt::format(
            "WarmupTensor({}, shape=({}), strides={}, aligned={})",
            jitwarm::dtype_name(t.dtype), fmt::join(t.shape, ", "),
            t.strides.empty() ? std::string("None")
                              : fmt::format("({})", fmt::join(t.strides, ", ")),
            t.aligned ? "True" : "False");
      });
  m.def(
      "dtype_name",
      [](py::handle dtype) { return dtype_to_python(dtype_from(dtype)); },
      py::arg("dtype"),
      "The jitwarm name of a dtype given as a name, a NumPy or a torch dtype.");
  m.def(
      "dtype_short_name",
      [](py::handle dtype) {
        return std::string(jitwarm::dtype_short_name(dtype_from(dtype)));
      },
      py::arg("dtype"),
      "The short name of a dtype as compile-key text writes it (bf16, fp32, "
      "i64, ...: Triton's names too).");
  m.def(
      "dtype_size",
      [](py::handle dtype) { return jitwarm::dtype_size(dtype_from(dtype)); },
      py::arg("dtype"), "The size of one element of a dtype, in bytes.");
}

}  // namespace jitwarm::python
