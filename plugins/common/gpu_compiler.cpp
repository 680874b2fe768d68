// GpuCompiler: compile key -> instantiation -> program -> compiled kernel,
// batches, describe, fingerprint and the compiler's options, on top of the
// run-time compiler interface.
#include "gpu_compiler.hpp"

#include <jitwarm/plugin.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <map>

namespace jitwarm::gpu {

std::string content_hash(std::string_view text) {
  const XXH128_hash_t hash = XXH3_128bits(text.data(), text.size());
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64 "%016" PRIx64,
                static_cast<uint64_t>(hash.high64),
                static_cast<uint64_t>(hash.low64));
  return hex;
}

namespace {

// Bumped when the fingerprint text changes shape, so persistent cache
// entries written under the old shape are not matched by accident.
constexpr int kFingerprintFormat = 1;

std::string key_text(const jw_compile_key_view& key) {
  if (key.text != nullptr) return key.text;
  return key.kernel_name != nullptr ? key.kernel_name : "(unnamed key)";
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty()) text += ' ';
    text += word;
  }
  return text;
}

// Everything that decides the binary of a program, as one string: the
// memo's identity. Header texts are part of it (a test may swap sources).
std::string program_identity(const RtcProgram& program,
                             const GpuTarget& target) {
  std::string identity = target.text + '\n' + program.source_name + ' ' +
                         content_hash(program.source_text) + '\n';
  for (const RtcHeader& header : program.headers) {
    identity += header.name + ' ' + content_hash(header.text) + '\n';
  }
  for (const std::string& expression : program.name_expressions) {
    identity += expression + '\n';
  }
  return identity + joined(program.options);
}

}  // namespace

GpuCompiler::GpuCompiler(const GpuBackendDescription& description,
                         std::unique_ptr<RtcCompiler> compiler,
                         std::string compiler_unavailable,
                         std::span<const EmbeddedSource> sources)
    : description_(description),
      compiler_(std::move(compiler)),
      compiler_unavailable_(std::move(compiler_unavailable)),
      sources_(sources) {}

GpuCompiler::~GpuCompiler() = default;

const RtcCompiler& GpuCompiler::require_compiler() const {
  if (compiler_ == nullptr) {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        description_.plugin_name + ": " + description_.compiler_label +
            " is not available: " + compiler_unavailable_);
  }
  return *compiler_;
}

GpuTarget GpuCompiler::parse_target(const jw_compile_key_view& key) const {
  return description_.parse_target(key.target != nullptr ? key.target : "");
}

RtcProgram GpuCompiler::program_for(const KernelInstantiation& instantiation,
                                    const GpuTarget& target) const {
  RtcProgram program;
  const std::span<const EmbeddedSource> sources =
      sources_of(*instantiation.descriptor);
  const EmbeddedSource& source =
      find_source(sources, instantiation.source_file);
  program.source_name = std::string(source.name);
  program.source_text = std::string(source.text);
  for (const EmbeddedSource* header :
       include_closure(sources, instantiation.source_file)) {
    program.headers.push_back(
        RtcHeader{std::string(header->name), std::string(header->text)});
  }
  program.name_expressions.push_back(instantiation.name_expression());
  program.options = options_of(*instantiation.descriptor, target);
  for (std::string& define : instantiation.define_options()) {
    program.options.push_back(std::move(define));
  }
  return program;
}

std::vector<std::string> GpuCompiler::options_of(
    const KernelDescriptor& descriptor, const GpuTarget& target) const {
  const RtcCompiler& compiler = require_compiler();
  std::vector<std::string> options = compiler.options_for(target);
  // A built-in kernel's sources are the backend's own (a kernel from source
  // brings files that may include more).
  if (descriptor.sources.empty()) {
    if (std::string own = compiler.own_headers_option(); !own.empty()) {
      options.push_back(std::move(own));
    }
  }
  return options;
}

const GpuCompiler::Descriptor& GpuCompiler::builtin(
    const jw_compile_key_view& key) {
  const std::string_view name =
      key.kernel_name != nullptr ? key.kernel_name : "";
  for (const auto& descriptor : builtin_descriptors()) {
    if (descriptor->kernel_name == name) return descriptor;
  }
  throw plugin::PluginError(JW_ERROR_NOT_FOUND,
                            "no GPU kernel '" + std::string(name) + "'");
}

std::span<const EmbeddedSource> GpuCompiler::sources_of(
    const KernelDescriptor& descriptor) const {
  return descriptor.sources.empty() ? sources_ : descriptor.sources;
}

