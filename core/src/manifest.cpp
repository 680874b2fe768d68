// Warmup manifests (TOML): reading them into WarmupRequests, and writing the
// entry that reproduces one key (the JIT monitor's record mode).
//
//   version = 1
//   [[kernel]]
//   name = "vllm.model_executor.layers.layernorm.rms_norm"
//   platform = "cuda"                     # optional
//   [kernel.params]
//   x = { dtype = ["float16", "bfloat16"], aligned = [true, false] }
//   H = { range = [1, 8193] }             # start, stop[, step]
//   x_stride = [1, 16, 17]
//   eps = 1e-6
//   [[kernel.zip]]                        # lists that vary in lockstep
//   N = [1, 128]
//   D = [64, 96]
//   [[kernel.exclude]]                    # combinations to skip
//   H = 1
//   x = "float16"
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "bounded_file.hpp"
#include "errors.hpp"
#include "toml_parser.hpp"

namespace jitwarm {
namespace {

namespace fs = std::filesystem;
using detail::fail;

[[noreturn]] void bad(const std::string& source, const toml::node& node,
                      const std::string& what) {
  fail(JW_ERROR_INVALID_ARGUMENT, "{}:{}:{}: {}", source,
       node.source().begin.line, node.source().begin.column, what);
}

std::string where(const std::string& source, const toml::node& node) {
  return fmt::format("{}:{}", source, node.source().begin.line);
}

// "123", "-5", "18446744073709551615": integers too large for TOML's int64
// travel as strings. nullopt when the text is not an integer at all; an
// integer outside [-2^63, 2^64), which no argument can hold, is an error
// here, where the file and line are known.
std::optional<__int128> parse_integer_text(const std::string& source,
                                           const toml::node& node,
                                           std::string_view text) {
  const std::string_view whole = text;
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  constexpr __int128 kLimit = static_cast<__int128>(1) << 64;
  __int128 value = 0;
  bool overflow = false;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (!overflow) value = value * 10 + (c - '0');
    overflow = overflow || value >= kLimit;
  }
  if (negative) value = -value;
  if (overflow || value < -(kLimit >> 1)) {
    bad(source, node,
        fmt::format("integer {} overflows: it is outside [-2^63, 2^64)",
                    whole));
  }
  return value;
}

void parse_value(const std::string& source, const toml::node& node,
                 std::vector<WarmupValue>& out, std::vector<IntRange>* ranges);

// toml++ tables iterate in key order; axes and zip groups must keep the
// order of the file, because keys are produced (and deduplicated) in it.
std::vector<std::pair<std::string, const toml::node*>> in_file_order(
    const toml::table& t) {
  std::vector<std::pair<std::string, const toml::node*>> out;
  for (const auto& [k, v] : t) out.emplace_back(std::string(k.str()), &v);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const auto& pa = a.second->source().begin;
    const auto& pb = b.second->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return out;
}

std::vector<WarmupValue> list_of(const std::string& source,
                                 const toml::node& node) {
  std::vector<WarmupValue> out;
  parse_value(source, node, out, nullptr);
  return out;
}

std::vector<TensorChoice> tensor_choices(const std::string& source,
                                         const toml::table& t) {
  std::vector<jw_dtype> dtypes;
  std::vector<bool> aligned;
  std::vector<std::vector<int64_t>> strides;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "dtype") {
      const auto add = [&](const toml::node& n) {
        const auto* s = n.as_string();
        if (s == nullptr)
          bad(source, n, "dtype must be a string such as \"float16\"");
        auto d = parse_dtype(s->get());
        if (!d) bad(source, n, fmt::format("unknown dtype '{}'", s->get()));
        dtypes.push_back(*d);
      };
      if (const auto* a = v.as_array()) {
        for (const auto& n : *a) add(n);
      } else {
        add(v);
      }
    } else if (key == "aligned") {
      const auto add = [&](const toml::node& n) {
        const auto* b = n.as_boolean();
        if (b == nullptr) bad(source, n, "aligned must be true or false");
        aligned.push_back(b->get());
      };
      if (const auto* a = v.as_array()) {
        for (const auto& n : *a) add(n);
      } else {
        add(v);
      }
    } else if (key == "strides") {
      const auto* a = v.as_array();
      if (a == nullptr)
        bad(source, v, "strides must be a list of lists of integers");
      const auto add = [&](const toml::array& list) {
        std::vector<int64_t> s;
        for (const auto& n : list) {
          const auto* i = n.as_integer();
          if (i == nullptr) bad(source, n, "a stride must be an integer");
          s.push_back(i->get());
        }
        strides.push_back(std::move(s));
      };
      // One stride list ([1, 16]) or a list of them ([[1, 16], [16, 1]]),
      // never a mix.
      if (!a->empty() && a->front().is_array()) {
        for (const auto& n : *a) {
          const auto* list = n.as_array();
          if (list == nullptr)
            bad(source, n,
                "strides must be one list of integers or a list of lists");
          add(*list);
        }
      } else {
        add(*a);
      }
    } else {
      bad(source, v,
          fmt::format("unknown tensor field '{}' (use dtype, aligned, strides)",
                      key));
    }
  }
  if (dtypes.empty()) dtypes.push_back(JW_DTYPE_INVALID);  // follow the schema
  if (aligned.empty()) aligned.push_back(true);
  if (strides.empty()) strides.emplace_back();
  std::vector<TensorChoice> out;
  for (jw_dtype d : dtypes) {
    for (bool a : aligned) {
      for (const auto& s : strides) out.push_back(TensorChoice{d, a, s});
    }
  }
  return out;
}

