// Reading kernel descriptors: TOML through the untrusted-input parser
// (support/toml_parser.hpp), the sections in order, every expression parsed
// against the schema's parameters and the values defined before it.
#include "kernel_descriptor.hpp"

#include <jitwarm/plugin.hpp>

#include "embedded_kernel_sources.hpp"
#include "kernel_set.hpp"
#include "param_words.hpp"
#include "toml_parser.hpp"

#include <algorithm>
#include <mutex>
#include <set>

namespace jitwarm::gpu {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT, message);
}

int line_of(const toml::node& node) {
  return static_cast<int>(node.source().begin.line);
}

using param_words::FlagWord;
using param_words::kFlagWords;

}  // namespace

const char* OwnedSchema::keep(std::string text) {
  strings_.push_back(std::make_unique<std::string>(std::move(text)));
  return strings_.back()->c_str();
}

void SourceFiles::add(std::string name, std::string text) {
  names.push_back(std::move(name));
  texts.push_back(std::move(text));
  // Views of every file again: the vectors may have moved their strings.
  views.clear();
  for (std::size_t i = 0; i < names.size(); ++i) {
    views.push_back(EmbeddedSource{names[i], texts[i]});
  }
}

std::string KernelDescriptor::where(int line) const {
  return line > 0 ? origin + ":" + std::to_string(line) : origin;
}

// Reads one descriptor, keeping the values defined so far for the
// expressions that follow them.
class DescriptorReader {
 public:
  DescriptorReader(std::string origin, SchemaLookup schema_of,
                   const jw_kernel_schema* defined,
                   std::shared_ptr<const SourceFiles> files)
      : schema_of_(schema_of), defined_(defined) {
    d_ = std::make_shared<KernelDescriptor>();
    d_->origin = std::move(origin);
    if (files != nullptr) {
      d_->sources = files->views;
      d_->files = std::move(files);
    }
  }

  std::shared_ptr<const KernelDescriptor> read(std::string_view text) {
    toml::table root;
    try {
      root = detail::parse_untrusted_toml(text, d_->origin);
    } catch (const toml::parse_error& e) {
      invalid(detail::toml_error_text(d_->origin, e));
    }
    only_keys(root, {"kernel", "param", "tune", "compile", "launch", "case"},
              "");
    kernel_section(root);
    tune_section(root);
    compile_section(root);
    launch_section(root);
    return d_;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& message) const {
    invalid(d_->where(line) + ": " + message);
  }
  [[noreturn]] void fail(const toml::node& node,
                         const std::string& message) const {
    fail(line_of(node), message);
  }

  void only_keys(const toml::table& table,
                 std::initializer_list<std::string_view> keys,
                 std::string_view section) const {
    for (const auto& [key, node] : table) {
      if (std::find(keys.begin(), keys.end(), key.str()) != keys.end())
        continue;
      std::string known;
      for (std::string_view k : keys) {
        known += (known.empty() ? "" : ", ") + std::string(k);
      }
      fail(node,
           "unknown key '" + std::string(key.str()) + "'" +
               (section.empty() ? "" : " in [" + std::string(section) + "]") +
               " (known: " + known + ")");
    }
  }

  const toml::table& table_at(const toml::table& root, std::string_view key,
                              bool required) {
    const toml::node* node = root.get(key);
    if (node == nullptr) {
      if (required)
        fail(0, "the [" + std::string(key) + "] section is missing");
      static const toml::table empty;
      return empty;
    }
    const toml::table* table = node->as_table();
    if (table == nullptr)
      fail(*node, "'" + std::string(key) + "' must be a table");
    return *table;
  }

