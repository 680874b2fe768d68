// argument_tables.cpp — args tables read into cases (see
// argument_tables.hpp).
#include "argument_tables.hpp"

#include <jitwarm/plugin.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace jitwarm::device_args {
namespace {

// An integer appended in `dtype`'s bytes: its low bytes (little-endian).
void append_integer(std::vector<unsigned char>& bytes, jw_dtype dtype,
                    int64_t value) {
  unsigned char raw[sizeof value];
  std::memcpy(raw, &value, sizeof value);
  bytes.insert(bytes.end(), raw, raw + plugin::dtype_size(dtype));
}

// A number as a table writes it, appended in `dtype`'s bytes: rounded to a
// float dtype, else truncated to an integer.
void append_number(std::vector<unsigned char>& bytes, jw_dtype dtype,
                   double value) {
  if (is_floating_dtype(dtype)) {
    append_float(bytes, dtype, value);
  } else {
    append_integer(bytes, dtype, static_cast<int64_t>(value));
  }
}

}  // namespace

std::shared_ptr<const toml::table> parse_document(std::string_view text,
                                                  const std::string& origin) {
  try {
    return std::make_shared<const toml::table>(
        jitwarm::detail::parse_untrusted_toml(text, origin));
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(jitwarm::detail::toml_error_text(origin, e));
  }
}

int line_of(const toml::node& node) {
  return static_cast<int>(node.source().begin.line);
}

ArgumentReader::ArgumentReader(std::string file, KernelSchema schema,
                               std::string what)
    : file_(std::move(file)),
      what_(std::move(what)),
      schema_(std::move(schema)) {
  for (const ParamDesc& p : schema_.params()) {
    jw_param_desc d{};
    d.struct_size = sizeof(d);
    d.name = p.name.c_str();
    d.kind = p.kind;
    d.flags = p.flags;
    d.allowed_dtypes = p.allowed_dtypes;
    d.rank = p.rank;
    d.default_value = p.default_value;
    d.same_dtype_as =
        p.same_dtype_as.empty() ? nullptr : p.same_dtype_as.c_str();
    params_.push_back(d);
  }
  c_.struct_size = sizeof(c_);
  c_.name = schema_.name().c_str();
  c_.params = params_.data();
  c_.num_params = static_cast<uint32_t>(params_.size());
}

void ArgumentReader::malformed(int line, const std::string& why) const {
  throw std::runtime_error(
      fmt::format("{}:{}: {}: {}", file_, line, what_, why));
}

void ArgumentReader::only_keys(const toml::table& table,
                               std::initializer_list<std::string_view> known,
                               std::string_view where) const {
  for (const auto& [key, value] : table) {
    if (std::find(known.begin(), known.end(), key.str()) == known.end()) {
      std::string list;
      for (std::string_view k : known) {
        list += (list.empty() ? "" : ", ") + std::string(k);
      }
      malformed(line_of(value),
                fmt::format("unknown key '{}' in {} (known: {})", key.str(),
                            where, list));
    }
  }
}

// The dtype a table gives a tensor that names none.
jw_dtype ArgumentReader::default_dtype(const toml::table& args,
                                       std::size_t index, int depth) const {
  const ParamDesc& p = schema_.params()[index];
  const int tied = schema_.same_dtype_index(index);
  if (tied >= 0 && depth < 8) {
    const toml::node* other = args.get(schema_.params()[tied].name);
    if (other != nullptr && other->is_table()) {
      if (const auto name = other->as_table()->get("dtype");
          name != nullptr && name->is_string()) {
        if (auto d = plugin::dtype_from_name(name->as_string()->get())) {
          return *d;
        }
      }
    }
    return default_dtype(args, static_cast<std::size_t>(tied), depth + 1);
  }
  for (int d = JW_DTYPE_BOOL; d < JW_DTYPE_COUNT; ++d) {
    if (p.allowed_dtypes == 0 || (p.allowed_dtypes & JW_DTYPE_BIT(d)) != 0) {
      return p.allowed_dtypes == 0 ? JW_DTYPE_FLOAT32
                                   : static_cast<jw_dtype>(d);
    }
  }
  return JW_DTYPE_FLOAT32;
}

std::vector<unsigned char> ArgumentReader::fill_bytes(const toml::table& spec,
                                                      int line, jw_dtype dtype,
                                                      int64_t count,
                                                      bool output,
                                                      Rng& rng) const {
  if (const toml::node* values = spec.get("values")) {
    const toml::array* list = values->as_array();
    if (list == nullptr || static_cast<int64_t>(list->size()) != count) {
      malformed(line, fmt::format("'values' must list {} elements", count));
    }
    std::vector<unsigned char> bytes;
    bytes.reserve(list->size() * plugin::dtype_size(dtype));
    for (const toml::node& v : *list) {
      double value = 0;
      if (const auto* i = v.as_integer()) {
        value = static_cast<double>(i->get());
      } else if (const auto* f = v.as_floating_point()) {
        value = f->get();
      } else {
        malformed(line, "'values' must be numbers");
      }
      append_number(bytes, dtype, value);
    }
    return bytes;
  }
  const toml::node* fill_node = spec.get("fill");
  if (fill_node != nullptr && !fill_node->is_string()) {
    malformed(line, "'fill' is a name: random, zeros, ones or iota");
  }
  const std::string fill = fill_node != nullptr ? fill_node->as_string()->get()
                                                : (output ? "zeros" : "random");
  if (fill == "random") {
    if (is_floating_dtype(dtype)) {
      return random_floats(rng, dtype, count, -1.0, 1.0);
    }
    std::vector<unsigned char> bytes;
    bytes.reserve(static_cast<std::size_t>(count) * plugin::dtype_size(dtype));
    for (int64_t i = 0; i < count; ++i) {
      append_integer(bytes, dtype,
                     rng.uniform_int(0, dtype == JW_DTYPE_BOOL ? 1 : 99));
    }
    return bytes;
  }
  if (fill == "zeros" || fill == "ones" || fill == "iota") {
    std::vector<unsigned char> bytes;
    bytes.reserve(static_cast<std::size_t>(count) * plugin::dtype_size(dtype));
    for (int64_t i = 0; i < count; ++i) {
      const double value = fill == "zeros" ? 0 : fill == "ones" ? 1 : i;
      append_number(bytes, dtype, value);
    }
    return bytes;
  }
  malformed(line, "fill '" + fill + "' is not random, zeros, ones or iota");
}

