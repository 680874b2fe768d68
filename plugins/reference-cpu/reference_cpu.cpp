// reference_cpu.cpp — compile, launch, describe and fingerprint for the CPU
// reference, and the instantiation record that ties compile to launch (see
// reference_cpu.hpp).
#include "reference_cpu.hpp"

#include <cstddef>

#include "kernel_definitions.hpp"
#include "param_reader.hpp"

#ifndef JITWARM_REFERENCE_CPU_VERSION
#error "the build defines JITWARM_REFERENCE_CPU_VERSION (the project version)"
#endif

namespace jitwarm::reference_cpu {
namespace {

using plugin::PluginError;

const KernelDefinition& definition_for(std::string_view kernel_name) {
  const KernelDefinition* definition = find_kernel_definition(kernel_name);
  if (definition == nullptr) {
    throw PluginError(JW_ERROR_NOT_FOUND,
                      concat("reference-cpu: no kernel named '", kernel_name,
                             "' in the kernel set"));
  }
  return *definition;
}

std::string int_spec_text(const jw_int_spec& spec) {
  std::string text(plugin::int_type_name(spec.type).value_or("?"));
  if (spec.value_class == JW_INT_CLASS_ONE) text += " (== 1)";
  if (spec.value_class == JW_INT_CLASS_DIV16) text += " (divisible by 16)";
  return text;
}

// One line per key parameter: what the key says about it and whether the
// instantiation depends on it (the rest only matters at launch).
std::string key_parameters_text(const jw_compile_key_view& key) {
  std::string text;
  for (uint32_t i = 0; i < key.num_params; ++i) {
    const jw_param_spec& p = key.params[i];
    text += concat("  ", p.name, ": ");
    switch (p.kind) {
      case JW_PARAM_TENSOR:
        text += concat("tensor ", dtype_name(p.dtype));
        break;
      case JW_PARAM_INT:
        text += concat("int ", int_spec_text(p.int_spec),
                       " - read at launch, same code for every value");
        break;
      case JW_PARAM_FLOAT:
        text += concat("float ", p.float_type == JW_FLOAT_F64 ? "fp64" : "fp32",
                       " - read at launch");
        break;
      case JW_PARAM_SCALAR:
        text += p.scalar_kind == JW_SCALAR_FLOAT
                    ? std::string("scalar passed as a float")
                    : concat("scalar passed as an integer ",
                             int_spec_text(p.int_spec));
        break;
      case JW_PARAM_CONSTEXPR:
        text += concat("constexpr = ", scalar_text(p.constexpr_value));
        break;
    }
    text += "\n";
  }
  return text;
}

}  // namespace

std::string_view plugin_version() {
  return JITWARM_REFERENCE_CPU_VERSION;
}

std::string_view host_target() {
#if defined(__x86_64__) || defined(_M_X64)
  return "cpu:x86_64";
#elif defined(__aarch64__) || defined(_M_ARM64)
  return "cpu:aarch64";
#else
#error "the CPU reference names its target by architecture: add this one"
#endif
}

std::string encode_record(const InstantiationRecord& record) {
  return concat(kRecordHeader, "\nkernel ", record.kernel_name,
                "\ninstantiation ", record.instantiation, "\ntarget ",
                record.target, "\n");
}

InstantiationRecord parse_record(std::string_view bytes) {
  auto malformed = [&](const std::string& why) {
    return PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        concat("reference-cpu: malformed instantiation record ", "(", why,
               "); it starts with '", bytes.substr(0, 64), "'"));
  };
  InstantiationRecord record;
  bool seen_kernel = false, seen_instantiation = false, seen_target = false;
  std::size_t line_number = 0;
  while (!bytes.empty()) {
    const std::size_t end = bytes.find('\n');
    if (end == std::string_view::npos) {
      throw malformed("the last line has no newline");
    }
    const std::string_view line = bytes.substr(0, end);
    bytes.remove_prefix(end + 1);
    if (line_number++ == 0) {
      if (line != kRecordHeader) {
        throw malformed(concat("the first line is not '", kRecordHeader, "'"));
      }
      continue;
    }
    const std::size_t space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    const std::string_view value =
        space == std::string_view::npos ? "" : line.substr(space + 1);
    if (value.empty()) {
      throw malformed(concat("line ", line_number, " has no value"));
    }
    bool* seen = nullptr;
    std::string* destination = nullptr;
    if (field == "kernel") {
      seen = &seen_kernel;
      destination = &record.kernel_name;
    } else if (field == "instantiation") {
      seen = &seen_instantiation;
      destination = &record.instantiation;
    } else if (field == "target") {
      seen = &seen_target;
      destination = &record.target;
    } else {
      throw malformed(concat("unknown field '", field, "'"));
    }
    if (*seen) throw malformed(concat("field '", field, "' appears twice"));
    *seen = true;
    *destination = std::string(value);
  }
  if (line_number == 0) throw malformed("it is empty");
  if (!seen_kernel || !seen_instantiation || !seen_target) {
    throw malformed("it needs the fields kernel, instantiation and target");
  }
  return record;
}