void parse_value(const std::string& source, const toml::node& node,
                 std::vector<WarmupValue>& out, std::vector<IntRange>* ranges) {
  if (const auto* i = node.as_integer()) {
    out.emplace_back(__int128{i->get()});
  } else if (const auto* f = node.as_floating_point()) {
    out.emplace_back(f->get());
  } else if (const auto* b = node.as_boolean()) {
    out.emplace_back(b->get());
  } else if (const auto* s = node.as_string()) {
    if (auto d = parse_dtype(s->get())) {
      out.emplace_back(TensorChoice{*d, true, {}});
    } else if (auto big = parse_integer_text(source, node, s->get())) {
      out.emplace_back(*big);
    } else {
      bad(source, node,
          fmt::format("'{}' is neither a dtype nor an integer", s->get()));
    }
  } else if (const auto* a = node.as_array()) {
    for (const auto& n : *a) {
      if (n.is_array()) bad(source, n, "nested lists are not values");
      parse_value(source, n, out, ranges);
    }
  } else if (const auto* t = node.as_table()) {
    if (t->contains("range") || t->contains("values")) {
      for (const auto& [k, v] : *t) {
        const std::string key(k.str());
        if (key == "values") {
          parse_value(source, v, out, ranges);
        } else if (key == "range") {
          if (ranges == nullptr) bad(source, v, "a range cannot be used here");
          const auto* a = v.as_array();
          if (a == nullptr || a->size() < 2 || a->size() > 3) {
            bad(source, v,
                "range must be [start, stop] or [start, stop, step]");
          }
          int64_t parts[3] = {0, 0, 1};
          for (std::size_t p = 0; p < a->size(); ++p) {
            const auto* i = (*a)[p].as_integer();
            if (i == nullptr)
              bad(source, (*a)[p], "range bounds must be integers");
            parts[p] = i->get();
          }
          if (parts[2] <= 0) bad(source, v, "range step must be positive");
          ranges->push_back(IntRange{parts[0], parts[1], parts[2]});
        } else {
          bad(source, v,
              fmt::format("unknown field '{}' (use range or values)", key));
        }
      }
    } else {
      for (auto& c : tensor_choices(source, *t)) out.emplace_back(std::move(c));
    }
  } else {
    bad(source, node, "unsupported value");
  }
}

