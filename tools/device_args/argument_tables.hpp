// argument_tables.hpp — a kernel's arguments written as a TOML table, the
// form a kernel descriptor's [[case]] tables (tools/conformance,
// source_kernel_cases.hpp), a manifest's [[tune]] tables and `jitwarm tune
// --args` (tools/tune_tables.hpp) share (docs/kernel-descriptors.md,
// "Conformance cases"):
//
//   args = { x = { shape = [100], fill = "random" }, n = 100, factor = 2.5 }
//
// A tensor takes `shape`, optionally `dtype` (default: the dtype of the
// tensor its schema ties it to, else the first it allows), `fill` (random,
// zeros, ones, iota; default random for inputs and zeros for outputs) or
// `values`, and `misaligned`. Scalars take their value; a parameter with a
// default may be left out. Outputs (the schema's `output` flag) are marked
// for comparison after a launch: exactly for integers, with the dtype's
// tolerance for floats.
//
// Owns: reading one args table against a schema into a Case, and the
// messages that name the table's file and line. Does not own: where the
// tables are in their files (the readers of [[case]] and [[tune]]).
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "case_model.hpp"
#include "toml_parser.hpp"

namespace jitwarm::device_args {

// A parsed document that tables point into (std::shared_ptr's aliasing
// form), because toml++ drops a node's source lines when it is copied and
// the messages name them. A malformed document throws std::runtime_error
// naming origin:line:column.
std::shared_ptr<const toml::table> parse_document(std::string_view text,
                                                  const std::string& origin);

// The line a node starts on, for messages.
int line_of(const toml::node& node);

// Reads the args tables of one kernel in one file: the kernel's schema
// with the C view of it that CaseBuilder takes, and what the messages say,
// "FILE:LINE: WHAT: why". Neither copied nor moved: the C view points into
// the schema.
class ArgumentReader {
 public:
  // `what` names a table in messages ("conformance case", "arguments of
  // KERNEL").
  ArgumentReader(std::string file, KernelSchema schema, std::string what);
  ArgumentReader(const ArgumentReader&) = delete;
  ArgumentReader& operator=(const ArgumentReader&) = delete;

  const KernelSchema& schema() const { return schema_; }

  // The case `args` gives (the table starting on `line`), its buffers
  // filled from `rng`; with_data false: every buffer zero, not filled (only
  // the metadata is wanted; filling large tensors takes seconds). A
  // malformed table throws std::runtime_error naming file and line.
  Case build(const toml::table& args, int line, Rng& rng,
             bool with_data = true) const;

  // Throws std::runtime_error "FILE:LINE: WHAT: why".
  [[noreturn]] void malformed(int line, const std::string& why) const;
  // A key of `table` outside `known` is malformed (an error, not silently
  // ignored); `where` names the table ("a [[case]]").
  void only_keys(const toml::table& table,
                 std::initializer_list<std::string_view> known,
                 std::string_view where) const;

 private:
  jw_dtype default_dtype(const toml::table& args, std::size_t index,
                         int depth = 0) const;
  std::vector<unsigned char> fill_bytes(const toml::table& spec, int line,
                                        jw_dtype dtype, int64_t count,
                                        bool output, Rng& rng) const;

  std::string file_;
  std::string what_;
  KernelSchema schema_;
  std::vector<jw_param_desc> params_;  // point into schema_
  jw_kernel_schema c_{};
};

}  // namespace jitwarm::device_args
