// reference_cpu.hpp — the CPU reference backend as a C++ library: what its
// plugin callbacks do, callable directly by tests and the conformance runner
// (they link reference_cpu_lib; hosts reach the same code through
// libjitwarm-reference-cpu.so and the C ABI).
//
// Owns: the "cpu-instantiation" artifact (how compile names a C++ template
// instantiation and how launch finds it again), describe and fingerprint
// text, and the direct path that runs a kernel on host memory. Every
// function throws plugin::PluginError with a status and a message naming
// the kernel, the parameter and the value; the C callbacks turn it into a
// status code.
//
// Arguments are jw_arg_value in schema order (kernel_set.hpp), tensors in
// host memory. A kernel that fails part way may leave its output partly
// written; most check everything before the first write.
#pragma once

#include <jitwarm/jitwarm.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::reference_cpu {

struct Instantiation;  // kernel_definitions.hpp
struct KernelDefinition;

inline constexpr std::string_view kPluginName = "jitwarm-reference-cpu";
inline constexpr std::string_view kImplName = "reference-cpu";
inline constexpr std::string_view kPlatformName = "cpu";
inline constexpr std::string_view kArtifactFormat = "cpu-instantiation";
// The first line of every instantiation record; the trailing number is the
// record format version (bump it when the record changes).
inline constexpr std::string_view kRecordHeader =
    "jitwarm-reference-cpu instantiation record 1";

// The plugin's own version (the project version it was built with).
std::string_view plugin_version();
// This build's target: "cpu:x86_64" or "cpu:aarch64".
std::string_view host_target();

// What compile produces: `record` is the artifact's binary, a small text
//   jitwarm-reference-cpu instantiation record 1
//   kernel <fully qualified kernel name>
//   instantiation <entry point>
//   target <cpu:arch>
// and `entry_point` the instantiation's name, e.g. "rms_norm<bf16>".
struct CompiledInstantiation {
  std::string entry_point;
  std::string record;
};

// compile(key): validates the key (kernel, parameters against the schema,
// dtype combination, constexpr values, a cpu target) and names the
// instantiation it selects. Never runs a kernel. Unknown kernel:
// JW_ERROR_NOT_FOUND; a non-cpu target: JW_ERROR_UNSUPPORTED; any other bad
// key: JW_ERROR_INVALID_ARGUMENT.
CompiledInstantiation compile_instantiation(std::string_view kernel_name,
                                            const jw_compile_key_view& key);

// launch(artifact, args): reads the artifact's record, finds its
// instantiation (a record this plugin did not write, or an unknown
// instantiation, is refused), checks the arguments select the same one,
// and runs it on the calling thread.
void launch_instantiation(std::string_view kernel_name,
                          const jw_artifact_view& artifact,
                          std::span<const jw_arg_value> args);

// prepare(artifact): the artifact checks of launch_instantiation, once;
// the instantiation a prepared launch runs.
const Instantiation& prepare_instantiation(std::string_view kernel_name,
                                           const jw_artifact_view& artifact);
// launch_prepared(args): runs a prepared instantiation on arguments the
// core validated against the artifact's key.
void run_prepared(const KernelDefinition& definition,
                  const Instantiation& instantiation,
                  std::span<const jw_arg_value> args);

// describe(key): the instantiation and what the key selected, in words.
std::string describe_key(std::string_view kernel_name,
                         const jw_compile_key_view& key);
// fingerprint(key): the plugin version, the record format and the
// instantiation — everything besides the key that the artifact depends on.
std::string fingerprint_key(std::string_view kernel_name,
                            const jw_compile_key_view& key);

// The direct path (no compile, no artifact): select the instantiation from
// the arguments and run it. Returns the instantiation's name.
std::string_view run_kernel(std::string_view kernel_name,
                            std::span<const jw_arg_value> args);

// Every instantiation of a kernel, by name (JW_ERROR_NOT_FOUND for a name
// outside the kernel set).
std::vector<std::string_view> instantiation_names(std::string_view kernel_name);

// The parsed form of a record (exposed for tests and cache tooling).
struct InstantiationRecord {
  std::string kernel_name;
  std::string instantiation;
  std::string target;
};
std::string encode_record(const InstantiationRecord& record);
// Throws JW_ERROR_INVALID_ARGUMENT naming what is wrong with the bytes.
InstantiationRecord parse_record(std::string_view bytes);

}  // namespace jitwarm::reference_cpu
