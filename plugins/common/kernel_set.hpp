// The portable kernel set (docs/kernels.md), from the built-in kernels'
// descriptors: plugins/common/kernels/*.toml are the one place a built-in
// kernel's schema is written (its [kernel] name, summary and launch_rule,
// and its [[param]] tables). At build time generate_kernel_set.py writes
// from them the names and parameter positions this header includes, the
// schema tables and the descriptors' text.
//
// The reference-cpu plugin *defines* these schemas with the core; the
// device plugins read the same descriptors (embedded into them) to
// implement them. Changing a [[param]] table changes the schema of every
// backend at once.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstdint>
#include <span>
#include <string_view>

// Per kernel, its name (kRmsNorm for rms_norm.toml) and its parameter
// positions in schema order (rms_norm::H, rms_norm::count): backends index
// the argument array with these.
#include "kernel_set_params.hpp"

namespace jitwarm::kernel_set {

// The ten schemas, in the order of docs/kernels.md. Static storage.
std::span<const jw_kernel_schema> schemas();
// nullptr when the name is not in the set.
const jw_kernel_schema* find_schema(std::string_view name);
// Parameter names of a schema, in order (static storage), for
// jw_kernel_impl::param_names.
std::span<const char* const> param_names(std::string_view name);

// A built-in kernel's descriptor as written: `jitwarm conformance` runs its
// [[case]] tables (tools/conformance/source_kernel_cases.hpp).
struct DescriptorFile {
  std::string_view kernel_name;
  std::string_view origin;  // "plugins/common/kernels/rms_norm.toml"
  std::string_view text;
};
// In the order of schemas(). Static storage.
std::span<const DescriptorFile> descriptor_files();

namespace detail {
// Each schema's parameter names, in the order of schemas().
std::span<const std::span<const char* const>> param_names_in_order();
}  // namespace detail

}  // namespace jitwarm::kernel_set
