// Python values as jitwarm sees them: dtypes from names, NumPy and torch;
// integers of any size under the core's overflow rule; tensors read straight
// from the object (torch attributes, the buffer protocol, the CUDA array
// interface, DLPack) into jw_tensor, without building dicts or strings on
// the launch path. Everything here runs with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <span>
#include <vector>

namespace jitwarm::python {

namespace py = pybind11;

// A dtype from a name ("bfloat16", "bf16"), a NumPy dtype or scalar type, or
// a torch dtype. Throws Error(JW_ERROR_INVALID_ARGUMENT) otherwise.
// A path from str or os.PathLike.
std::string path_from(py::handle path);

jw_dtype dtype_from(py::handle obj);
// "bfloat16", ...
py::str dtype_to_python(jw_dtype dtype);

// A Python int (or an object with __index__) as the core's 128-bit integer.
// Values beyond [-2^63, 2^64) throw the core's overflow error.
__int128 integer_from(py::handle obj);
py::int_ integer_to_python(__int128 value);
jw_scalar scalar_from_integer(__int128 value);
py::object scalar_to_python(const jw_scalar& scalar);

// Storage-free tensor metadata (jitwarm.WarmupTensor): a dtype, a shape,
// strides (empty: compact row-major) and whether the data will be 16-byte
// aligned.
struct WarmupTensor {
  jw_dtype dtype = JW_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  bool aligned = true;
  jw_tensor_meta meta() const;
  TensorChoice choice() const;
};

// The arguments of one launch (or key_for), converted from Python objects
// in schema order. Releases what it borrowed (buffers, DLPack capsules) when
// destroyed.
class LaunchArgs {
 public:
  LaunchArgs() = default;
  LaunchArgs(const LaunchArgs&) = delete;
  LaunchArgs& operator=(const LaunchArgs&) = delete;
  ~LaunchArgs();

  // Converts `obj` as argument `index` (named `name` in messages).
  // `launch_stream` is the stream the caller asked for (for DLPack
  // producers, which synchronize to it); nullptr when none was given.
  // `device` is the device the caller asked for (-1: none), given to
  // producers that do not say (the CUDA array interface).
  void set(std::size_t index, PyObject* obj, std::string_view kernel,
           std::string_view name, bool has_stream, void* launch_stream,
           int32_t device);
  // A scalar default for a gap before the last given argument.
  void set_default(std::size_t index, const jw_scalar& value);
  void resize(std::size_t count);

  std::span<const jw_arg_value> values() const { return {values_, count_}; }

  // The device of the first tensor in device memory, or -1.
  int32_t device() const { return device_; }
  bool has_host_tensors() const { return host_tensors_; }
  // A stream the tensors ask for: torch's current stream on their device,
  // or a __cuda_array_interface__ stream.
  bool has_stream_hint() const { return has_stream_hint_; }
  void* stream_hint() const { return stream_hint_; }

  // The Python object a tensor argument came from (for Python overrides),
  // or nullptr when `tensor` is not one of these arguments.
  PyObject* original(const jw_tensor* tensor) const;

  static constexpr std::size_t kMaxArgs = 32;

 private:
  // What a tensor argument borrowed from its object, released at the end.
  // Plain data, filled only for the arguments that use it: a launch
  // initializes only what it converts.
  struct Borrowed {
    Py_buffer view;  // with has_view
    bool has_view;
    PyObject* capsule;  // a DLPack capsule, owned, or nullptr
  };
  Borrowed& borrow();
  void note_device(int32_t device);

  std::size_t count_ = 0;
  jw_arg_value values_[kMaxArgs];
  jw_tensor tensors_[kMaxArgs];
  jw_tensor_meta metas_[kMaxArgs];
  PyObject* originals_[kMaxArgs];
  Borrowed borrowed_[kMaxArgs];
  std::size_t borrowed_count_ = 0;
  int32_t device_ = -1;
  bool host_tensors_ = false;
  bool has_stream_hint_ = false;
  void* stream_hint_ = nullptr;
  bool wants_torch_stream_ = false;
  friend void finish_stream_hint(LaunchArgs& args);
};

// Resolves the torch current-stream hint once the tensors' device is known.
void finish_stream_hint(LaunchArgs& args);

void bind_values(py::module_& m);

}  // namespace jitwarm::python