CompiledInstantiation compile_instantiation(std::string_view kernel_name,
                                            const jw_compile_key_view& key) {
  const KernelDefinition& definition = definition_for(kernel_name);
  const KeyReader reader(definition.schema(), key);
  const Instantiation& instantiation = definition.select(reader);
  CompiledInstantiation compiled;
  compiled.entry_point = std::string(instantiation.name);
  compiled.record = encode_record(
      InstantiationRecord{std::string(definition.kernel_name),
                          compiled.entry_point, reader.target().text});
  return compiled;
}

const Instantiation& prepare_instantiation(std::string_view kernel_name,
                                           const jw_artifact_view& artifact) {
  const KernelDefinition& definition = definition_for(kernel_name);
  const std::string prefix =
      concat(short_kernel_name(definition.kernel_name), ": artifact: ");
  constexpr std::size_t kNeeded =
      offsetof(jw_artifact_view, entry_point) + sizeof(const char*);
  if (artifact.struct_size < kNeeded) {
    throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                      concat(prefix, "jw_artifact_view struct_size ",
                             artifact.struct_size, " is too small"));
  }
  const std::string_view format =
      artifact.format != nullptr ? artifact.format : "";
  if (format != kArtifactFormat) {
    throw PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        concat(prefix, "format '", format, "' is not '", kArtifactFormat, "'"));
  }
  if (artifact.binary == nullptr && artifact.binary_size != 0) {
    throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                      concat(prefix, "binary is null"));
  }
  const InstantiationRecord record = parse_record(std::string_view(
      static_cast<const char*>(artifact.binary), artifact.binary_size));
  if (record.kernel_name != definition.kernel_name) {
    throw PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        concat(prefix, "the record is for kernel '", record.kernel_name, "'"));
  }
  if (artifact.entry_point != nullptr &&
      record.instantiation != artifact.entry_point) {
    throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                      concat(prefix, "entry point '", artifact.entry_point,
                             "' differs from the record's instantiation '",
                             record.instantiation, "'"));
  }
  const Instantiation* instantiation = definition.find(record.instantiation);
  if (instantiation == nullptr) {
    std::string known;
    for (const Instantiation& i : definition.instantiations) {
      known += known.empty() ? "" : ", ";
      known += i.name;
    }
    throw PluginError(JW_ERROR_NOT_FOUND,
                      concat(prefix, "unknown instantiation '",
                             record.instantiation, "' (known: ", known, ")"));
  }
  return *instantiation;
}

void launch_instantiation(std::string_view kernel_name,
                          const jw_artifact_view& artifact,
                          std::span<const jw_arg_value> args) {
  const KernelDefinition& definition = definition_for(kernel_name);
  const Instantiation& instantiation =
      prepare_instantiation(kernel_name, artifact);
  const KernelArgs kernel_args(definition.schema(), args);
  const Instantiation& selected = definition.select(kernel_args);
  if (&selected != &instantiation) {
    throw PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        concat(short_kernel_name(definition.kernel_name),
               ": artifact: the arguments select '", selected.name,
               "', but the artifact is '", instantiation.name, "'"));
  }
  instantiation.run(kernel_args);
}

void run_prepared(const KernelDefinition& definition,
                  const Instantiation& instantiation,
                  std::span<const jw_arg_value> args) {
  // The core validated the arguments against the artifact's key (P12), and
  // selection reads only what a key holds: no second selection here. The
  // kernel's own checks (extents against its scalar sizes) still run.
  instantiation.run(KernelArgs(definition.schema(), args));
}

std::string describe_key(std::string_view kernel_name,
                         const jw_compile_key_view& key) {
  const KernelDefinition& definition = definition_for(kernel_name);
  const KeyReader reader(definition.schema(), key);
  const Instantiation& instantiation = definition.select(reader);
  return concat(
      "kernel: ", definition.kernel_name, "\nimplementation: ", kImplName, " (",
      kPluginName, " ", plugin_version(),
      ")\nkey: ", reader.text().empty() ? "(no text)" : reader.text(),
      "\ntarget: ", reader.target().text,
      "\ninstantiation: ", instantiation.name,
      "\nselected by: ", definition.selected_by, "\nkey parameters:\n",
      key_parameters_text(key), "artifact: format ", kArtifactFormat,
      ", entry point ", instantiation.name,
      "\nexecution: host memory, synchronously on the calling "
      "thread; the stream argument is ignored\n");
}

std::string fingerprint_key(std::string_view kernel_name,
                            const jw_compile_key_view& key) {
  const KernelDefinition& definition = definition_for(kernel_name);
  const KeyReader reader(definition.schema(), key);
  const Instantiation& instantiation = definition.select(reader);
  return concat(kPluginName, " ", plugin_version(), "\n", kRecordHeader,
                "\ninstantiation ", instantiation.name, "\n");
}

std::string_view run_kernel(std::string_view kernel_name,
                            std::span<const jw_arg_value> args) {
  const KernelDefinition& definition = definition_for(kernel_name);
  const KernelArgs kernel_args(definition.schema(), args);
  const Instantiation& instantiation = definition.select(kernel_args);
  instantiation.run(kernel_args);
  return instantiation.name;
}

std::vector<std::string_view> instantiation_names(
    std::string_view kernel_name) {
  std::vector<std::string_view> names;
  for (const Instantiation& i : definition_for(kernel_name).instantiations) {
    names.push_back(i.name);
  }
  return names;
}

}  // namespace jitwarm::reference_cpu