WarmupRequest parse_kernel(const std::string& source, const toml::table& k) {
  WarmupRequest r;
  r.origin = where(source, k);
  for (const auto& [key_name, v] : k) {
    const std::string key(key_name.str());
    if (key == "name") {
      const auto* s = v.as_string();
      if (s == nullptr || s->get().empty())
        bad(source, v, "name must be a kernel name");
      r.kernel_name = s->get();
    } else if (key == "platform") {
      const auto* s = v.as_string();
      if (s == nullptr) bad(source, v, "platform must be a string");
      r.platform = s->get();
    } else if (key == "params") {
      const auto* t = v.as_table();
      if (t == nullptr) bad(source, v, "params must be a table");
      for (const auto& [pname, pv] : in_file_order(*t)) {
        WarmupAxis axis;
        axis.origin = where(source, *pv);
        parse_value(source, *pv, axis.values, &axis.ranges);
        r.axes.emplace_back(pname, std::move(axis));
      }
    } else if (key == "zip") {
      const auto* a = v.as_array();
      if (a == nullptr)
        bad(source, v, "zip must be a list of tables ([[kernel.zip]])");
      for (const auto& group_node : *a) {
        const auto* group = group_node.as_table();
        if (group == nullptr)
          bad(source, group_node, "each zip group is a table");
        std::vector<std::pair<std::string, WarmupAxis>> zipped;
        for (const auto& [pname, pv] : in_file_order(*group)) {
          WarmupAxis axis;
          axis.origin = where(source, *pv);
          axis.values = list_of(source, *pv);
          zipped.emplace_back(pname, std::move(axis));
        }
        r.zipped.push_back(std::move(zipped));
      }
    } else if (key == "exclude") {
      const auto* a = v.as_array();
      if (a == nullptr)
        bad(source, v, "exclude must be a list of tables ([[kernel.exclude]])");
      for (const auto& rule_node : *a) {
        const auto* rule = rule_node.as_table();
        if (rule == nullptr)
          bad(source, rule_node, "each exclude rule is a table");
        std::vector<std::pair<std::string, WarmupValue>> entries;
        for (const auto& [pname, pv] : *rule) {
          auto values = list_of(source, pv);
          if (values.size() != 1)
            bad(source, pv, "an exclude rule gives one value per parameter");
          entries.emplace_back(std::string(pname.str()),
                               std::move(values.front()));
        }
        r.exclude.push_back(std::move(entries));
      }
    } else {
      bad(source, v,
          fmt::format("unknown kernel field '{}' (use name, platform, params, "
                      "zip, exclude)",
                      key));
    }
  }
  if (r.kernel_name.empty()) bad(source, k, "a [[kernel]] entry needs a name");
  return r;
}

std::string toml_int(__int128 v) {
  // TOML integers are int64; larger values travel as strings.
  if (v >= INT64_MIN && v <= INT64_MAX) return int128_to_string(v);
  return "\"" + int128_to_string(v) + "\"";
}

}  // namespace

WarmupManifest parse_warmup_manifest(std::string_view toml_text,
                                     const std::string& source_name) {
  toml::table root;
  try {
    root = detail::parse_untrusted_toml(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}",
         detail::toml_error_text(source_name, e));
  }
  WarmupManifest manifest;
  manifest.source = source_name;
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key == "version") {
      const auto* i = v.as_integer();
      if (i == nullptr || i->get() != 1) {
        bad(source_name, v,
            "unsupported manifest version (this build reads version 1)");
      }
    } else if (key == "kernel") {
      const auto* a = v.as_array();
      if (a == nullptr)
        bad(source_name, v, "kernel must be a list of tables ([[kernel]])");
      for (const auto& n : *a) {
        const auto* t = n.as_table();
        if (t == nullptr) bad(source_name, n, "each [[kernel]] is a table");
        manifest.requests.push_back(parse_kernel(source_name, *t));
      }
    } else if (key == "tune") {
      // Arguments to tune the kernels with, read by `jitwarm tune`
      // (docs/tuning.md, tools/tune_tables.cpp: each table's kernel and
      // args, after this check); a warmup compiles keys, so it only checks
      // their form here.
      const auto* a = v.as_array();
      if (a == nullptr)
        bad(source_name, v, "tune must be a list of tables ([[tune]])");
      for (const auto& n : *a) {
        if (!n.is_table()) bad(source_name, n, "each [[tune]] is a table");
      }
    } else {
      bad(source_name, v,
          fmt::format("unknown top-level field '{}' (use version, kernel, "
                      "tune)",
                      key));
    }
  }
  return manifest;
}