  std::string text_at(const toml::table& table, std::string_view key,
                      std::string_view section, bool required,
                      int* line = nullptr) {
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      if (required) {
        fail(line_of(table),
             "[" + std::string(section) + "] needs '" + std::string(key) + "'");
      }
      return {};
    }
    const auto* value = node->as_string();
    if (value == nullptr || value->get().empty()) {
      fail(*node, "'" + std::string(key) + "' must be a non-empty string");
    }
    if (line != nullptr) *line = line_of(*node);
    return value->get();
  }

  // --- [kernel] and [[param]]
  void kernel_section(const toml::table& root) {
    const toml::table& kernel = table_at(root, "kernel", true);
    only_keys(
        kernel,
        {"name", "summary", "launch_rule", "source", "function", "platforms"},
        "kernel");
    d_->kernel_name = text_at(kernel, "name", "kernel", true);
    int source_line = 0;
    d_->source = text_at(kernel, "source", "kernel", true, &source_line);
    d_->function = text_at(kernel, "function", "kernel", true);
    for_each_in(kernel, "platforms", [&](const toml::node& item) {
      const auto* name = item.as_string();
      if (name == nullptr || name->get().empty()) {
        fail(item, "platforms must be names such as \"cuda\" and \"hip\"");
      }
      d_->platforms.push_back(name->get());
    });
    if (d_->files != nullptr) {
      // A kernel from source brings its files: its source and every header
      // it includes must be among them (the compiler would say so later,
      // for every key).
      try {
        static_cast<void>(find_source(d_->sources, d_->source));
        static_cast<void>(include_closure(d_->sources, d_->source));
      } catch (const plugin::PluginError& e) {
        fail(source_line, e.what());
      }
    }
    const jw_kernel_schema* schema = defined_;
    if (const toml::node* params = root.get("param")) {
      auto owned = std::make_shared<OwnedSchema>();
      read_params(*params, kernel, *owned);
      if (schema == nullptr) schema = &owned->c();
      d_->schema = std::move(owned);
    } else if (schema == nullptr) {
      schema = schema_of_ != nullptr ? schema_of_(d_->kernel_name) : nullptr;
      if (schema == nullptr) {
        fail(kernel, "kernel '" + d_->kernel_name +
                         "' has no [[param]] tables and no schema of that "
                         "name is defined");
      }
    }
    for (uint32_t i = 0; i < schema->num_params; ++i) {
      d_->params.push_back(
          ExprParam{schema->params[i].name, schema->params[i].kind});
    }
  }

  void read_params(const toml::node& node, const toml::table& kernel,
                   OwnedSchema& out) {
    const toml::array* list = node.as_array();
    if (list == nullptr) fail(node, "'param' must be [[param]] tables");
    std::set<std::string> seen;
    for (const toml::node& item : *list) {
      const toml::table* p = item.as_table();
      if (p == nullptr) fail(item, "each [[param]] must be a table");
      only_keys(*p,
                {"name", "kind", "dtypes", "rank", "flags", "default",
                 "same_dtype_as"},
                "param");
      jw_param_desc desc{};
      desc.struct_size = sizeof(desc);
      desc.rank = -1;
      const std::string name = text_at(*p, "name", "param", true);
      if (!seen.insert(name).second) {
        fail(*p, "parameter '" + name + "' appears twice");
      }
      desc.name = out.keep(name);
      const std::string kind = text_at(*p, "kind", "param", true);
      if (const auto known = plugin::param_kind_from_name(kind)) {
        desc.kind = *known;
      } else {
        fail(*p->get("kind"), "parameter '" + name + "': kind '" + kind +
                                  "' is not tensor, int, float, constexpr "
                                  "or scalar");
      }
      if (const toml::node* dtypes = p->get("dtypes")) {
        const toml::array* names = dtypes->as_array();
        if (names == nullptr || names->empty()) {
          fail(*dtypes, "parameter '" + name +
                            "': dtypes must be a non-empty array of names");
        }
        for (const toml::node& dtype : *names) {
          const auto* word = dtype.as_string();
          const std::optional<jw_dtype> d =
              word != nullptr ? plugin::dtype_from_name(word->get())
                              : std::nullopt;
          if (!d) fail(dtype, "parameter '" + name + "': not a dtype name");
          desc.allowed_dtypes |= JW_DTYPE_BIT(*d);
        }
      }
      if (const toml::node* rank = p->get("rank")) {
        const auto* value = rank->as_integer();
        if (value == nullptr || value->get() < -1 ||
            value->get() > JW_MAX_RANK) {
          fail(*rank, "parameter '" + name + "': rank must be -1 to " +
                          std::to_string(JW_MAX_RANK));
        }
        desc.rank = static_cast<int32_t>(value->get());
      }
      if (const toml::node* flags = p->get("flags")) {
        const toml::array* words = flags->as_array();
        if (words == nullptr) fail(*flags, "flags must be an array of names");
        for (const toml::node& flag : *words) {
          const auto* word = flag.as_string();
          bool known = false;
          for (const FlagWord& f : kFlagWords) {
            if (word != nullptr && word->get() == f.word) {
              desc.flags |= f.flag;
              known = true;
            }
          }
          if (!known) {
            std::string all;
            for (const FlagWord& f : kFlagWords)
              all += (all.empty() ? "" : ", ") + std::string(f.word);
            fail(flag,
                 "parameter '" + name + "': unknown flag (known: " + all + ")");
          }
        }
      }
      if (const toml::node* value = p->get("default")) {
        desc.flags |= JW_PARAM_HAS_DEFAULT;
        if (const auto* i = value->as_integer()) {
          desc.default_value.kind = JW_SCALAR_INT;
          desc.default_value.value.i = i->get();
        } else if (const auto* f = value->as_floating_point()) {
          desc.default_value.kind = JW_SCALAR_FLOAT;
          desc.default_value.value.f = f->get();
        } else if (const auto* b = value->as_boolean()) {
          desc.default_value.kind = JW_SCALAR_BOOL;
          desc.default_value.value.i = b->get() ? 1 : 0;
        } else {
          fail(*value, "parameter '" + name +
                           "': default must be an integer, a float or a "
                           "boolean");
        }
      }
      const std::string like = text_at(*p, "same_dtype_as", "param", false);
      if (!like.empty()) desc.same_dtype_as = out.keep(like);
      out.params_.push_back(desc);
    }
    out.c_.struct_size = sizeof(jw_kernel_schema);
    out.c_.name = out.keep(d_->kernel_name);
    out.c_.summary = out.keep(text_at(kernel, "summary", "kernel", false));
    out.c_.launch_rule =
        out.keep(text_at(kernel, "launch_rule", "kernel", false));
    out.c_.params = out.params_.data();
    out.c_.num_params = static_cast<uint32_t>(out.params_.size());
  }

  // --- expressions
  KernelExpression expression(const toml::node& node, ExprScope scope,
                              const std::string& what) {
    const auto* text = node.as_string();
    if (text == nullptr) fail(node, what + " must be a string (an expression)");
    const ExprNames names{d_->params, lets_};
    try {
      return KernelExpression::parse(text->get(), names, scope);
    } catch (const ExpressionError& e) {
      fail(node, what + " '" + text->get() + "', column " +
                     std::to_string(e.column()) + ": " + e.what());
    }
  }
  template <typename Each>
  void for_each_in(const toml::table& table, std::string_view key,
                   Each&& each) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return;
    const toml::array* list = node->as_array();
    if (list == nullptr)
      fail(*node, "'" + std::string(key) + "' must be an array");
    for (const toml::node& item : *list) each(item);
  }
  // A ["name", "expression"] pair.
  std::pair<std::string, const toml::node*> pair_at(const toml::node& item,
                                                    const std::string& what) {
    const toml::array* pair = item.as_array();
    if (pair == nullptr || pair->size() != 2 ||
        pair->get(0)->as_string() == nullptr) {
      fail(item, what + " must be [\"name\", \"expression\"]");
    }
    return {pair->get(0)->as_string()->get(), pair->get(1)};
  }
  void checks(const toml::table& section, ExprScope scope,
              std::vector<DescriptorCheck>& out) {
    for_each_in(section, "check", [&](const toml::node& item) {
      KernelExpression e = expression(item, scope, "check");
      if (e.type() != ExprType::boolean) {
        fail(item, "check '" + e.text() + "' must be a condition (boolean)");
      }
      out.push_back(DescriptorCheck{std::move(e), line_of(item)});
    });
  }
  void values(const toml::table& section, ExprScope scope,
              std::vector<DescriptorValue>& out) {
    for_each_in(section, "let", [&](const toml::node& item) {
      auto [name, node] = pair_at(item, "a let");
      check_value_name(item, name);
      KernelExpression e = expression(*node, scope, "value '" + name + "'");
      if (scope == ExprScope::launch && e.type() == ExprType::text) {
        fail(item, "launch values are integers or booleans");
      }
      if (scope == ExprScope::launch && out.size() == kMaxLaunchValues) {
        fail(item,
             "at most " + std::to_string(kMaxLaunchValues) + " launch values");
      }
      lets_.push_back(ExprLet{name, e.type(), scope, e.varies_per_launch()});
      out.push_back(DescriptorValue{name, std::move(e), line_of(item)});
    });
  }

  // --- [tune]
  void tune_section(const toml::table& root) {
    const toml::table& tune = table_at(root, "tune", false);
    only_keys(tune, {"choices", "check"}, "tune");
    if (tune.empty()) return;
    const toml::node* choices = tune.get("choices");
    const toml::array* list =
        choices != nullptr ? choices->as_array() : nullptr;
    if (list == nullptr || list->empty()) {
      fail(choices != nullptr ? line_of(*choices) : line_of(tune),
           "[tune] needs 'choices', a non-empty array of { name = ..., "
           "values = [...], default = ... }");
    }
    std::size_t configs = 1;
    for (const toml::node& item : *list) {
      const toml::table* c = item.as_table();
      if (c == nullptr) {
        fail(item,
             "each choice is a table { name = ..., values = [...], "
             "default = ... }");
      }
      only_keys(*c, {"name", "values", "default"}, "tune");
      DescriptorChoice choice;
      choice.line = line_of(item);
      choice.name = text_at(*c, "name", "tune", true);
      check_value_name(item, choice.name);
      const toml::node* values = c->get("values");
      const toml::array* candidates =
          values != nullptr ? values->as_array() : nullptr;
      if (candidates == nullptr || candidates->empty()) {
        fail(item, "choice '" + choice.name +
                       "': values must be a non-empty array of integers");
      }
      for (const toml::node& v : *candidates) {
        const auto* integer = v.as_integer();
        if (integer == nullptr) {
          fail(v, "choice '" + choice.name + "': values are integers");
        }
        if (std::find(choice.values.begin(), choice.values.end(),
                      integer->get()) != choice.values.end()) {
          fail(v, "choice '" + choice.name + "': " +
                      std::to_string(integer->get()) + " is listed twice");
        }
        choice.values.push_back(integer->get());
      }
      const toml::node* fallback = c->get("default");
      if (fallback == nullptr || fallback->as_integer() == nullptr) {
        fail(item,
             "choice '" + choice.name + "' needs a default, one of its values");
      }
      choice.default_value = fallback->as_integer()->get();
      if (std::find(choice.values.begin(), choice.values.end(),
                    choice.default_value) == choice.values.end()) {
        fail(*fallback, "choice '" + choice.name + "': the default " +
                            std::to_string(choice.default_value) +
                            " is not among its values");
      }
      configs *= choice.values.size();
      if (configs > kMaxTuneConfigs) {
        fail(item, "[tune] allows at most " + std::to_string(kMaxTuneConfigs) +
                       " configs (the product of every choice's values)");
      }
      lets_.push_back(
          ExprLet{choice.name, ExprType::integer, ExprScope::compile, false});
      d_->compile_values.push_back(DescriptorValue{
          choice.name,
          KernelExpression::parse(std::to_string(choice.default_value), {},
                                  ExprScope::compile),
          choice.line, static_cast<int>(d_->tune_choices.size())});
      d_->tune_choices.push_back(std::move(choice));
    }
    checks(tune, ExprScope::compile, d_->tune_checks);
  }

  // A let's or a choice's name: a name, unique among the values so far and
  // not a parameter's.
  void check_value_name(const toml::node& item, const std::string& name) {
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) ||
                          name[0] == '_')) {
      fail(item, "'" + name + "' is not a name");
    }
    for (const ExprParam& p : d_->params) {
      if (p.name == name) fail(item, "'" + name + "' is a parameter's name");
    }
    for (const DescriptorChoice& c : d_->tune_choices) {
      if (c.name == name) fail(item, "'" + name + "' is a [tune] choice");
    }
  }

  // --- [compile]
  void compile_section(const toml::table& root) {
    const toml::table& compile = table_at(root, "compile", false);
    only_keys(compile, {"check", "let", "template", "defines"}, "compile");
    checks(compile, ExprScope::compile, d_->compile_checks);
    values(compile, ExprScope::compile, d_->compile_values);
    for_each_in(compile, "template", [&](const toml::node& item) {
      d_->template_arguments.push_back(
          expression(item, ExprScope::compile, "template argument"));
      d_->template_lines.push_back(line_of(item));
    });
    for_each_in(compile, "defines", [&](const toml::node& item) {
      auto [name, node] = pair_at(item, "a define");
      d_->defines.push_back(DescriptorDefine{
          name, expression(*node, ExprScope::compile, "define " + name),
          line_of(item)});
    });
  }

  // --- [launch]
  void launch_section(const toml::table& root) {
    const toml::table& launch = table_at(root, "launch", true);
    only_keys(launch,
              {"check", "let", "block", "grid", "shared_memory", "extra_args"},
              "launch");
    checks(launch, ExprScope::launch, d_->launch_checks);
    values(launch, ExprScope::launch, d_->launch_values);
    dims(launch, "block", d_->block);
    dims(launch, "grid", d_->grid);
    if (const toml::node* shared = launch.get("shared_memory")) {
      d_->shared_memory = integer_expression(*shared, "shared_memory");
    }
    for_each_in(launch, "extra_args", [&](const toml::node& item) {
      auto [type, node] = pair_at(item, "an extra argument");
      DescriptorExtraArg extra;
      if (const auto known = plugin::int_type_from_name(type)) {
        extra.type = *known;
      } else {
        fail(item,
             "an extra argument's type is i32, i64 or u64, not '" + type + "'");
      }
      if (d_->extra_args.size() == LaunchPlan::kMaxExtra) {
        fail(item, "at most " + std::to_string(LaunchPlan::kMaxExtra) +
                       " extra arguments");
      }
      extra.expression = integer_expression(*node, "extra argument");
      extra.line = line_of(item);
      d_->extra_args.push_back(std::move(extra));
    });
  }
  KernelExpression integer_expression(const toml::node& node,
                                      const std::string& what) {
    KernelExpression e = expression(node, ExprScope::launch, what);
    if (e.type() != ExprType::integer) {
      fail(node, what + " '" + e.text() + "' must be an integer");
    }
    return e;
  }
  void dims(const toml::table& launch, std::string_view key,
            std::array<KernelExpression, 3>& out) {
    const toml::node* node = launch.get(key);
    if (node == nullptr)
      fail(launch, "[launch] needs '" + std::string(key) + "'");
    const toml::array* list = node->as_array();
    if (list == nullptr || list->empty() || list->size() > 3) {
      fail(*node,
           "'" + std::string(key) + "' must be 1 to 3 expressions (x, y, z)");
    }
    for (std::size_t i = 0; i < 3; ++i) {
      out[i] = i < list->size()
                   ? integer_expression(*list->get(i), std::string(key))
                   : KernelExpression::parse("1", {}, ExprScope::launch);
    }
  }

  SchemaLookup schema_of_;
  const jw_kernel_schema* defined_;
  std::shared_ptr<KernelDescriptor> d_;
  std::vector<ExprLet> lets_;  // compile values, then launch values
};

std::shared_ptr<const KernelDescriptor> parse_kernel_descriptor(
    std::string_view toml_text, std::string origin, SchemaLookup schema_of,
    const jw_kernel_schema* defined, std::shared_ptr<const SourceFiles> files) {
  return DescriptorReader(std::move(origin), schema_of, defined,
                          std::move(files))
      .read(toml_text);
}

std::span<const std::shared_ptr<const KernelDescriptor>> builtin_descriptors() {
  static const std::vector<std::shared_ptr<const KernelDescriptor>> all = [] {
    std::vector<std::shared_ptr<const KernelDescriptor>> out;
    for (const EmbeddedSource& file : embedded_kernel_sources()) {
      if (!file.name.ends_with(".toml")) continue;
      out.push_back(parse_kernel_descriptor(
          file.text, "plugins/common/kernels/" + std::string(file.name),
          [](std::string_view name) { return kernel_set::find_schema(name); }));
    }
    return out;
  }();
  return all;
}

const KernelDescriptor* find_builtin_descriptor(std::string_view kernel_name) {
  for (const auto& d : builtin_descriptors()) {
    if (d->kernel_name == kernel_name) return d.get();
  }
  return nullptr;
}

}  // namespace jitwarm::gpu
