// source_kernel_cases.cpp — the [[case]] tables of kernel descriptors
// read into CaseRecipes (see source_kernel_cases.hpp).
#include "source_kernel_cases.hpp"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "argument_tables.hpp"
#include "kernel_set.hpp"

namespace jitwarm::conformance {
namespace {

using device_args::ArgumentReader;
using device_args::case_seed;
using device_args::line_of;
using device_args::Rng;

// A descriptor's case tables, with the reader of their args against its
// kernel's schema.
struct DescriptorCases {
  DescriptorCases(const std::string& origin, KernelSchema schema)
      : reader(origin, std::move(schema), "conformance case") {}
  ArgumentReader reader;
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

// The [[case]] tables of a descriptor, with the schema `schema_of` gives
// for its [kernel] name; nullptr when it has none.
std::shared_ptr<DescriptorCases> read(
    const std::string& origin, std::string_view descriptor,
    const std::function<KernelSchema(const std::string&)>& schema_of) {
  const std::shared_ptr<const toml::table> root =
      device_args::parse_document(descriptor, origin);
  const toml::node* name = root->at_path("kernel.name").node();
  if (name == nullptr || !name->is_string()) return nullptr;
  const toml::array* cases =
      root->get("case") != nullptr ? root->get("case")->as_array() : nullptr;
  if (cases == nullptr) return nullptr;
  auto s = std::make_shared<DescriptorCases>(
      origin, schema_of(name->as_string()->get()));
  for (const toml::node& item : *cases) {
    const toml::table* t = item.as_table();
    if (t == nullptr)
      s->reader.malformed(line_of(item), "each [[case]] is a table");
    s->reader.only_keys(*t, {"name", "args"}, "a [[case]]");
    const toml::node* case_name = t->get("name");
    const toml::node* args = t->get("args");
    if (case_name == nullptr || !case_name->is_string() || args == nullptr ||
        !args->is_table()) {
      s->reader.malformed(line_of(item),
                          "a [[case]] needs a name and an args table");
    }
    for (const DescriptorCases::Table& earlier : s->tables) {
      if (earlier.name == case_name->as_string()->get()) {
        s->reader.malformed(line_of(item),
                            fmt::format("a second case named '{}' (the first "
                                        "is on line {})",
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
      (void)cases->reader.build(*table.args, table.line, rng);
    }
    std::lock_guard lock(g_mutex);
    source_cases()[cases->reader.schema().name()] = std::move(cases);
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
      return s->reader.build(*table.args, table.line, rng);
    };
    recipes.push_back(std::move(recipe));
  }
  return recipes;
}

}  // namespace jitwarm::conformance
