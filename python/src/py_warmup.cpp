#include "py_warmup.hpp"

#include <pybind11/stl.h>

#include <fmt/format.h>

#include <string>

#include "py_callable.hpp"
#include "py_errors.hpp"
#include "py_values.hpp"

namespace jitwarm::python {
namespace {

std::string python_repr(py::handle obj) {
  return py::repr(obj).cast<std::string>();
}

// A field of a tensor table: one value or a list of them.
std::vector<py::object> one_or_many(py::handle value) {
  std::vector<py::object> out;
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    for (py::handle item : value)
      out.push_back(py::reinterpret_borrow<py::object>(item));
  } else {
    out.push_back(py::reinterpret_borrow<py::object>(value));
  }
  return out;
}

// {"dtype": ..., "aligned": ..., "strides": ...}: the product of its fields.
std::vector<TensorChoice> tensor_table(const std::string& param,
                                       py::dict table) {
  std::vector<py::object> dtypes{py::none()}, aligned{py::bool_(true)};
  std::vector<py::object> strides{py::none()};
  for (auto [key, value] : table) {
    const std::string field = py::str(key).cast<std::string>();
    if (field == "dtype") {
      dtypes = one_or_many(value);
    } else if (field == "aligned") {
      aligned = one_or_many(value);
    } else if (field == "strides") {
      // A list of stride lists, or one stride list.
      py::sequence s = py::reinterpret_borrow<py::sequence>(value);
      strides.clear();
      if (s.size() > 0 &&
          (py::isinstance<py::list>(s[0]) || py::isinstance<py::tuple>(s[0]))) {
        for (py::handle item : s)
          strides.push_back(py::reinterpret_borrow<py::object>(item));
      } else {
        strides.push_back(py::reinterpret_borrow<py::object>(value));
      }
    } else {
      invalid(fmt::format(
          "warmup: tensor table of '{}' has an unknown field '{}' (use dtype, "
          "aligned, strides)",
          param, field));
    }
  }
  std::vector<TensorChoice> out;
  for (const auto& d : dtypes) {
    for (const auto& a : aligned) {
      if (!PyBool_Check(a.ptr()))
        invalid(fmt::format("warmup: '{}': aligned takes True or False, got {}",
                            param, python_repr(a)));
      for (const auto& s : strides) {
        TensorChoice c;
        c.dtype = d.is_none() ? JW_DTYPE_INVALID : dtype_from(d);
        c.aligned_16 = a.cast<bool>();
        if (!s.is_none()) c.strides = s.cast<std::vector<int64_t>>();
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// One value (not a list): what it means for the key.
void add_value(const std::string& param, py::handle v, WarmupAxis& axis,
               bool allow_ranges) {
  if (PyBool_Check(v.ptr())) {
    axis.values.emplace_back(v.cast<bool>());
  } else if (PyFloat_Check(v.ptr())) {
    axis.values.emplace_back(v.cast<double>());
  } else if (py::isinstance<py::str>(v)) {
    axis.values.emplace_back(TensorChoice{dtype_from(v), true, {}});
  } else if (py::isinstance<WarmupTensor>(v)) {
    axis.values.emplace_back(v.cast<const WarmupTensor&>().choice());
  } else if (py::isinstance<py::dict>(v)) {
    for (auto& c : tensor_table(param, v.cast<py::dict>()))
      axis.values.emplace_back(std::move(c));
  } else if (PyRange_Check(v.ptr())) {
    if (!allow_ranges)
      invalid(fmt::format(
          "warmup: '{}': ranges are not allowed here (zipped groups and "
          "exclusions take values)",
          param));
    const __int128 start = integer_from(v.attr("start"));
    const __int128 stop = integer_from(v.attr("stop"));
    const __int128 step = integer_from(v.attr("step"));
    for (__int128 x : {start, stop, step}) {
      if (x < INT64_MIN || x > INT64_MAX)
        invalid(fmt::format("warmup: '{}': range {} is beyond int64", param,
                            python_repr(v)));
    }
    axis.ranges.push_back(IntRange{static_cast<int64_t>(start),
                                   static_cast<int64_t>(stop),
                                   static_cast<int64_t>(step)});
  } else if (PyIndex_Check(v.ptr())) {
    axis.values.emplace_back(integer_from(v));
  } else {
    // A NumPy or torch dtype.
    axis.values.emplace_back(TensorChoice{dtype_from(v), true, {}});
  }
}

WarmupAxis axis_from(const std::string& param, py::handle value,
                     bool allow_ranges) {
  WarmupAxis axis;
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    if (py::len(value) == 0)
      invalid(fmt::format("warmup: '{}' has an empty list of values", param));
    for (py::handle item : value) {
      if (py::isinstance<py::list>(item) || py::isinstance<py::tuple>(item))
        invalid(fmt::format(
            "warmup: '{}': a list inside a list (use a tensor table for "
            "strides)",
            param));
      add_value(param, item, axis, allow_ranges);
    }
  } else {
    add_value(param, value, axis, allow_ranges);
  }
  return axis;
}

std::vector<std::pair<std::string, WarmupAxis>> axes_from(py::handle params,
                                                          bool allow_ranges) {
  std::vector<std::pair<std::string, WarmupAxis>> out;
  if (params.is_none()) return out;
  if (!py::isinstance<py::dict>(params))
    invalid(fmt::format("warmup: params must be a dict, got {}",
                        python_repr(params)));
  for (auto [key, value] : params.cast<py::dict>()) {
    const std::string name = py::str(key).cast<std::string>();
    out.emplace_back(name, axis_from(name, value, allow_ranges));
  }
  return out;
}

// The filter: called by the core, on the thread that warms, with the GIL
// released around the warmup; a Python exception stops the warmup and comes
// out as itself (py_errors.hpp).
std::function<bool(const WarmupAssignment&)> filter_from(py::handle fn) {
  if (fn.is_none()) return {};
  if (!PyCallable_Check(fn.ptr()))
    invalid(fmt::format("warmup: filter {} is not callable", python_repr(fn)));
  auto holder = hold_callable(fn);
  return [holder](const WarmupAssignment& assignment) {
    py::gil_scoped_acquire gil;
    try {
      py::dict values;
      for (const auto& [name, value] : assignment.values)
        values[py::str(name)] = warmup_value_to_python(value);
      return py::bool_(holder->get()(values)).cast<bool>();
    } catch (py::error_already_set& e) {
      e.restore();
      throw PendingPythonError(JW_ERROR_INVALID_ARGUMENT, "the warmup filter");
    }
  };
}

}  // namespace

py::object warmup_value_to_python(const WarmupValue& value) {
  if (const auto* i = std::get_if<__int128>(&value))
    return integer_to_python(*i);
  if (const auto* d = std::get_if<double>(&value)) return py::float_(*d);
  if (const auto* b = std::get_if<bool>(&value)) return py::bool_(*b);
  const auto& t = std::get<TensorChoice>(value);
  WarmupTensor w;
  w.dtype = t.dtype;
  w.strides = t.strides;
  w.aligned = t.aligned_16;
  return py::cast(std::move(w));
}

WarmupRequest request_from(py::handle r) {
  WarmupRequest request;
  request.kernel_name = r.attr("kernel").cast<std::string>();
  if (py::object platform = r.attr("platform"); !platform.is_none())
    request.platform = platform.cast<std::string>();
  request.axes = axes_from(r.attr("params"), /*allow_ranges=*/true);
  if (py::object zip = r.attr("zip"); !zip.is_none()) {
    for (py::handle group : zip)
      request.zipped.push_back(axes_from(group, /*allow_ranges=*/false));
  }
  if (py::object exclude = r.attr("exclude"); !exclude.is_none()) {
    for (py::handle rule : exclude) {
      std::vector<std::pair<std::string, WarmupValue>> entries;
      for (auto& [name, axis] : axes_from(rule, /*allow_ranges=*/false)) {
        if (axis.values.size() != 1)
          invalid(fmt::format(
              "warmup of {}: exclusion of '{}' takes one value, got {}",
              request.kernel_name, name, axis.values.size()));
        entries.emplace_back(name, axis.values.front());
      }
      request.exclude.push_back(std::move(entries));
    }
  }
  request.filter = filter_from(r.attr("filter"));
  return request;
}

std::vector<WarmupRequest> requests_from(py::handle requests) {
  std::vector<WarmupRequest> out;
  if (py::hasattr(requests, "kernel")) {
    out.push_back(request_from(requests));
    return out;
  }
  for (py::handle r : requests) out.push_back(request_from(r));
  return out;
}

namespace {

// A tensor choice as a request's tensor table (the manifest may leave the
// dtype to the schema, which a WarmupTensor cannot).
py::object choice_to_python(const TensorChoice& c) {
  py::dict table;
  if (c.dtype != JW_DTYPE_INVALID) table["dtype"] = dtype_to_python(c.dtype);
  table["aligned"] = py::bool_(c.aligned_16);
  if (!c.strides.empty()) table["strides"] = py::cast(c.strides);
  return table;
}

py::object axis_value_to_python(const WarmupValue& v) {
  if (const auto* t = std::get_if<TensorChoice>(&v))
    return choice_to_python(*t);
  return warmup_value_to_python(v);
}

py::dict axes_to_python(
    const std::vector<std::pair<std::string, WarmupAxis>>& axes) {
  py::dict out;
  for (const auto& [name, axis] : axes) {
    py::list values;
    for (const auto& v : axis.values) values.append(axis_value_to_python(v));
    py::object builtins_range = py::module_::import("builtins").attr("range");
    for (const auto& r : axis.ranges)
      values.append(builtins_range(r.start, r.stop, r.step));
    out[py::str(name)] = values;
  }
  return out;
}

// A manifest's requests as jitwarm.WarmupRequest objects, through the one
// manifest parser (for the Triton bridge, which warms Triton's kernels from
// the same files).
py::list requests_to_python(const std::vector<WarmupRequest>& requests) {
  py::object make = py::module_::import("jitwarm").attr("WarmupRequest");
  py::list out;
  for (const WarmupRequest& r : requests) {
    py::list zip, exclude;
    for (const auto& group : r.zipped) zip.append(axes_to_python(group));
    for (const auto& rule : r.exclude) {
      py::dict entries;
      for (const auto& [name, value] : rule)
        entries[py::str(name)] = axis_value_to_python(value);
      exclude.append(entries);
    }
    out.append(make(py::arg("kernel") = r.kernel_name,
                    py::arg("params") = axes_to_python(r.axes),
                    py::arg("zip") = zip, py::arg("exclude") = exclude,
                    py::arg("platform") =
                        r.platform.empty() ? py::object(py::none())
                                           : py::object(py::str(r.platform))));
  }
  return out;
}

}  // namespace

void bind_warmup(py::module_& m) {
  m.def(
      "manifest_requests",
      [](py::object manifest, py::object toml) {
        if (manifest.is_none() == toml.is_none())
          invalid("manifest_requests: give exactly one of manifest= or toml=");
        const WarmupManifest parsed = call_core([&] {
          if (!toml.is_none())
            return parse_warmup_manifest(toml.cast<std::string>(),
                                         "<toml text>");
          return load_warmup_manifest(
              py::str(py::module_::import("os").attr("fspath")(manifest))
                  .cast<std::string>());
        });
        return requests_to_python(parsed.requests);
      },
      py::kw_only(), py::arg("manifest") = py::none(),
      py::arg("toml") = py::none(),
      "A warmup manifest's requests as jitwarm.WarmupRequest objects.");
  m.def(
      "_enumerate_warmup_keys",
      [](const KernelSchema& schema, py::handle request,
         const std::string& target, const std::string& impl_name) {
        const WarmupRequest r = request_from(request);
        return call_core([&] {
          return enumerate_warmup_keys(schema, r, target, impl_name);
        });
      },
      py::arg("schema"), py::arg("request"), py::arg("target"),
      py::arg("impl_name"));
  m.def(
      "_warmup_inputs_for",
      [](const KernelSchema& schema, const CompileKey& key) {
        WarmupInputs inputs = warmup_inputs_for(schema, key);
        py::list out;
        for (const jw_arg_value& a : inputs.args) {
          if (a.kind == JW_VALUE_WARMUP_TENSOR) {
            const jw_tensor_meta& meta = *a.value.meta;
            WarmupTensor t;
            t.dtype = meta.dtype;
            t.shape.assign(meta.shape, meta.shape + meta.rank);
            if ((meta.flags & JW_TENSOR_HAS_STRIDES) != 0)
              t.strides.assign(meta.strides, meta.strides + meta.rank);
            t.aligned = (meta.flags & JW_TENSOR_ALIGNED_16) != 0;
            out.append(py::cast(std::move(t)));
          } else {
            out.append(scalar_to_python(a.value.scalar));
          }
        }
        return out;
      },
      py::arg("schema"), py::arg("key"));
}

}  // namespace jitwarm::python