std::shared_ptr<const CompiledKernel> GpuCompiler::compile(
    const jw_compile_key_view& key) {
  return compile(builtin(key), key);
}
std::string GpuCompiler::describe(const jw_compile_key_view& key) const {
  return describe(builtin(key), key);
}
std::string GpuCompiler::fingerprint(const jw_compile_key_view& key) const {
  return fingerprint(builtin(key), key);
}

std::shared_ptr<const CompiledKernel> GpuCompiler::compile(
    const Descriptor& descriptor, const jw_compile_key_view& key) {
  const RtcCompiler& compiler = require_compiler();
  const GpuTarget target = parse_target(key);
  const KernelInstantiation instantiation =
      instantiate_kernel(descriptor, key, target);
  const RtcProgram program = program_for(instantiation, target);
  return memo_.get_or_compile(program_identity(program, target), [&] {
    const auto start = std::chrono::steady_clock::now();
    CompiledProgram output;
    try {
      output = compiler.compile(program, target);
    } catch (const RtcCompileError& error) {
      throw plugin::PluginError(
          JW_ERROR_COMPILE_FAILED,
          description_.compiler_label + " could not compile " + key_text(key) +
              " (" + error.what() + ")\n  source: " + program.source_name +
              "\n  name expression: " + program.name_expressions.front() +
              "\n  options: " + joined(program.options) + "\n" +
              description_.compiler_label + " log:\n" + error.log());
    }
    if (output.lowered_names.size() != 1 || output.lowered_names[0].empty()) {
      throw plugin::PluginError(JW_ERROR_INTERNAL,
                                description_.compiler_label +
                                    " returned no lowered name for " +
                                    program.name_expressions.front());
    }
    CompiledKernel compiled;
    compiled.binary = std::move(output.binary);
    compiled.format = std::move(output.format);
    compiled.entry_point = std::move(output.lowered_names[0]);
    compiled.log = std::move(output.log);
    compiled.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return compiled;
  });
}

std::vector<GpuCompiler::BatchResult> GpuCompiler::compile_batch(
    const Descriptor& descriptor,
    std::span<const jw_compile_key_view* const> keys) {
  std::vector<BatchResult> results(keys.size());
  // Each key's program; keys whose programs differ only in their name
  // expression (same source, headers, options and target) form a group.
  struct Planned {
    std::size_t key;
    RtcProgram program;
    GpuTarget target;
    std::string identity;  // program_identity of the key's own program
  };
  std::vector<Planned> planned;
  std::map<std::string, std::vector<std::size_t>> groups;  // into planned
  std::vector<std::string> group_order;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    try {
      require_compiler();
      const GpuTarget target = parse_target(*keys[i]);
      const KernelInstantiation instantiation =
          instantiate_kernel(descriptor, *keys[i], target);
      RtcProgram program = program_for(instantiation, target);
      std::string identity = program_identity(program, target);
      if (auto known = memo_.find(identity)) {
        results[i].compiled = std::move(known);
        continue;
      }
      RtcProgram base = program;
      base.name_expressions.clear();
      const std::string group = program_identity(base, target);
      auto [it, fresh] = groups.try_emplace(group);
      if (fresh) group_order.push_back(group);
      it->second.push_back(planned.size());
      planned.push_back(
          Planned{i, std::move(program), target, std::move(identity)});
    } catch (const plugin::PluginError& e) {
      results[i].error = e;
    }
  }
  const RtcCompiler* compiler = compiler_.get();
  for (const std::string& group : group_order) {
    const std::vector<std::size_t>& members = groups.at(group);
    // One program, one name expression per distinct instantiation.
    RtcProgram program = planned[members.front()].program;
    program.name_expressions.clear();
    std::map<std::string, std::size_t> expression_index;
    std::vector<std::size_t> first_with;  // planned index per expression
    for (const std::size_t m : members) {
      const std::string& expression =
          planned[m].program.name_expressions.front();
      if (expression_index.try_emplace(expression, first_with.size()).second) {
        program.name_expressions.push_back(expression);
        first_with.push_back(m);
      }
    }
    bool together = program.name_expressions.size() > 1;
    if (together) {
      const GpuTarget& target = planned[members.front()].target;
      const auto start = std::chrono::steady_clock::now();
      try {
        CompiledProgram output = compiler->compile(program, target);
        const double seconds = std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
        const bool apart = !output.binaries.empty();
        if (output.lowered_names.size() != program.name_expressions.size() ||
            (apart &&
             output.binaries.size() != program.name_expressions.size())) {
          throw plugin::PluginError(JW_ERROR_INTERNAL,
                                    "lowered names or binaries missing");
        }
        std::vector<std::pair<std::string, CompiledKernel>> kernels;
        for (std::size_t e = 0; e < first_with.size(); ++e) {
          CompiledKernel kernel;
          // The expression's own kernel, or the program's: every expression.
          kernel.binary = apart ? std::move(output.binaries[e]) : output.binary;
          kernel.format = output.format;
          kernel.entry_point = output.lowered_names[e];
          kernel.log = output.log;
          kernel.compile_seconds =
              seconds / static_cast<double>(first_with.size());
          kernels.emplace_back(planned[first_with[e]].identity,
                               std::move(kernel));
        }
        const auto stored = memo_.put_batch(std::move(kernels));
        for (const std::size_t m : members) {
          const std::size_t e =
              expression_index.at(planned[m].program.name_expressions.front());
          results[planned[m].key].compiled = stored[e];
        }
      } catch (const RtcCompileError&) {
        together = false;  // one instantiation fails: each key alone says which
      } catch (const plugin::PluginError&) {
        together = false;
      }
    }
    // One by one: a lone instantiation, a batch the compiler refused, and
    // any key whose batch result was lost to a failure meanwhile.
    for (const std::size_t m : members) {
      BatchResult& r = results[planned[m].key];
      if (r.compiled) continue;
      try {
        r.compiled = compile(descriptor, *keys[planned[m].key]);
      } catch (const plugin::PluginError& e) {
        r.error = e;
      }
    }
  }
  return results;
}

