// KernelDescriptor: everything the GPU plugins know about one kernel, read
// from its descriptor (a TOML file next to the kernel's source; the format
// is docs/kernel-descriptors.md). The ten built-in kernels are descriptors
// in plugins/common/kernels/ (embedded at build time) and users' kernels
// are the same thing, from a kernel directory or from a host.
//
//   [kernel]   which schema it implements (or defines, with [[param]]
//              tables), its source file and __global__ function
//   [tune]     the choices a key's config makes (block size, rows per
//              block, ...), their candidates and defaults, and the checks
//              a config must pass (kernel_tuning.hpp)
//   [compile]  checks, values (let) and the template arguments / defines a
//              compile key becomes (compile-scope expressions)
//   [launch]   checks, values, block, grid, shared memory and extra kernel
//              arguments a launch's arguments become (launch scope)
//
// parse_kernel_descriptor checks everything it can before any key exists:
// TOML, the sections and their keys, every expression (names, types, the
// scope of each function). Every error names file:line.
#pragma once

#include <jitwarm/jitwarm.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "embedded_kernel_sources.hpp"
#include "kernel_expression.hpp"

namespace jitwarm::gpu {

// The most configs a [tune] table may offer (the product of its choices'
// values): tuning benchmarks each, so a larger space is a mistake.
inline constexpr std::size_t kMaxTuneConfigs = 1024;

// A descriptor's [[param]] tables as a C schema the plugin can define
// (owning every string and array the C view points to).
class OwnedSchema {
 public:
  OwnedSchema() = default;
  OwnedSchema(const OwnedSchema&) = delete;
  OwnedSchema& operator=(const OwnedSchema&) = delete;
  const jw_kernel_schema& c() const { return c_; }

 private:
  friend class DescriptorReader;
  jw_kernel_schema c_{};
  std::vector<jw_param_desc> params_;
  std::vector<std::unique_ptr<std::string>> strings_;
  const char* keep(std::string text);
};

struct DescriptorValue {  // a `let`, or a [tune] choice
  std::string name;
  KernelExpression expression;  // a choice's: its default, as a literal
  int line = 0;
  // Set for a [tune] choice: its index in tune_choices. Its value is the
  // key's config's, or the default without one.
  int choice = -1;
};
// One choice of a [tune] table: a compile value whose candidates are
// listed, the default among them.
struct DescriptorChoice {
  std::string name;
  std::vector<int64_t> values;  // as written, without repeats
  int64_t default_value = 0;
  int line = 0;
};
struct DescriptorCheck {
  KernelExpression expression;
  int line = 0;
};
struct DescriptorDefine {
  std::string name;
  KernelExpression expression;
  int line = 0;
};
// A kernel argument no schema parameter carries, appended after the
// schema's (e.g. expand's batch size).
struct DescriptorExtraArg {
  jw_int_type type = JW_INT_I64;
  KernelExpression expression;
  int line = 0;
};

// The files of a kernel from source, owned: what a descriptor's `sources`
// views.
struct SourceFiles {
  std::vector<std::string> names, texts;
  std::vector<EmbeddedSource> views;  // into names and texts
  void add(std::string name, std::string text);
};

struct KernelDescriptor {
  std::string origin;       // "plugins/common/kernels/rms_norm.toml", ...
  std::string kernel_name;  // the schema's fully qualified name
  std::string source;       // the source file the kernel's program is
  std::string function;     // the __global__ function (template)
  // The platforms it is written for ("cuda", "hip"); empty: every platform
  // that compiles from source.
  std::vector<std::string> platforms;
  // Set when the descriptor defines its schema ([[param]] tables).
  std::shared_ptr<const OwnedSchema> schema;
  // The files its program is made of (the source and the headers it
  // includes); empty for the built-in kernels, whose files are the
  // backend's embedded set. `files` keeps the text alive.
  std::span<const EmbeddedSource> sources;
  std::shared_ptr<const void> files;
  std::vector<ExprParam> params;  // the schema's, in order

  // [tune]: the choices (the first compile values) and the constraints a
  // config must meet for a key.
  std::vector<DescriptorChoice> tune_choices;
  std::vector<DescriptorCheck> tune_checks;

  std::vector<DescriptorCheck> compile_checks;
  std::vector<DescriptorValue> compile_values;  // the choices first
  std::vector<KernelExpression> template_arguments;
  std::vector<int> template_lines;
  std::vector<DescriptorDefine> defines;

  std::vector<DescriptorCheck> launch_checks;
  std::vector<DescriptorValue> launch_values;
  std::array<KernelExpression, 3> block, grid;
  std::optional<KernelExpression> shared_memory;
  std::vector<DescriptorExtraArg> extra_args;

  // "rms_norm.toml:42" for messages about line `line` (or the file).
  std::string where(int line) const;
};

// How to find a schema a descriptor implements without defining it.
using SchemaLookup = const jw_kernel_schema* (*)(std::string_view kernel_name);

// Throws plugin::PluginError(JW_ERROR_INVALID_ARGUMENT) naming
// origin:line. `schema_of` finds schemas defined elsewhere (the kernel set);
// `defined` (optional) is the schema the host already defined for this
// descriptor, which wins over [[param]] tables and the lookup.
// `files` (optional): the kernel's own files (a kernel from source), which
// must hold its source and every header the source includes.
std::shared_ptr<const KernelDescriptor> parse_kernel_descriptor(
    std::string_view toml_text, std::string origin, SchemaLookup schema_of,
    const jw_kernel_schema* defined = nullptr,
    std::shared_ptr<const SourceFiles> files = nullptr);

// The built-in kernels' descriptors (the embedded kernels/*.toml), parsed
// once per process; throws if one of them is malformed (a build error,
// caught by the tests).
std::span<const std::shared_ptr<const KernelDescriptor>> builtin_descriptors();
const KernelDescriptor* find_builtin_descriptor(std::string_view kernel_name);

}  // namespace jitwarm::gpu
