// tune_tables.cpp — reading [[tune]] tables and --args (see
// tune_tables.hpp).
#include "tune_tables.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "argument_tables.hpp"

namespace jitwarm::cli {
namespace {

// The args table on line `line` of `file` (a [[tune]] table's, or one
// given as text) with the kernel it is for. Its random contents are seeded
// by the table's origin, so a table's data does not depend on the others.
TuneTable tune_table(std::string kernel, const std::string& file, int line,
                     std::shared_ptr<const toml::table> args) {
  std::string origin = fmt::format("{}:{}", file, line);
  return TuneTable{
      std::move(kernel), origin,
      [args, file, line, origin](const KernelSchema& schema, bool with_data) {
        const device_args::ArgumentReader reader(
            file, schema, "arguments of " + schema.name());
        device_args::Rng rng(device_args::case_seed(device_args::kDefaultSeed,
                                                    schema.name(), origin));
        return reader.build(*args, line, rng, with_data);
      }};
}

}  // namespace

std::vector<TuneTable> read_tune_tables(std::string_view manifest,
                                        const std::string& origin) {
  // The whole manifest as a warmup reads it, which also checks that
  // `tune`, if present, is a list of tables: the loop below relies on it.
  (void)parse_warmup_manifest(manifest, origin);
  const std::shared_ptr<const toml::table> root =
      device_args::parse_document(manifest, origin);
  std::vector<TuneTable> tables;
  const toml::node* tune = root->get("tune");
  if (tune == nullptr) return tables;
  const auto bad = [&](const toml::node& node, const std::string& what) {
    throw std::runtime_error(fmt::format("{}:{}: [[tune]]: {}", origin,
                                         device_args::line_of(node), what));
  };
  for (const toml::node& item : *tune->as_array()) {
    const toml::table& t = *item.as_table();
    for (const auto& [key, value] : t) {
      if (key.str() != "kernel" && key.str() != "args") {
        bad(value,
            fmt::format("unknown key '{}' (known: kernel, args)", key.str()));
      }
    }
    const toml::node* kernel = t.get("kernel");
    const toml::node* args = t.get("args");
    if (kernel == nullptr || !kernel->is_string() || args == nullptr ||
        !args->is_table()) {
      bad(item, "a [[tune]] needs a kernel (its name) and an args table");
    }
    tables.push_back(tune_table(
        kernel->as_string()->get(), origin, device_args::line_of(item),
        std::shared_ptr<const toml::table>(root, args->as_table())));
  }
  return tables;
}

TuneTable tune_table_from_text(std::string kernel, std::string_view args) {
  const std::string origin = "--args";
  std::shared_ptr<const toml::table> root;
  try {
    root = device_args::parse_document("args = " + std::string(args), origin);
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
  return tune_table(
      std::move(kernel), origin, 1,
      std::shared_ptr<const toml::table>(root, table->as_table()));
}

}  // namespace jitwarm::cli
