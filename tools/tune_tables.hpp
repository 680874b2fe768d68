// tune_tables.hpp — the arguments `jitwarm tune` tunes kernels with
// (docs/tuning.md): a warmup manifest's [[tune]] tables, each naming a
// kernel and giving its arguments, and a kernel's arguments given on the
// command line (--args), both in the args form of device_args'
// argument_tables.hpp:
//
//   [[tune]]
//   kernel = "rms_norm"
//   args = { out = { shape = [4096, 8192], dtype = "bfloat16" }, ... }
//
// Owns the one reader of a [[tune]] table. The core's manifest parser
// checks only that `tune` is a list of tables, for warmups; this reads
// each table's kernel and arguments.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "case_model.hpp"

namespace jitwarm::cli {

// One kernel's arguments to tune it with.
struct TuneTable {
  std::string kernel;  // as written: a full or a short name
  std::string origin;  // "manifest.toml:12", or "--args:1"
  // The case of these arguments for the kernel's schema, its buffers
  // filled (with_data) or all zero (for their metadata alone); a malformed
  // table throws std::runtime_error naming origin and line.
  std::function<device_args::Case(const KernelSchema&, bool with_data)> build;
};

// The [[tune]] tables of a warmup manifest's text (`origin`: its file).
// The whole manifest is checked first as a warmup reads it
// (parse_warmup_manifest, whose Error passes through), so tune and warmup
// agree on what a valid manifest is. A malformed [[tune]] table throws
// std::runtime_error naming manifest:line.
std::vector<TuneTable> read_tune_tables(std::string_view manifest,
                                        const std::string& origin);

// Arguments given as one inline table ("{ x = { shape = [8] }, n = 8 }");
// anything else throws std::runtime_error saying the form.
TuneTable tune_table_from_text(std::string kernel, std::string_view args);

}  // namespace jitwarm::cli