std::string GpuCompiler::describe(const Descriptor& descriptor,
                                  const jw_compile_key_view& key) const {
  const GpuTarget target = parse_target(key);
  const KernelInstantiation instantiation =
      instantiate_kernel(descriptor, key, target);
  std::string text = "key: " + key_text(key) + "\n";
  text += "implementation: " + description_.impl_name + " (" +
          description_.plugin_name + ")\n";
  text += "target: " + target.text + " -> " + target.binary_format + " for " +
          target.arch + "\n";
  text += "descriptor: " + descriptor->origin + "\n";
  text += "source: " + instantiation.source_file;
  for (const EmbeddedSource* header :
       include_closure(sources_of(*descriptor), instantiation.source_file)) {
    text += " + " + std::string(header->name);
  }
  text += "\nname expression: " + instantiation.name_expression() + "\n";
  text += "template arguments:\n" + instantiation.explain();
  if (compiler_ != nullptr) {
    text += "options: " + joined(options_of(*descriptor, target)) + "\n";
    text += "compiler: " + compiler_->identity_for(target) + "\n";
  } else {
    text += "compiler: " + unavailable() + "\n";
  }
  return text;
}

std::string GpuCompiler::fingerprint(const Descriptor& descriptor,
                                     const jw_compile_key_view& key) const {
  const RtcCompiler& compiler = require_compiler();
  const GpuTarget target = parse_target(key);
  const KernelInstantiation instantiation =
      instantiate_kernel(descriptor, key, target);
  const RtcProgram program = program_for(instantiation, target);
  std::string text = "jitwarm GPU kernel fingerprint, format " +
                     std::to_string(kFingerprintFormat) + "\n";
  text += "implementation: " + description_.impl_name + "\n";
  text += "compiler: " + compiler.identity_for(target) + "\n";
  text += "target: " + target.text + " (" + target.binary_format + ")\n";
  text += "source: " + program.source_name + " xxh128 " +
          content_hash(program.source_text) + "\n";
  for (const RtcHeader& header : program.headers) {
    text += "header: " + header.name + " xxh128 " + content_hash(header.text) +
            "\n";
  }
  text += "name expression: " + program.name_expressions.front() + "\n";
  text += "options: " + joined(program.options) + "\n";
  return text;
}

unsigned GpuCompiler::preferred_batch_size(std::string_view target) const {
  if (compiler_ == nullptr) return 0;
  return compiler_->preferred_batch_size(description_.parse_target(target));
}

KernelInstantiation GpuCompiler::instantiate(
    const Descriptor& descriptor, const jw_compile_key_view& key) const {
  return instantiate_kernel(descriptor, key, parse_target(key));
}

std::string GpuCompiler::unavailable() const {
  return description_.compiler_label + " unavailable: " + compiler_unavailable_;
}

}  // namespace jitwarm::gpu
