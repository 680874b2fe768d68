// jitwarm.Runtime's warmup methods (_warmup, warmup_plan, _warmup_keys; the
// pure-Python Runtime wraps the private ones): requests from a list, a
// manifest file or TOML text, the options as WarmupOptions, and a progress
// callback called from the warmup's threads. The core runs with the GIL
// released.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "py_callable.hpp"
#include "py_errors.hpp"
#include "py_runtime.hpp"
#include "py_values.hpp"
#include "py_warmup.hpp"

namespace jitwarm::python {
namespace {

WarmupOptions warmup_options(const std::optional<std::string>& platform,
                             const std::optional<std::string>& target,
                             const std::optional<std::string>& device_kind,
                             unsigned jobs, const std::string& parallel,
                             std::optional<unsigned> batch_size,
                             py::handle progress,
                             std::shared_ptr<py::object> progress_error) {
  WarmupOptions options;
  if (platform) options.platform = *platform;
  if (target) options.target = *target;
  if (device_kind) options.device_kind = *device_kind;
  options.jobs = std::max(1u, jobs);
  options.batch_size = batch_size;
  if (parallel == "threads") {
    options.parallel = WarmupParallelism::threads;
  } else if (parallel == "processes") {
    options.parallel = WarmupParallelism::processes;
  } else {
    invalid("warmup: parallel is 'threads' or 'processes', not '" + parallel +
            "'");
  }
  if (!progress.is_none()) {
    if (!PyCallable_Check(progress.ptr()))
      invalid("warmup: progress is not callable");
    // Called from the warmup's threads; an exception cannot unwind through
    // them, so the first one is kept and raised when the warmup returns.
    options.progress = [holder = hold_callable(progress), progress_error](
                           std::size_t done, std::size_t total,
                           const CompileKey& key) {
      py::gil_scoped_acquire gil;
      if (*progress_error) return;
      try {
        holder->get()(done, total, key.text());
      } catch (py::error_already_set& e) {
        *progress_error = py::reinterpret_borrow<py::object>(e.value());
        if (!*progress_error) *progress_error = py::none();
      }
    };
  }
  return options;
}

// Runs a warmup with the GIL released and raises what its progress callback
// raised.
template <typename Body>
auto run_warmup(std::shared_ptr<py::object> progress_error, Body&& body) {
  auto result = call_core([&] {
    py::gil_scoped_release release;
    return body();
  });
  if (*progress_error) {
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(progress_error->ptr())),
                    progress_error->ptr());
    throw py::error_already_set();
  }
  return result;
}

std::vector<WarmupRequest> requests_of(py::handle requests, py::handle manifest,
                                       py::handle toml) {
  const int given = !requests.is_none() + !manifest.is_none() + !toml.is_none();
  if (given != 1)
    invalid("warmup: give exactly one of requests, manifest= or toml=");
  if (!manifest.is_none())
    return call_core([&] { return load_warmup_manifest(path_from(manifest)); })
        .requests;
  if (!toml.is_none())
    return call_core([&] {
             return parse_warmup_manifest(toml.cast<std::string>(),
                                          "<toml text>");
           })
        .requests;
  return requests_from(requests);
}

}  // namespace

void bind_runtime_warmup(py::class_<Runtime>& runtime) {
  runtime
      .def(
          "_warmup",
          [](Runtime& rt, py::object requests, py::object manifest,
             py::object toml, std::optional<std::string> platform,
             std::optional<std::string> target,
             std::optional<std::string> device_kind, unsigned jobs,
             const std::string& parallel, std::optional<unsigned> batch_size,
             py::object progress) {
            const std::vector<WarmupRequest> list =
                requests_of(requests, manifest, toml);
            auto progress_error = std::make_shared<py::object>();
            const WarmupOptions options =
                warmup_options(platform, target, device_kind, jobs, parallel,
                               batch_size, progress, progress_error);
            return run_warmup(progress_error,
                              [&] { return rt.warmup(list, options); });
          },
          py::arg("requests"), py::arg("manifest"), py::arg("toml"),
          py::arg("platform"), py::arg("target"), py::arg("device_kind"),
          py::arg("jobs"), py::arg("parallel"), py::arg("batch_size"),
          py::arg("progress"))
      .def(
          "warmup_plan",
          [](Runtime& rt, py::object requests, py::object manifest,
             py::object toml, std::optional<std::string> platform,
             std::optional<std::string> target,
             std::optional<std::string> device_kind) {
            const std::vector<WarmupRequest> list =
                requests_of(requests, manifest, toml);
            auto no_progress = std::make_shared<py::object>();
            const WarmupOptions options =
                warmup_options(platform, target, device_kind, 1, "threads", 1,
                               py::none(), no_progress);
            return run_warmup(no_progress,
                              [&] { return rt.warmup_plan(list, options); });
          },
          py::arg("requests") = py::none(), py::kw_only(),
          py::arg("manifest") = py::none(), py::arg("toml") = py::none(),
          py::arg("platform") = py::none(), py::arg("target") = py::none(),
          py::arg("device_kind") = py::none(),
          "The keys warmup() would compile, in order, without duplicates; "
          "device_kind as for warmup().")
      .def(
          "_warmup_keys",
          [](Runtime& rt, std::vector<CompileKey> keys,
             std::optional<std::string> device_kind, unsigned jobs,
             const std::string& parallel, std::optional<unsigned> batch_size,
             py::object progress) {
            auto progress_error = std::make_shared<py::object>();
            const WarmupOptions options =
                warmup_options(std::nullopt, std::nullopt, device_kind, jobs,
                               parallel, batch_size, progress, progress_error);
            return run_warmup(progress_error,
                              [&] { return rt.warmup_keys(keys, options); });
          },
          py::arg("keys"), py::arg("device_kind"), py::arg("jobs"),
          py::arg("parallel"), py::arg("batch_size"), py::arg("progress"));
}

}  // namespace jitwarm::python
