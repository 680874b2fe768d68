// Reading [[case]] tables of kernel descriptors into CaseRecipes.
#include "source_kernel_cases.hpp"

#include <jitwarm/plugin.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "kernel_set.hpp"
#include "toml_parser.hpp"

namespace jitwarm::conformance {
namespace {

// A descriptor's case tables and its kernel's schema as CaseBuilder reads
// it (a C view of the schema).
struct DescriptorCases {
  std::string origin;
  KernelSchema schema;
  std::string what = "conformance case";  // what its messages call a table
  std::vector<jw_param_desc> params;      // point into `schema`
  jw_kernel_schema c{};
  // Each [[case]]: its name, its args table, and the line it starts on.
  struct Table {
    std::string name;
    std::shared_ptr<const toml::table> args;
    int line = 0;
  };
  std::vector<Table> tables;
};

std::mutex g_mutex;
std::map<std::string, std::shared_ptr<DescriptorCases>, std::less<>>&
source_cases() {
  static auto* const cases =
      new std::map<std::string, std::shared_ptr<DescriptorCases>,
                   std::less<>>();
  return *cases;
}

[[noreturn]] void malformed(const DescriptorCases& s, int line,
                            const std::string& what) {
  throw std::runtime_error(
      fmt::format("{}:{}: {}: {}", s.origin, line, s.what, what));
}

int line_of(const toml::node& node) {
  return static_cast<int>(node.source().begin.line);
}

// A key the table may not have is an error, not silently ignored.
void only_keys(const DescriptorCases& s, const toml::table& table,
               std::initializer_list<std::string_view> known,
               std::string_view what) {
  for (const auto& [key, value] : table) {
    if (std::find(known.begin(), known.end(), key.str()) == known.end()) {
      std::string list;
      for (std::string_view k : known) {
        list += (list.empty() ? "" : ", ") + std::string(k);
      }
      malformed(s, line_of(value),
                fmt::format("unknown key '{}' in {} (known: {})", key.str(),
                            what, list));
    }
  }
}

bool is_float(jw_dtype d) {
  return d == JW_DTYPE_FLOAT16 || d == JW_DTYPE_BFLOAT16 ||
         d == JW_DTYPE_FLOAT32 || d == JW_DTYPE_FLOAT64;
}

// The dtype a case gives a tensor that names none.
jw_dtype default_dtype(const DescriptorCases& s, const toml::table& args,
                       std::size_t index, int depth = 0) {
  const ParamDesc& p = s.schema.params()[index];
  const int tied = s.schema.same_dtype_index(index);
  if (tied >= 0 && depth < 8) {
    const toml::node* other = args.get(s.schema.params()[tied].name);
    if (other != nullptr && other->is_table()) {
      if (const auto name = other->as_table()->get("dtype");
          name != nullptr && name->is_string()) {
        if (auto d = plugin::dtype_from_name(name->as_string()->get())) {
          return *d;
        }
      }
    }
    return default_dtype(s, args, static_cast<std::size_t>(tied), depth + 1);
  }
  for (int d = JW_DTYPE_BOOL; d < JW_DTYPE_COUNT; ++d) {
    if (p.allowed_dtypes == 0 || (p.allowed_dtypes & JW_DTYPE_BIT(d)) != 0) {
      return p.allowed_dtypes == 0 ? JW_DTYPE_FLOAT32
                                   : static_cast<jw_dtype>(d);
    }
  }
  return JW_DTYPE_FLOAT32;
}

std::vector<unsigned char> fill_bytes(const DescriptorCases& s,
                                      const toml::table& spec, int line,
                                      jw_dtype dtype, int64_t count,
                                      bool output, Rng& rng) {
  if (const toml::node* values = spec.get("values")) {
    const toml::array* list = values->as_array();
    if (list == nullptr || static_cast<int64_t>(list->size()) != count) {
      malformed(s, line, fmt::format("'values' must list {} elements", count));
    }
    std::vector<unsigned char> bytes;
    for (const toml::node& v : *list) {
      double value = 0;
      if (const auto* i = v.as_integer()) {
        value = static_cast<double>(i->get());
      } else if (const auto* f = v.as_floating_point()) {
        value = f->get();
      } else {
        malformed(s, line, "'values' must be numbers");
      }
      const std::vector<unsigned char> one =
          is_float(dtype) ? encode_float(dtype, value) : [&] {
            const auto n = static_cast<int64_t>(value);
            std::vector<unsigned char> b(plugin::dtype_size(dtype));
            std::memcpy(b.data(), &n, b.size());  // little-endian
            return b;
          }();
      bytes.insert(bytes.end(), one.begin(), one.end());
    }
    return bytes;
  }
  const toml::node* fill_node = spec.get("fill");
  if (fill_node != nullptr && !fill_node->is_string()) {
    malformed(s, line, "'fill' is a name: random, zeros, ones or iota");
  }
  const std::string fill = fill_node != nullptr ? fill_node->as_string()->get()
                                                : (output ? "zeros" : "random");
  if (fill == "random") {
    if (is_float(dtype)) return random_floats(rng, dtype, count, -1.0, 1.0);
    std::vector<unsigned char> bytes;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t n = rng.uniform_int(0, dtype == JW_DTYPE_BOOL ? 1 : 99);
      const std::size_t size = plugin::dtype_size(dtype);
      const auto* first = reinterpret_cast<const unsigned char*>(&n);
      bytes.insert(bytes.end(), first, first + size);
    }
    return bytes;
  }
  if (fill == "zeros" || fill == "ones" || fill == "iota") {
    std::vector<unsigned char> bytes;
    for (int64_t i = 0; i < count; ++i) {
      const double value = fill == "zeros" ? 0 : fill == "ones" ? 1 : i;
      const std::vector<unsigned char> one =
          is_float(dtype) ? encode_float(dtype, value) : [&] {
            const auto n = static_cast<int64_t>(value);
            std::vector<unsigned char> b(plugin::dtype_size(dtype));
            std::memcpy(b.data(), &n, b.size());
            return b;
          }();
      bytes.insert(bytes.end(), one.begin(), one.end());
    }
    return bytes;
  }
  malformed(s, line, "fill '" + fill + "' is not random, zeros, ones or iota");
}

// with_data false: every buffer zero, not filled (only the metadata is
// wanted; filling large tensors takes seconds).
Case build_case(const DescriptorCases& s, const DescriptorCases::Table& table,
                Rng& rng, bool with_data = true) {
  CaseBuilder builder(s.c);
  const toml::table& args = *table.args;
  for (const auto& [key, value] : args) {
    if (s.schema.index_of(key.str()) < 0) {
      malformed(s, line_of(value),
                "'" + std::string(key.str()) + "' is not a parameter of " +
                    s.schema.name());
    }
  }
  for (std::size_t i = 0; i < s.schema.params().size(); ++i) {
    const ParamDesc& p = s.schema.params()[i];
    const toml::node* value = args.get(p.name);
    if (p.kind == JW_PARAM_TENSOR) {
      const toml::table* spec = value != nullptr ? value->as_table() : nullptr;
      if (spec == nullptr) {
        malformed(s, table.line,
                  "tensor '" + p.name + "' needs a table with its shape");
      }
      const int line = line_of(*value);
      std::vector<int64_t> shape;
      const toml::array* dims = spec->get("shape") != nullptr
                                    ? spec->get("shape")->as_array()
                                    : nullptr;
      if (dims == nullptr) malformed(s, line, "'" + p.name + "' needs a shape");
      for (const toml::node& d : *dims) {
        const auto* n = d.as_integer();
        if (n == nullptr || n->get() < 0) {
          malformed(s, line, "'" + p.name + "': extents are counts");
        }
        shape.push_back(n->get());
      }
      if (shape.size() > JW_MAX_RANK) {
        malformed(s, line,
                  fmt::format("'{}': {} extents, more than a tensor has ({})",
                              p.name, shape.size(), JW_MAX_RANK));
      }
      jw_dtype dtype = default_dtype(s, args, i);
      if (const toml::node* name = spec->get("dtype")) {
        const auto d = name->is_string()
                           ? plugin::dtype_from_name(name->as_string()->get())
                           : std::nullopt;
        if (!d) malformed(s, line, "'" + p.name + "': not a dtype name");
        dtype = *d;
      }
      // Checked: the buffer is made on the host, then on the device.
      constexpr int64_t kMaxBytes = int64_t{1} << 40;
      int64_t count = 1;
      for (int64_t d : shape) {
        if (__builtin_mul_overflow(count, d, &count) ||
            count >
                kMaxBytes / static_cast<int64_t>(plugin::dtype_size(dtype))) {
          malformed(s, line,
                    fmt::format("'{}': the shape holds more than {} bytes",
                                p.name, kMaxBytes));
        }
      }
      const bool output = p.has_flag(JW_PARAM_OUTPUT);
      CaseBuilder::TensorOptions options;
      only_keys(s, *spec, {"shape", "dtype", "fill", "values", "misaligned"},
                "a tensor's table");
      if (const toml::node* misaligned = spec->get("misaligned")) {
        if (!misaligned->is_boolean()) {
          malformed(s, line, "'" + p.name + "': 'misaligned' is true or false");
        }
        options.misaligned = misaligned->as_boolean()->get();
      }
      options.comparison = !output           ? Comparison::none
                           : is_float(dtype) ? Comparison::floating
                                             : Comparison::exact;
      builder.tensor(
          p.name, dtype, shape,
          with_data
              ? fill_bytes(s, *spec, line, dtype, count, output, rng)
              : std::vector<unsigned char>(static_cast<std::size_t>(count) *
                                           plugin::dtype_size(dtype)),
          options);
      continue;
    }
    if (value == nullptr) {
      if (!p.has_flag(JW_PARAM_HAS_DEFAULT)) {
        malformed(s, table.line, "'" + p.name + "' needs a value");
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
      malformed(s, line_of(*value), "'" + p.name + "' needs a number");
    }
  }
  return builder.finish();
}

// A parsed document that tables point into (std::shared_ptr's aliasing
// form), because toml++ drops a node's source lines when it is copied and
// the messages name them.
std::shared_ptr<const toml::table> parse_document(std::string_view text,
                                                  const std::string& origin) {
  try {
    return std::make_shared<const toml::table>(
        jitwarm::detail::parse_untrusted_toml(text, origin));
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(jitwarm::detail::toml_error_text(origin, e));
  }
}

// Cases of `schema` read from `origin`, with the C view CaseBuilder reads.
std::shared_ptr<DescriptorCases> make_cases(const std::string& origin,
                                            KernelSchema schema) {
  auto s = std::make_shared<DescriptorCases>();
  s->origin = origin;
  s->schema = std::move(schema);
  for (const ParamDesc& p : s->schema.params()) {
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
    s->params.push_back(d);
  }
  s->c.struct_size = sizeof(s->c);
  s->c.name = s->schema.name().c_str();
  s->c.params = s->params.data();
  s->c.num_params = static_cast<uint32_t>(s->params.size());
  return s;
}

// The [[case]] tables of a descriptor, with the schema `schema_of` gives
// for its [kernel] name; nullptr when it has none.
std::shared_ptr<DescriptorCases> read(
    const std::string& origin, std::string_view descriptor,
    const std::function<KernelSchema(const std::string&)>& schema_of) {
  const std::shared_ptr<const toml::table> root =
      parse_document(descriptor, origin);
  const toml::node* name = root->at_path("kernel.name").node();
  if (name == nullptr || !name->is_string()) return nullptr;
  const toml::array* cases =
      root->get("case") != nullptr ? root->get("case")->as_array() : nullptr;
  if (cases == nullptr) return nullptr;
  auto s = make_cases(origin, schema_of(name->as_string()->get()));
  for (const toml::node& item : *cases) {
    const toml::table* t = item.as_table();
    if (t == nullptr) malformed(*s, line_of(item), "each [[case]] is a table");
    only_keys(*s, *t, {"name", "args"}, "a [[case]]");
    const toml::node* case_name = t->get("name");
    const toml::node* args = t->get("args");
    if (case_name == nullptr || !case_name->is_string() || args == nullptr ||
        !args->is_table()) {
      malformed(*s, line_of(item), "a [[case]] needs a name and an args table");
    }
    for (const DescriptorCases::Table& earlier : s->tables) {
      if (earlier.name == case_name->as_string()->get()) {
        malformed(*s, line_of(item),
                  fmt::format("a second case named '{}' (the first is on "
                              "line {})",
                              earlier.name, earlier.line));
      }
    }
    s->tables.push_back(DescriptorCases::Table{
        case_name->as_string()->get(),
        std::shared_ptr<const toml::table>(root, args->as_table()),
        line_of(item)});
  }
  return s;
}

// The built-in kernels' cases by kernel name, read once.
const std::map<std::string, std::shared_ptr<const DescriptorCases>,
               std::less<>>&
builtin_cases() {
  static const auto* const cases = [] {
    auto* by_kernel =
        new std::map<std::string, std::shared_ptr<const DescriptorCases>,
                     std::less<>>();
    for (const kernel_set::DescriptorFile& file :
         kernel_set::descriptor_files()) {
      const std::string origin(file.origin);
      auto read_cases =
          read(origin, file.text, [&](const std::string& kernel_name) {
            const jw_kernel_schema* schema =
                kernel_set::find_schema(kernel_name);
            if (schema == nullptr) {
              throw std::runtime_error(origin + ": no built-in schema '" +
                                       kernel_name + "'");
            }
            return KernelSchema::from_c(*schema, origin);
          });
      if (read_cases != nullptr) {
        (*by_kernel)[std::string(file.kernel_name)] = std::move(read_cases);
      }
    }
    return by_kernel;
  }();
  return *cases;
}

}  // namespace

void register_source_kernel_cases(const Runtime& runtime) {
  for (const SourceKernel& kernel : runtime.source_kernels()) {
    std::shared_ptr<DescriptorCases> cases =
        read(kernel.origin, kernel.descriptor,
             [&](const std::string& name) { return runtime.schema(name); });
    if (cases == nullptr) continue;
    // Build each case once now, so a malformed table stops the run while
    // planning, naming its line, instead of failing in every worker.
    for (const DescriptorCases::Table& table : cases->tables) {
      Rng rng(0);
      (void)build_case(*cases, table, rng);
    }
    std::lock_guard lock(g_mutex);
    source_cases()[cases->schema.name()] = std::move(cases);
  }
}

bool is_source_kernel(std::string_view kernel) {
  std::lock_guard lock(g_mutex);
  return source_cases().find(kernel) != source_cases().end();
}

std::vector<CaseRecipe> descriptor_case_recipes(std::string_view kernel,
                                                const CaseOptions& options) {
  std::shared_ptr<const DescriptorCases> s;
  if (const auto builtin = builtin_cases().find(kernel);
      builtin != builtin_cases().end()) {
    // A copy of a built-in descriptor in a kernel directory implements
    // the same kernel: the built-in's cases are its cases.
    s = builtin->second;
  } else {
    std::lock_guard lock(g_mutex);
    const auto found = source_cases().find(kernel);
    if (found == source_cases().end()) return {};
    s = found->second;
  }
  std::vector<CaseRecipe> recipes;
  for (const DescriptorCases::Table& table : s->tables) {
    CaseRecipe recipe;
    recipe.name = table.name;
    const uint64_t seed = case_seed(options.seed, kernel, table.name);
    recipe.build = [s, &table = table, seed] {
      Rng rng(seed);
      return build_case(*s, table, rng);
    };
    recipes.push_back(std::move(recipe));
  }
  return recipes;
}

namespace {

// The args table on line `line` of `file` (a [[tune]] table's, or one
// given as text) with the kernel it is for.
ArgumentTable argument_table(std::string kernel, const std::string& file,
                             int line,
                             std::shared_ptr<const toml::table> table) {
  std::string origin = fmt::format("{}:{}", file, line);
  return ArgumentTable{
      std::move(kernel), origin,
      [table, file, line, origin](const KernelSchema& schema, bool with_data) {
        auto s = make_cases(file, schema);
        s->what = "arguments of " + schema.name();
        Rng rng(case_seed(kDefaultSeed, schema.name(), origin));
        return build_case(*s, DescriptorCases::Table{origin, table, line}, rng,
                          with_data);
      }};
}

}  // namespace

std::vector<ArgumentTable> read_tune_tables(std::string_view manifest,
                                            const std::string& origin) {
  const std::shared_ptr<const toml::table> root =
      parse_document(manifest, origin);
  std::vector<ArgumentTable> tables;
  const toml::node* tune = root->get("tune");
  if (tune == nullptr) return tables;
  const auto bad = [&](const toml::node& node, const std::string& what) {
    throw std::runtime_error(
        fmt::format("{}:{}: [[tune]]: {}", origin, line_of(node), what));
  };
  if (!tune->is_array()) bad(*tune, "tune must be a list of tables ([[tune]])");
  for (const toml::node& item : *tune->as_array()) {
    const toml::table* t = item.as_table();
    if (t == nullptr) bad(item, "each [[tune]] is a table");
    for (const auto& [key, value] : *t) {
      if (key.str() != "kernel" && key.str() != "args") {
        bad(value,
            fmt::format("unknown key '{}' (known: kernel, args)", key.str()));
      }
    }
    const toml::node* kernel = t->get("kernel");
    const toml::node* args = t->get("args");
    if (kernel == nullptr || !kernel->is_string() || args == nullptr ||
        !args->is_table()) {
      bad(item, "a [[tune]] needs a kernel (its name) and an args table");
    }
    tables.push_back(argument_table(
        kernel->as_string()->get(), origin, line_of(item),
        std::shared_ptr<const toml::table>(root, args->as_table())));
  }
  return tables;
}

ArgumentTable argument_table_from_text(std::string kernel,
                                       std::string_view args) {
  const std::string origin = "--args";
  std::shared_ptr<const toml::table> root;
  try {
    root = parse_document("args = " + std::string(args), origin);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(
        fmt::format("--args is not an inline table such as '{{ x = {{ shape "
                    "= [8] }}, n = 8 }}': {}",
                    e.what()));
  }
  const toml::node* table = root->get("args");
  if (table == nullptr || !table->is_table() || root->size() != 1) {
    throw std::runtime_error(
        "--args is not one inline table such as '{ x = { shape = [8] }, n = "
        "8 }'");
  }
  return argument_table(
      std::move(kernel), origin, 1,
      std::shared_ptr<const toml::table>(root, table->as_table()));
}

}  // namespace jitwarm::conformance
