// jitwarm.Runtime and what it reports: the load report, schemas,
// explanations, platforms, cache counters, compile keys, warmup results,
// why a key would miss, and the specialization rules. Plain data is copied
// into Python objects; calls that compile or use the persistent tiers
// release the GIL.
//
// One function per area, bound in bind_runtime's order: a signature names
// a type as Python sees it only when the type is bound before it (else as
// C++ spells it), so the types come first and Runtime last. Runtime's
// methods are bound by area too; its warmup methods live in
// py_runtime_warmup.cpp.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <jitwarm/plugin/names.hpp>

#include <string>

#include "py_cache.hpp"
#include "py_callable.hpp"
#include "py_errors.hpp"
#include "py_kernel.hpp"
#include "py_runtime.hpp"
#include "py_trust.hpp"
#include "py_values.hpp"

namespace jitwarm::python {
namespace {

// A tune config as Python sees it: {choice name: value}.
py::dict config_dict(const TuneConfig& config) {
  py::dict out;
  for (const TuneValue& v : config) out[py::str(v.name)] = v.value;
  return out;
}

TuneConfig config_from(const py::dict& config) {
  TuneConfig out;
  for (const auto& [name, value] : config) {
    if (!py::isinstance<py::str>(name) || !py::isinstance<py::int_>(value) ||
        py::isinstance<py::bool_>(value)) {
      throw py::type_error(
          "a config maps choice names (str) to integers, e.g. "
          "{\"threads\": 256}");
    }
    out.push_back(TuneValue{name.cast<std::string>(), value.cast<int64_t>()});
  }
  return out;
}

std::string_view kind_name(jw_param_kind kind) {
  return plugin::param_kind_name(kind).value_or("unknown");
}

jw_param_kind kind_from(const std::string& name) {
  if (const auto kind = plugin::param_kind_from_name(name)) return *kind;
  invalid(fmt::format(
      "unknown parameter kind '{}' (use tensor, int, float, constexpr, scalar)",
      name));
}

std::string_view int_type_name(jw_int_type t) {
  return plugin::int_type_name(t).value_or("unknown");
}

std::string_view int_class_name(jw_int_class c) {
  return plugin::int_class_name(c).value_or("unknown");
}

IntSpec int_spec_from(const std::string& type, const std::string& value_class) {
  IntSpec spec;
  if (const auto t = plugin::int_type_from_name(type)) {
    spec.type = *t;
  } else {
    invalid(fmt::format("unknown integer type '{}' (use i32, i64, u64)", type));
  }
  if (const auto c = plugin::int_class_from_name(value_class)) {
    spec.value_class = *c;
  } else {
    invalid(
        fmt::format("unknown integer value class '{}' (use none, one, div16)",
                    value_class));
  }
  return spec;
}

const char* alignment_name(jw_alignment a) {
  switch (a) {
    case JW_ALIGN_NOT_SPECIALIZED: return "not specialized";
    case JW_ALIGN_16: return "a16";
    case JW_ALIGN_NONE: return "none";
  }
  return "unknown";
}

py::object int_spec_object(const IntSpec& s) {
  return py::cast(s);
}

std::string monitor_name(JitMonitorMode mode) {
  switch (mode) {
    case JitMonitorMode::off: return "off";
    case JitMonitorMode::warn: return "warn";
    case JitMonitorMode::error: return "error";
  }
  return "off";
}

JitMonitorMode monitor_from(const std::string& text) {
  if (auto mode = parse_jit_monitor_mode(text)) return *mode;
  invalid(fmt::format("unknown JIT monitor mode '{}' (use off, warn or error)",
                      text));
}

std::string log_level_name(jw_log_level level) {
  switch (level) {
    case JW_LOG_DEBUG: return "debug";
    case JW_LOG_INFO: return "info";
    case JW_LOG_WARNING: return "warning";
    case JW_LOG_ERROR: return "error";
  }
  return "error";
}

// A Python jitwarm.KernelSchema parameter: a dict with name, kind and the
// optional fields of jw_param_desc.
struct ParamStorage {
  std::string name, same_dtype_as;
};

KernelSchema schema_from_python(const std::string& name, py::list params,
                                const std::string& summary,
                                const std::string& launch_rule,
                                const std::string& origin) {
  std::vector<ParamStorage> storage(params.size());
  std::vector<jw_param_desc> descs(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    py::dict p = params[i].cast<py::dict>();
    jw_param_desc& d = descs[i];
    d.struct_size = sizeof(jw_param_desc);
    storage[i].name = p["name"].cast<std::string>();
    d.name = storage[i].name.c_str();
    d.kind = kind_from(p["kind"].cast<std::string>());
    d.rank = -1;
    for (auto [key, value] : p) {
      const std::string field = py::str(key).cast<std::string>();
      if (field == "name" || field == "kind") continue;
      if (field == "dtypes") {
        for (py::handle t : value)
          d.allowed_dtypes |= JW_DTYPE_BIT(dtype_from(t));
      } else if (field == "rank") {
        d.rank = value.cast<int32_t>();
      } else if (field == "same_dtype_as") {
        storage[i].same_dtype_as = value.cast<std::string>();
        d.same_dtype_as = storage[i].same_dtype_as.c_str();
      } else if (field == "default") {
        d.flags |= JW_PARAM_HAS_DEFAULT;
        if (PyBool_Check(value.ptr())) {
          d.default_value = scalar_bool(value.cast<bool>());
        } else if (PyFloat_Check(value.ptr())) {
          d.default_value = scalar_float(value.cast<double>());
        } else {
          d.default_value = scalar_from_integer(integer_from(value));
        }
      } else if (field == "do_not_specialize") {
        if (value.cast<bool>()) d.flags |= JW_PARAM_DO_NOT_SPECIALIZE;
      } else if (field == "do_not_specialize_on_alignment") {
        if (value.cast<bool>())
          d.flags |= JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT;
      } else if (field == "output") {
        if (value.cast<bool>()) d.flags |= JW_PARAM_OUTPUT;
      } else if (field == "float64") {
        if (value.cast<bool>()) d.flags |= JW_PARAM_FLOAT64;
      } else if (field == "specialize_strides") {
        if (value.cast<bool>()) d.flags |= JW_PARAM_SPECIALIZE_STRIDES;
      } else {
        invalid(fmt::format(
            "parameter '{}' of {}: unknown field '{}' (use name, kind, dtypes, "
            "rank, same_dtype_as, default, do_not_specialize, "
            "do_not_specialize_on_alignment, output, float64, "
            "specialize_strides)",
            storage[i].name, name, field));
      }
    }
  }
  jw_kernel_schema c{};
  c.struct_size = sizeof(c);
  c.name = name.c_str();
  c.summary = summary.c_str();
  c.params = descs.data();
  c.num_params = static_cast<uint32_t>(descs.size());
  c.launch_rule = launch_rule.c_str();
  return KernelSchema::from_c(c, origin);
}

// IntSpec: an integer's specialization (compile-keys.md).
void bind_int_spec(py::module_& m) {
  py::class_<IntSpec>(m, "IntSpec",
                      "An integer's specialization: type i32/i64/u64 and "
                      "value class none/one/div16.")
      .def(py::init(&int_spec_from), py::arg("type"), py::arg("value_class"))
      .def_property_readonly(
          "type", [](const IntSpec& s) { return int_type_name(s.type); })
      .def_property_readonly(
          "value_class",
          [](const IntSpec& s) { return int_class_name(s.value_class); })
      .def("__eq__", [](const IntSpec& a, const IntSpec& b) { return a == b; })
      .def("__hash__",
           [](const IntSpec& s) {
             return static_cast<int>(s.type) * 4 +
                    static_cast<int>(s.value_class);
           })
      .def("__repr__", [](const IntSpec& s) {
        return fmt::format("IntSpec('{}', '{}')", int_type_name(s.type),
                           int_class_name(s.value_class));
      });
}

// install_location(): where the loaded library's installation is.
void bind_installation(py::module_& m) {
  m.def(
      "install_location",
      [] {
        const InstallLocation& location = install_location();
        py::dict out;
        out["library"] = location.library;
        out["found_beside_library"] = location.found_beside_library;
        out["plugin_directory"] = location.plugin_directory;
        out["kernel_directory"] = location.kernel_directory;
        out["data_directory"] = location.data_directory;
        out["program"] = location.program;
        return out;
      },
      "Where the loaded libjitwarm's installation is: {'library', "
      "'found_beside_library' (the directories lie next to the library, as "
      "installed or moved, rather than at the prefix it was built for), "
      "'plugin_directory', 'kernel_directory', "
      "'data_directory', 'program' (the jitwarm command)}.");
}

// The specialization rules: specialize_integer, scalar_specialization_rep.
void bind_specialization(py::module_& m) {
  m.def(
      "specialize_integer",
      [](py::handle value, bool do_not_specialize) {
        return specialize_integer(integer_from(value), do_not_specialize);
      },
      py::arg("value"), py::arg("do_not_specialize") = false,
      "The type (i32, i64, u64) and value class (one, div16, none) of an "
      "integer under the specialization rules; outside [-2^63, 2^64) it "
      "raises InvalidArgumentError.");
  m.def(
      "scalar_specialization_rep",
      [](const IntSpec& spec) {
        return integer_to_python(scalar_specialization_rep(spec));
      },
      py::arg("spec"),
      "One value of the class (1; i32 16/2; i64 2^31/2^31+1; u64 "
      "2^63/2^63+1).");
}

// ParamSpec: one parameter's specialization in a key.
void bind_param_spec(py::module_& m) {
  py::class_<ParamSpec>(m, "ParamSpec",
                        "The specialization of one parameter in a key.")
      .def_readonly("name", &ParamSpec::name)
      .def_property_readonly(
          "kind", [](const ParamSpec& p) { return kind_name(p.kind); })
      .def_property_readonly("dtype",
                             [](const ParamSpec& p) -> py::object {
                               if (p.kind != JW_PARAM_TENSOR) return py::none();
                               return dtype_to_python(p.dtype);
                             })
      .def_property_readonly("alignment",
                             [](const ParamSpec& p) -> py::object {
                               if (p.kind != JW_PARAM_TENSOR) return py::none();
                               return py::str(alignment_name(p.alignment));
                             })
      .def_property_readonly("stride_specs",
                             [](const ParamSpec& p) { return p.stride_specs; })
      .def_property_readonly(
          "int_spec",
          [](const ParamSpec& p) -> py::object {
            const bool integer =
                p.kind == JW_PARAM_INT ||
                (p.kind == JW_PARAM_SCALAR && p.scalar_kind != JW_SCALAR_FLOAT);
            return integer ? int_spec_object(p.int_spec) : py::none();
          })
      .def_property_readonly(
          "float_type",
          [](const ParamSpec& p) -> py::object {
            const bool floating =
                p.kind == JW_PARAM_FLOAT ||
                (p.kind == JW_PARAM_SCALAR && p.scalar_kind == JW_SCALAR_FLOAT);
            if (!floating) return py::none();
            return py::str(p.float_type == JW_FLOAT_F64 ? "fp64" : "fp32");
          })
      .def_property_readonly("value",
                             [](const ParamSpec& p) -> py::object {
                               if (p.kind != JW_PARAM_CONSTEXPR)
                                 return py::none();
                               return scalar_to_python(p.constexpr_value);
                             })
      .def("__repr__", [](const ParamSpec& p) {
        return fmt::format("<ParamSpec {} ({})>", p.name, kind_name(p.kind));
      });
}

// TuneTiming, TuneResult: what tuning measured and keeps (tuning.md).
void bind_tuning_results(py::module_& m) {
  py::class_<TuneTiming>(m, "TuneTiming",
                         "One candidate of a tuning run: seconds per launch, "
                         "or why it has none.")
      .def_property_readonly(
          "config", [](const TuneTiming& t) { return config_dict(t.config); })
      .def_readonly("seconds", &TuneTiming::seconds)
      .def_readonly("error", &TuneTiming::error)
      .def("__repr__", [](const TuneTiming& t) {
        return fmt::format("<TuneTiming {} {}>", tune_config_text(t.config),
                           t.error.empty()
                               ? fmt::format("{:.3f} us", t.seconds * 1e6)
                               : "failed: " + t.error);
      });
  py::class_<TuneResult>(m, "TuneResult",
                         "The fastest config of a key on a kind of device "
                         "(docs/tuning.md).")
      .def_readonly("key_text", &TuneResult::key_text)
      .def_property_readonly(
          "key_hash", [](const TuneResult& r) { return r.key_hash.hex(); })
      .def_readonly("device_kind", &TuneResult::device_kind)
      .def_property_readonly(
          "best", [](const TuneResult& r) { return config_dict(r.best); })
      .def_readonly("timings", &TuneResult::timings)
      .def_readonly("stored", &TuneResult::stored)
      .def("to_text", &TuneResult::to_text)
      .def("__str__", &TuneResult::to_text)
      .def("__repr__", [](const TuneResult& r) {
        return fmt::format("<TuneResult {} on {}: {}>", r.key_text,
                           r.device_kind, tune_config_text(r.best));
      });
}

// CompileKey.
void bind_compile_key(py::module_& m) {
  py::class_<CompileKey>(m, "CompileKey",
                         "A compile key: kernel, implementation, target and "
                         "per-parameter specialization.")
      .def(py::init([](std::string kernel_name, std::string impl_name,
                       std::string target) {
             return CompileKey(std::move(kernel_name), std::move(impl_name),
                               std::move(target), {});
           }),
           py::arg("kernel_name"), py::arg("impl_name"), py::arg("target"),
           "A key with no parameters, for an external cache entry "
           "(Runtime.store_external_entry).")
      .def_property_readonly("text", &CompileKey::text)
      .def_property_readonly("kernel_name", &CompileKey::kernel_name)
      .def_property_readonly("impl_name", &CompileKey::impl_name)
      .def_property_readonly("target", &CompileKey::target)
      .def_property_readonly("params", &CompileKey::params)
      .def_property_readonly(
          "config", [](const CompileKey& k) { return config_dict(k.config()); },
          "The config a tuned key is compiled with ({} untuned).")
      .def(
          "with_config",
          [](const CompileKey& k, const py::dict& config) {
            return call_core(
                [&] { return k.with_config(config_from(config)); });
          },
          py::arg("config"),
          "This key with `config` (a dict of choice names to integers; {} "
          "for the untuned key).")
      .def_property_readonly("hash",
                             [](const CompileKey& k) { return k.hash().hex(); })
      .def_property_readonly(
          "encoding",
          [](const CompileKey& k) { return py::bytes(k.encoding()); })
      .def_static(
          "decode",
          [](py::bytes encoding) {
            return call_core(
                [&] { return CompileKey::decode(std::string(encoding)); });
          },
          py::arg("encoding"))
      .def("__eq__",
           [](const CompileKey& a, const CompileKey& b) { return a == b; })
      .def("__hash__",
           [](const CompileKey& k) {
             return static_cast<py::ssize_t>(k.hash().lo);
           })
      .def("__str__", &CompileKey::text)
      .def("__repr__", [](const CompileKey& k) {
        return fmt::format("<CompileKey {}>", k.text());
      });
}

// ParamDesc, KernelSchema: schemas, also defined from Python.
void bind_schemas(py::module_& m) {
  py::class_<ParamDesc>(m, "ParamDesc", "One parameter of a kernel schema.")
      .def_readonly("name", &ParamDesc::name)
      .def_property_readonly(
          "kind", [](const ParamDesc& p) { return kind_name(p.kind); })
      .def_readonly("flags", &ParamDesc::flags)
      .def_property_readonly(
          "dtypes",
          [](const ParamDesc& p) {
            py::list out;
            for (int d = 1; d < JW_DTYPE_COUNT; ++d) {
              if ((p.allowed_dtypes & JW_DTYPE_BIT(d)) != 0)
                out.append(dtype_to_python(static_cast<jw_dtype>(d)));
            }
            return out;
          })
      .def_property_readonly("rank",
                             [](const ParamDesc& p) -> py::object {
                               if (p.rank < 0) return py::none();
                               return py::int_(p.rank);
                             })
      .def_property_readonly("default",
                             [](const ParamDesc& p) -> py::object {
                               if (!p.has_flag(JW_PARAM_HAS_DEFAULT))
                                 return py::none();
                               return scalar_to_python(p.default_value);
                             })
      .def_property_readonly("same_dtype_as",
                             [](const ParamDesc& p) -> py::object {
                               if (p.same_dtype_as.empty()) return py::none();
                               return py::str(p.same_dtype_as);
                             })
      .def_property_readonly("do_not_specialize",
                             [](const ParamDesc& p) {
                               return p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE);
                             })
      .def_property_readonly(
          "do_not_specialize_on_alignment",
          [](const ParamDesc& p) {
            return p.has_flag(JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT);
          })
      .def_property_readonly(
          "output",
          [](const ParamDesc& p) { return p.has_flag(JW_PARAM_OUTPUT); })
      .def("__repr__", [](const ParamDesc& p) {
        return fmt::format("<ParamDesc {} ({})>", p.name, kind_name(p.kind));
      });
  py::class_<KernelSchema>(m, "KernelSchema", "A kernel's schema.")
      .def(py::init(&schema_from_python), py::arg("name"), py::arg("params"),
           py::arg("summary") = "", py::arg("launch_rule") = "",
           py::arg("origin") = "python")
      .def_property_readonly("name", &KernelSchema::name)
      .def_property_readonly("short_name", &KernelSchema::short_name)
      .def_property_readonly("summary", &KernelSchema::summary)
      .def_property_readonly("launch_rule", &KernelSchema::launch_rule)
      .def_property_readonly("origin", &KernelSchema::origin)
      .def_property_readonly("params", &KernelSchema::params)
      .def("__repr__", [](const KernelSchema& s) {
        return fmt::format("<KernelSchema {}>", s.name());
      });
}

// What the runtime reports: plugin loads, implementations and explanations,
// platforms, counters, warmup results, why a key would miss.
void bind_reports(py::module_& m) {
  py::class_<PluginLoadRecord>(
      m, "PluginLoadRecord",
      "One candidate file of a plugin load: loaded, or "
      "rejected and why.")
      .def_readonly("path", &PluginLoadRecord::path)
      .def_readonly("loaded", &PluginLoadRecord::loaded)
      .def_property_readonly(
          "rejection",
          [](const PluginLoadRecord& r) -> py::object {
            if (r.loaded) return py::none();
            return py::str(std::string(to_string(r.rejection)));
          })
      .def_readonly("detail", &PluginLoadRecord::detail)
      .def_readonly("plugin_name", &PluginLoadRecord::plugin_name)
      .def_readonly("plugin_version", &PluginLoadRecord::plugin_version)
      .def_readonly("abi_version", &PluginLoadRecord::abi_version)
      .def_readonly("kernels", &PluginLoadRecord::kernels)
      .def_readonly("schemas", &PluginLoadRecord::schemas)
      .def_readonly("platforms", &PluginLoadRecord::platforms)
      .def("__repr__", [](const PluginLoadRecord& r) {
        return fmt::format("<PluginLoadRecord {} {}>", r.path,
                           r.loaded ? "loaded" : "rejected");
      });
  py::class_<PluginLoadReport>(m, "LoadReport",
                               "What a plugin load found: the directories "
                               "searched and every candidate file.")
      .def_readonly("searched_directories",
                    &PluginLoadReport::searched_directories)
      .def_readonly("records", &PluginLoadReport::records)
      .def_property_readonly("loaded_count", &PluginLoadReport::loaded_count)
      .def_property_readonly("rejected_count",
                             &PluginLoadReport::rejected_count)
      .def("to_text", &PluginLoadReport::to_text)
      .def("to_json", &PluginLoadReport::to_json)
      .def("__str__", &PluginLoadReport::to_text);
  py::class_<ImplementationInfo>(m, "ImplementationInfo")
      .def_readonly("impl_name", &ImplementationInfo::impl_name)
      .def_readonly("platform", &ImplementationInfo::platform)
      .def_readonly("origin", &ImplementationInfo::origin)
      .def_readonly("pending", &ImplementationInfo::pending)
      .def("__repr__", [](const ImplementationInfo& i) {
        return fmt::format("<ImplementationInfo '{}' on {} from {}>",
                           i.impl_name, i.platform, i.origin);
      });
  py::class_<PlatformExplanation>(m, "PlatformExplanation")
      .def_readonly("platform", &PlatformExplanation::platform)
      .def_readonly("winner", &PlatformExplanation::winner)
      .def_readonly("replaced", &PlatformExplanation::replaced);
  py::class_<KernelExplanation>(
      m, "KernelExplanation",
      "Per platform, which implementation wins, where "
      "it came from and what it replaced.")
      .def_readonly("kernel_name", &KernelExplanation::kernel_name)
      .def_readonly("schema_origin", &KernelExplanation::schema_origin)
      .def_readonly("platforms", &KernelExplanation::platforms)
      .def("to_text", &KernelExplanation::to_text)
      .def("__str__", &KernelExplanation::to_text);
  py::class_<PlatformInfo>(m, "PlatformInfo")
      .def_readonly("name", &PlatformInfo::name)
      .def_readonly("origin", &PlatformInfo::origin)
      .def_readonly("can_compile", &PlatformInfo::can_compile)
      .def_readonly("can_launch", &PlatformInfo::can_launch)
      .def_readonly("detail", &PlatformInfo::detail)
      .def_readonly("device_count", &PlatformInfo::device_count)
      .def("__repr__", [](const PlatformInfo& p) {
        return fmt::format("<PlatformInfo {} compile={} launch={} devices={}>",
                           p.name, p.can_compile, p.can_launch, p.device_count);
      });
  py::class_<CacheStats>(m, "CacheStats", "The compile cache's counters.")
      .def_readonly("hits", &CacheStats::hits)
      .def_readonly("misses", &CacheStats::misses)
      .def_readonly("compiles", &CacheStats::compiles)
      .def_readonly("disk_hits", &CacheStats::disk_hits)
      .def_readonly("disk_writes", &CacheStats::disk_writes)
      .def_readonly("disk_rejects", &CacheStats::disk_rejects)
      .def_readonly("compile_seconds", &CacheStats::compile_seconds)
      .def_readonly("entries", &CacheStats::entries)
      .def_readonly("remote_hits", &CacheStats::remote_hits)
      .def_readonly("remote_misses", &CacheStats::remote_misses)
      .def_readonly("remote_rejects", &CacheStats::remote_rejects)
      .def_readonly("remote_errors", &CacheStats::remote_errors)
      .def_readonly("remote_writes", &CacheStats::remote_writes)
      .def("__repr__", [](const CacheStats& s) {
        return fmt::format(
            "<CacheStats hits={} misses={} compiles={} entries={} disk_hits={} "
            "disk_writes={} disk_rejects={} remote_hits={} remote_misses={} "
            "remote_errors={}>",
            s.hits, s.misses, s.compiles, s.entries, s.disk_hits, s.disk_writes,
            s.disk_rejects, s.remote_hits, s.remote_misses, s.remote_errors);
      });
  py::class_<WarmupKeyResult>(m, "WarmupKeyResult")
      .def_readonly("key_text", &WarmupKeyResult::key_text)
      .def_property_readonly(
          "key_hash", [](const WarmupKeyResult& r) { return r.key_hash.hex(); })
      .def_readonly("compiled", &WarmupKeyResult::compiled)
      .def_readonly("failed", &WarmupKeyResult::failed)
      .def_readonly("error", &WarmupKeyResult::error)
      .def("__repr__", [](const WarmupKeyResult& r) {
        return fmt::format("<WarmupKeyResult {} {}>", r.key_text,
                           r.failed     ? "failed"
                           : r.compiled ? "compiled"
                                        : "cached");
      });
  py::class_<WarmupResult>(m, "WarmupResult")
      .def_readonly("keys", &WarmupResult::keys)
      .def_readonly("compiled", &WarmupResult::compiled)
      .def_readonly("cached", &WarmupResult::cached)
      .def_readonly("failed", &WarmupResult::failed)
      .def_readonly("seconds", &WarmupResult::seconds)
      .def_readonly("remote_answered", &WarmupResult::remote_answered)
      .def_readonly("remote_failed", &WarmupResult::remote_failed)
      .def("__repr__", [](const WarmupResult& r) {
        return fmt::format(
            "<WarmupResult {} keys: {} compiled, {} cached, {} failed in "
            "{:.2f} s>",
            r.keys.size(), r.compiled, r.cached, r.failed, r.seconds);
      });

  py::class_<MissFactor>(m, "MissFactor",
                         "One thing that sets a cache entry apart from a key.")
      .def_readonly("name", &MissFactor::name)
      .def_readonly("wanted", &MissFactor::wanted)
      .def_readonly("found", &MissFactor::found)
      .def("__repr__", [](const MissFactor& f) {
        return fmt::format("<MissFactor {}: wanted {}, found {}>", f.name,
                           f.wanted, f.found);
      });
  py::class_<MissNeighbour>(m, "MissNeighbour",
                            "A cache entry of the key's kernel on its "
                            "platform, and what differs.")
      .def_readonly("key", &MissNeighbour::key)
      .def_readonly("target", &MissNeighbour::target)
      .def_readonly("system", &MissNeighbour::system)
      .def_readonly("factors", &MissNeighbour::factors)
      .def("__repr__", [](const MissNeighbour& n) {
        return fmt::format("<MissNeighbour {} ({} factors)>", n.key,
                           n.factors.size());
      });
  py::class_<MissExplanation>(m, "MissExplanation",
                              "Whether a key would hit the persistent cache, "
                              "and if not, the nearest entries.")
      .def_readonly("key", &MissExplanation::key)
      .def_readonly("would_hit", &MissExplanation::would_hit)
      .def_readonly("not_kept", &MissExplanation::not_kept)
      .def_readonly("entries", &MissExplanation::entries)
      .def_readonly("neighbours", &MissExplanation::neighbours)
      .def("to_text", &MissExplanation::to_text)
      .def("__str__", &MissExplanation::to_text)
      .def("__repr__", [](const MissExplanation& e) {
        return fmt::format("<MissExplanation {} {}>", e.key,
                           e.would_hit ? "would hit" : "would miss");
      });
}

// Runtime(*, options) and loading plugins.
void bind_construction_and_plugins(py::class_<Runtime>& runtime) {
  runtime
      .def(py::init([](py::object cache_dir, py::object jit_monitor,
                       py::object jit_record_path, py::object log,
                       py::object no_cache_dir, py::object system_cache_dir,
                       py::object cache_max_bytes, py::object remote_cache,
                       py::object no_remote_cache, py::object remote_timeout,
                       py::object signing_key, py::object trusted_keys,
                       py::object remote_cache_mode) {
             RuntimeOptions o;
             CacheArguments{cache_dir,       no_cache_dir, system_cache_dir,
                            cache_max_bytes, remote_cache, no_remote_cache,
                            remote_timeout}
                 .apply(o);
             TrustArguments{signing_key, trusted_keys, remote_cache_mode}.apply(
                 o);
             if (!jit_monitor.is_none())
               o.jit_monitor = monitor_from(jit_monitor.cast<std::string>());
             if (!jit_record_path.is_none())
               o.jit_record_path = path_from(jit_record_path);
             if (!log.is_none()) {
               if (!PyCallable_Check(log.ptr()))
                 invalid("Runtime: log is not callable");
               // Any thread may log; a callback's exception is reported as
               // unraisable (it cannot unwind through the core).
               o.log = [holder = hold_callable(log)](
                           jw_log_level level, const std::string& message) {
                 if (PythonCallable::interpreter_finalizing()) return;
                 py::gil_scoped_acquire gil;
                 try {
                   holder->get()(log_level_name(level), message);
                 } catch (py::error_already_set& e) {
                   e.discard_as_unraisable("jitwarm log callback");
                 }
               };
             }
             return call_core(
                 [&] { return std::make_unique<Runtime>(std::move(o)); });
           }),
           py::kw_only(), py::arg("cache_dir") = py::none(),
           py::arg("jit_monitor") = py::none(),
           py::arg("jit_record_path") = py::none(), py::arg("log") = py::none(),
           py::arg("no_cache_dir") = py::none(),
           py::arg("system_cache_dir") = py::none(),
           py::arg("cache_max_bytes") = py::none(),
           py::arg("remote_cache") = py::none(),
           py::arg("no_remote_cache") = py::none(),
           py::arg("remote_timeout") = py::none(),
           py::arg("signing_key") = py::none(),
           py::arg("trusted_keys") = py::none(),
           py::arg("remote_cache_mode") = py::none())
      .def(
          "load_plugins",
          [](Runtime& rt, py::object search_path, bool strict, bool isolate,
             py::object probe_timeout) {
            PluginLoadOptions options;
            options.strict = strict;
            options.isolate = isolate;
            if (!probe_timeout.is_none()) {
              options.probe_timeout_seconds = probe_timeout.cast<double>();
            }
            if (py::isinstance<py::str>(search_path)) {
              options.search_path =
                  split_path_list(search_path.cast<std::string>());
            } else if (!search_path.is_none()) {
              for (py::handle p : search_path)
                options.search_path.push_back(path_from(p));
            }
            return call_core([&] { return rt.load_plugins(options); });
          },
          py::arg("search_path") = py::none(), py::arg("strict") = false,
          py::arg("isolate") = false, py::arg("probe_timeout") = py::none())
      .def(
          "load_plugin",
          [](Runtime& rt, py::handle path, bool strict) {
            const std::string p = path_from(path);
            return call_core([&] { return rt.load_plugin(p, strict); });
          },
          py::arg("path"), py::arg("strict") = false)
      .def_property_readonly(
          "load_history", [](const Runtime& rt) { return rt.load_history(); });
}

// Kernels and platforms: what the loaded plugins offer.
void bind_kernels_and_platforms(py::class_<Runtime>& runtime) {
  runtime
      .def("_kernel",
           [](const Runtime& rt, const std::string& name) {
             return make_kernel(call_core([&] { return rt.kernel(name); }));
           })
      .def("kernel_names", &Runtime::kernel_names)
      .def(
          "schema",
          [](const Runtime& rt, const std::string& name) {
            return call_core([&] { return rt.schema(name); });
          },
          py::arg("name"))
      .def(
          "implementations",
          [](const Runtime& rt, const std::string& name) {
            return call_core([&] { return rt.implementations(name); });
          },
          py::arg("name"))
      .def(
          "explain",
          [](const Runtime& rt, const std::string& name) {
            return call_core([&] { return rt.explain(name); });
          },
          py::arg("name"))
      .def("platforms", &Runtime::platforms)
      .def("default_platform",
           [](const Runtime& rt) {
             return call_core([&] { return rt.default_platform(); });
           })
      .def(
          "cpu_fallback_reason",
          [](const Runtime& rt) {
            return call_core([&] { return rt.cpu_fallback_reason(); });
          },
          "Why default_platform() is cpu, the CPU reference, although a GPU "
          "platform is loaded ('cuda has no device here'), or ''. A warmup "
          "that takes the default platform warns of it.")
      .def(
          "target_for",
          [](const Runtime& rt, const std::string& platform, int32_t device) {
            return call_core([&] { return rt.target_for(platform, device); });
          },
          py::arg("platform"), py::arg("device") = 0);
}

// The runtime's caches: counters, settings, what a key would find.
void bind_caches(py::class_<Runtime>& runtime) {
  runtime.def("cache_stats", &Runtime::cache_stats)
      .def("metrics_text", &Runtime::metrics_text,
           "The cache's and the JIT monitor's counters in Prometheus' text "
           "exposition format (jitwarm.prometheus serves them).")
      .def_property_readonly("cache_settings", &Runtime::cache_settings,
                             py::return_value_policy::copy)
      .def("is_cached", &Runtime::is_cached, py::arg("key"))
      .def(
          "explain_miss",
          [](const Runtime& rt, const CompileKey& key) {
            return call_core([&] {
              py::gil_scoped_release unlocked;  // reads every cache entry
              return rt.explain_miss(key);
            });
          },
          py::arg("key"),
          "Whether the key would hit (memory, disk or system layer), and if "
          "not, the entries of its kernel on its platform that come nearest "
          "and what differs; compiles nothing.");
}

// Tuning results (docs/tuning.md).
void bind_tuning(py::class_<Runtime>& runtime) {
  runtime
      .def(
          "tune_candidates",
          [](const Runtime& rt, const CompileKey& key) {
            py::list out;
            for (const TuneConfig& c :
                 call_core([&] { return rt.tune_candidates(key); })) {
              out.append(config_dict(c));
            }
            return out;
          },
          py::arg("key"),
          "The configs the key's implementation can compile it with, the "
          "default first; [] when it is not tunable.")
      .def(
          "tune_result",
          [](const Runtime& rt, const CompileKey& key,
             const std::string& device_kind) {
            return call_core([&] {
              py::gil_scoped_release unlocked;  // may read the cache tiers
              return rt.tune_result(key, device_kind);
            });
          },
          py::arg("key"), py::arg("device_kind"),
          "The stored tuning result of the key on that kind of device, or "
          "None.")
      .def(
          "device_kind",
          [](const Runtime& rt, const std::string& platform, int32_t device) {
            return call_core([&] { return rt.device_kind(platform, device); });
          },
          py::arg("platform") = "", py::arg("device") = 0,
          "The kind of device tuning results are kept per: its model name, "
          "else its target.");
}

// Another compiler's entries in the persistent tiers.
void bind_external_entries(py::class_<Runtime>& runtime) {
  runtime
      .def(
          "store_external_entry",
          [](Runtime& rt, const CompileKey& key, const std::string& fingerprint,
             const py::bytes& binary, const std::string& format,
             const std::string& entry_point) {
            ExternalEntry entry{std::string(binary), format, entry_point};
            return call_core([&] {
              py::gil_scoped_release unlocked;
              return rt.store_external_entry(key, fingerprint, entry);
            });
          },
          py::arg("key"), py::arg("fingerprint"), py::arg("binary"),
          py::arg("format"), py::arg("entry_point") = "")
      .def(
          "load_external_entry",
          [](Runtime& rt, const CompileKey& key,
             const std::string& fingerprint) -> py::object {
            std::optional<ExternalEntry> found = call_core([&] {
              py::gil_scoped_release unlocked;
              return rt.load_external_entry(key, fingerprint);
            });
            if (!found) return py::none();
            return py::make_tuple(py::bytes(found->binary), found->format,
                                  found->entry_point);
          },
          py::arg("key"), py::arg("fingerprint"));
}

// Seal and the JIT monitor.
void bind_monitor(py::class_<Runtime>& runtime) {
  runtime
      .def("seal", &Runtime::seal,
           "From now on a compile on the launch path goes to the JIT monitor.")
      .def_property_readonly("sealed", &Runtime::sealed)
      .def_property(
          "jit_monitor",
          [](const Runtime& rt) { return monitor_name(rt.jit_monitor()); },
          [](Runtime& rt, const std::string& mode) {
            rt.set_jit_monitor(monitor_from(mode));
          },
          "The JIT monitor's mode after seal: 'off', 'warn' or 'error'.")
      .def(
          "_set_jit_record_path",
          [](Runtime& rt, py::object path) {
            rt.set_jit_record_path(path.is_none() ? std::string()
                                                  : path_from(path));
          },
          py::arg("path"));
}

}  // namespace

void bind_runtime(py::module_& m) {
  bind_int_spec(m);
  bind_installation(m);
  bind_specialization(m);
  bind_param_spec(m);
  bind_tuning_results(m);
  bind_compile_key(m);
  bind_schemas(m);
  bind_reports(m);
  // The runtime last: its methods' signatures name the types above.
  py::class_<Runtime> runtime(m, "Runtime");
  bind_construction_and_plugins(runtime);
  bind_kernels_and_platforms(runtime);
  bind_caches(runtime);
  bind_tuning(runtime);
  bind_external_entries(runtime);
  bind_runtime_warmup(runtime);
  bind_monitor(runtime);
}

}  // namespace jitwarm::python