namespace {

// The installed manifests, by the names a command line takes ("kernel-set").
std::vector<std::string> installed_manifest_names() {
  std::vector<std::string> names;
  std::error_code error;
  const fs::path directory = fs::path(installed_data_directory()) / "manifests";
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    if (entry.path().extension() == ".toml")
      names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// What to add to "cannot read manifest NAME": the installed manifest meant.
std::string installed_manifest_hint(const std::string& path) {
  if (path.find('/') != std::string::npos) return "";
  const std::vector<std::string> names = installed_manifest_names();
  if (names.empty()) return "";
  return fmt::format(
      "{} (installed manifests, in {}/manifests: {})",
      did_you_mean(closest_spellings(fs::path(path).stem().string(), names)),
      installed_data_directory(), fmt::join(names, ", "));
}

}  // namespace

std::string warmup_manifest_path(const std::string& path) {
  std::error_code error;
  if (path.empty() || fs::path(path).is_absolute() || fs::exists(path, error))
    return path;
  const fs::path data = installed_data_directory();
  std::vector<fs::path> candidates = {data / path};
  if (path.find('/') == std::string::npos) {
    candidates.push_back(data / "manifests" / path);
    candidates.push_back(data / "manifests" / (path + ".toml"));
  }
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return candidate.string();
  }
  return path;
}

WarmupManifestFile read_warmup_manifest_file(const std::string& path) {
  std::string file_path = warmup_manifest_path(path);
  detail::FileContents file = detail::read_bounded_file(
      file_path, detail::kMaxUserFileBytes, detail::Symlinks::follow);
  if (!file.ok()) {
    fail(JW_ERROR_IO, "cannot read manifest {}: it {}{}", path, file.why,
         file_path == path ? installed_manifest_hint(path) : "");
  }
  return WarmupManifestFile{std::move(file_path), std::move(file.bytes)};
}

WarmupManifest load_warmup_manifest(const std::string& path) {
  const WarmupManifestFile file = read_warmup_manifest_file(path);
  return parse_warmup_manifest(file.text, file.path);
}

std::string manifest_entry_for_key(const KernelSchema& schema,
                                   const CompileKey& key,
                                   std::string_view platform) {
  WarmupInputs inputs = warmup_inputs_for(schema, key);  // also checks the key
  std::string params;
  for (std::size_t i = 0; i < schema.params().size(); ++i) {
    const ParamDesc& p = schema.params()[i];
    const jw_arg_value& a = inputs.args[i];
    std::string value;
    if (a.kind == JW_VALUE_WARMUP_TENSOR) {
      const jw_tensor_meta& m = *a.value.meta;
      value =
          fmt::format("{{ dtype = \"{}\", aligned = {}", dtype_name(m.dtype),
                      (m.flags & JW_TENSOR_ALIGNED_16) != 0 ? "true" : "false");
      if ((m.flags & JW_TENSOR_HAS_STRIDES) != 0) {
        value += ", strides = [[";
        for (uint32_t d = 0; d < m.rank; ++d)
          value += (d ? ", " : "") + std::to_string(m.strides[d]);
        value += "]]";
      }
      value += " }";
    } else {
      const jw_scalar& s = a.value.scalar;
      switch (s.kind) {
        case JW_SCALAR_INT: value = toml_int(s.value.i); break;
        case JW_SCALAR_UINT:
          value = toml_int(static_cast<__int128>(s.value.u));
          break;
        case JW_SCALAR_FLOAT: value = fmt::format("{:.17g}", s.value.f); break;
        case JW_SCALAR_BOOL: value = s.value.i != 0 ? "true" : "false"; break;
        default: value = "0"; break;
      }
      if (s.kind == JW_SCALAR_FLOAT &&
          value.find_first_of(".eEn") == std::string::npos)
        value += ".0";
    }
    params +=
        fmt::format("{}{} = {}", params.empty() ? "" : ", ", p.name, value);
  }
  return fmt::format(
      "# {}\n[[kernel]]\nname = \"{}\"\nplatform = \"{}\"\nparams = {{ {} }}\n",
      key.text(), schema.name(), platform, params);
}

}  // namespace jitwarm