Case ArgumentReader::build(const toml::table& args, int line, Rng& rng,
                           bool with_data) const {
  CaseBuilder builder(c_);
  for (const auto& [key, value] : args) {
    if (schema_.index_of(key.str()) < 0) {
      malformed(line_of(value), "'" + std::string(key.str()) +
                                    "' is not a parameter of " +
                                    schema_.name());
    }
  }
  for (std::size_t i = 0; i < schema_.params().size(); ++i) {
    const ParamDesc& p = schema_.params()[i];
    const toml::node* value = args.get(p.name);
    if (p.kind == JW_PARAM_TENSOR) {
      const toml::table* spec = value != nullptr ? value->as_table() : nullptr;
      if (spec == nullptr) {
        malformed(line, "tensor '" + p.name + "' needs a table with its shape");
      }
      const int spec_line = line_of(*value);
      std::vector<int64_t> shape;
      const toml::array* dims = spec->get("shape") != nullptr
                                    ? spec->get("shape")->as_array()
                                    : nullptr;
      if (dims == nullptr)
        malformed(spec_line, "'" + p.name + "' needs a shape");
      for (const toml::node& d : *dims) {
        const auto* n = d.as_integer();
        if (n == nullptr || n->get() < 0) {
          malformed(spec_line, "'" + p.name + "': extents are counts");
        }
        shape.push_back(n->get());
      }
      if (shape.size() > JW_MAX_RANK) {
        malformed(spec_line,
                  fmt::format("'{}': {} extents, more than a tensor has ({})",
                              p.name, shape.size(), JW_MAX_RANK));
      }
      jw_dtype dtype = default_dtype(args, i);
      if (const toml::node* name = spec->get("dtype")) {
        const auto d = name->is_string()
                           ? plugin::dtype_from_name(name->as_string()->get())
                           : std::nullopt;
        if (!d) malformed(spec_line, "'" + p.name + "': not a dtype name");
        dtype = *d;
      }
      // Checked: the buffer is made on the host, then on the device.
      constexpr int64_t kMaxBytes = int64_t{1} << 40;
      int64_t count = 1;
      for (int64_t d : shape) {
        if (__builtin_mul_overflow(count, d, &count) ||
            count >
                kMaxBytes / static_cast<int64_t>(plugin::dtype_size(dtype))) {
          malformed(spec_line,
                    fmt::format("'{}': the shape holds more than {} bytes",
                                p.name, kMaxBytes));
        }
      }
      const bool output = p.has_flag(JW_PARAM_OUTPUT);
      CaseBuilder::TensorOptions options;
      only_keys(*spec, {"shape", "dtype", "fill", "values", "misaligned"},
                "a tensor's table");
      if (const toml::node* misaligned = spec->get("misaligned")) {
        if (!misaligned->is_boolean()) {
          malformed(spec_line,
                    "'" + p.name + "': 'misaligned' is true or false");
        }
        options.misaligned = misaligned->as_boolean()->get();
      }
      options.comparison = !output                    ? Comparison::none
                           : is_floating_dtype(dtype) ? Comparison::floating
                                                      : Comparison::exact;
      builder.tensor(
          p.name, dtype, shape,
          with_data
              ? fill_bytes(*spec, spec_line, dtype, count, output, rng)
              : std::vector<unsigned char>(static_cast<std::size_t>(count) *
                                           plugin::dtype_size(dtype)),
          options);
      continue;
    }
    if (value == nullptr) {
      if (!p.has_flag(JW_PARAM_HAS_DEFAULT)) {
        malformed(line, "'" + p.name + "' needs a value");
      }
      if (p.default_value.kind == JW_SCALAR_FLOAT) {
        builder.floating(p.name, p.default_value.value.f);
      } else {
        builder.integer(p.name, p.default_value.value.i);
      }
    } else if (const auto* i = value->as_integer()) {
      builder.integer(p.name, i->get());
    } else if (const auto* f = value->as_floating_point()) {
      builder.floating(p.name, f->get());
    } else if (const auto* b = value->as_boolean()) {
      builder.integer(p.name, b->get() ? 1 : 0);
    } else {
      malformed(line_of(*value), "'" + p.name + "' needs a number");
    }
  }
  return builder.finish();
}

}  // namespace jitwarm::device_args
