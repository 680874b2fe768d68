// GpuBackend: registration, the C callbacks, and compile/launch/describe/
// fingerprint on top of the compiler and driver interfaces.
#include "gpu_backend.hpp"

#include <jitwarm/plugin.hpp>

#include "kernel_set.hpp"
#include "key_params.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <map>
#include <mutex>

namespace jitwarm::gpu {
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

std::string content_hash(std::string_view text) {
  const XXH128_hash_t hash = XXH3_128bits(text.data(), text.size());
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64 "%016" PRIx64,
                static_cast<uint64_t>(hash.high64),
                static_cast<uint64_t>(hash.low64));
  return hex;
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

void require(bool condition, const char* what) {
  if (!condition) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              std::string(what) + " is missing");
  }
}

}  // namespace

GpuBackend::GpuBackend(GpuBackendDescription description,
                       std::unique_ptr<RtcCompiler> compiler,
                       std::string compiler_unavailable,
                       std::unique_ptr<DeviceDriver> driver,
                       std::span<const EmbeddedSource> sources)
    : description_(std::move(description)),
      compiler_(std::move(compiler)),
      compiler_unavailable_(std::move(compiler_unavailable)),
      driver_(std::move(driver)),
      sources_(sources) {}

GpuBackend::~GpuBackend() = default;

const RtcCompiler& GpuBackend::require_compiler() const {
  if (compiler_ == nullptr) {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        description_.plugin_name + ": " + description_.compiler_label +
            " is not available: " + compiler_unavailable_);
  }
  return *compiler_;
}

GpuTarget GpuBackend::parse_target(const jw_compile_key_view& key) const {
  return description_.parse_target(key.target != nullptr ? key.target : "");
}

RtcProgram GpuBackend::program_for(const KernelInstantiation& instantiation,
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

std::vector<std::string> GpuBackend::options_of(
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

namespace {

// The built-in kernel a key names.
const GpuBackend::Descriptor& builtin_for(const jw_compile_key_view& key) {
  const std::string_view name =
      key.kernel_name != nullptr ? key.kernel_name : "";
  for (const auto& descriptor : builtin_descriptors()) {
    if (descriptor->kernel_name == name) return descriptor;
  }
  throw plugin::PluginError(JW_ERROR_NOT_FOUND,
                            "no GPU kernel '" + std::string(name) + "'");
}

}  // namespace

std::span<const EmbeddedSource> GpuBackend::sources_of(
    const KernelDescriptor& descriptor) const {
  return descriptor.sources.empty() ? sources_ : descriptor.sources;
}

std::shared_ptr<const CompiledKernel> GpuBackend::compile(
    const jw_compile_key_view& key) {
  return compile(builtin_for(key), key);
}
std::string GpuBackend::describe(const jw_compile_key_view& key) const {
  return describe(builtin_for(key), key);
}
std::string GpuBackend::fingerprint(const jw_compile_key_view& key) const {
  return fingerprint(builtin_for(key), key);
}
void GpuBackend::launch(const jw_artifact_view& artifact,
                        std::span<const jw_arg_value> args, void* stream) {
  require(artifact.key != nullptr, "the artifact's compile key");
  launch(builtin_for(*artifact.key), artifact, args, stream);
}
std::unique_ptr<GpuBackend::PreparedLaunch> GpuBackend::prepare(
    const jw_artifact_view& artifact) {
  require(artifact.key != nullptr, "the artifact's compile key");
  return prepare(builtin_for(*artifact.key), artifact);
}

std::shared_ptr<const CompiledKernel> GpuBackend::compile(
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

std::vector<GpuBackend::BatchResult> GpuBackend::compile_batch(
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

std::string GpuBackend::describe(const Descriptor& descriptor,
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
    text += "compiler: " + description_.compiler_label +
            " unavailable: " + compiler_unavailable_ + "\n";
  }
  return text;
}

std::string GpuBackend::fingerprint(const Descriptor& descriptor,
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

unsigned GpuBackend::preferred_batch_size(std::string_view target) const {
  if (compiler_ == nullptr) return 0;
  return compiler_->preferred_batch_size(description_.parse_target(target));
}

std::shared_ptr<const KernelInstantiation> GpuBackend::launch_recipe(
    const Descriptor& descriptor, const jw_artifact_view& artifact) {
  {
    std::shared_lock<std::shared_mutex> lock(recipes_mutex_);
    const auto found = recipes_.find(artifact.artifact_id);
    if (found != recipes_.end()) return found->second;
  }
  auto recipe = std::make_shared<const KernelInstantiation>(instantiate_kernel(
      descriptor, *artifact.key, parse_target(*artifact.key)));
  std::unique_lock<std::shared_mutex> lock(recipes_mutex_);
  return recipes_.emplace(artifact.artifact_id, std::move(recipe))
      .first->second;
}

void GpuBackend::launch(const Descriptor& descriptor,
                        const jw_artifact_view& artifact,
                        std::span<const jw_arg_value> args, void* stream) {
  require(artifact.struct_size >=
              offsetof(jw_artifact_view, artifact_id) + sizeof(uint64_t),
          "a complete jw_artifact_view");
  require(artifact.key != nullptr, "the artifact's compile key");
  require(artifact.binary != nullptr && artifact.binary_size != 0,
          "the artifact's binary");
  require(artifact.entry_point != nullptr, "the artifact's entry point");
  const jw_compile_key_view& key = *artifact.key;
  // The hot path: no message is built unless something fails.
  const std::string_view what =
      key.text != nullptr ? key.text
                          : (key.kernel_name != nullptr ? key.kernel_name : "");
  const std::shared_ptr<const KernelInstantiation> recipe =
      launch_recipe(descriptor, artifact);
  const KeyParams params(key, *descriptor);
  ArtifactRef ref;
  ref.artifact_id = artifact.artifact_id;
  ref.binary = artifact.binary;
  ref.binary_size = artifact.binary_size;
  ref.format = artifact.format != nullptr ? artifact.format : "";
  ref.entry_point = artifact.entry_point;
  ref.what = what;
  try {
    // The checked packing first: it refuses arguments that contradict the
    // key before anything is loaded or planned from them.
    KernelArguments arguments = KernelArguments::pack(params, args);
    const LoadedKernel loaded =
        driver_->load_kernel(arguments.device(), stream, ref);
    const LaunchPlan plan = plan_launch(*recipe, params, args, loaded.limits);
    if (plan.geometry.empty()) return;  // nothing to do: an empty batch
    arguments.append_extra(plan);
    ConfiguredLaunch configured;
    configured.kernel = &loaded;
    configured.geometry = plan.geometry;
    configured.arguments = &arguments;
    configured.what = what;
    driver_->launch(configured, stream, StreamContext::known);
  } catch (const plugin::PluginError& error) {
    // No driver or no device: say which launch could not run.
    if (error.status() != JW_ERROR_NO_DEVICE) throw;
    throw plugin::PluginError(JW_ERROR_NO_DEVICE,
                              description_.plugin_name + " cannot launch " +
                                  std::string(what) + ": " + error.what());
  }
}

class GpuBackend::PreparedLaunch {
 public:
  PreparedLaunch(const jw_artifact_view& artifact,
                 KernelInstantiation kernel_instantiation)
      : instantiation(std::move(kernel_instantiation)),
        key(*artifact.key, *instantiation.descriptor),
        packing(key) {
    ref.artifact_id = artifact.artifact_id;
    ref.binary = artifact.binary;
    ref.binary_size = artifact.binary_size;
    ref.format = artifact.format != nullptr ? artifact.format : "";
    ref.entry_point = artifact.entry_point;
    ref.what = key.text();
  }

  // What this launch keeps per device context it has run in: the function
  // loaded there, and the plan of every launch on it that does not vary.
  struct Slot {
    Slot(const LaunchContext& c, int32_t d, const LoadedKernel& k)
        : context(c), device(d), kernel(k) {}
    LaunchContext context;
    int32_t device;  // of the tensors it was loaded for
    LoadedKernel kernel;
    mutable LaunchPlanCache plan;
  };

  // The slot the last launch ran in, and noting it: written only when it
  // changes, so a server's launches on one stream only read it.
  const Slot* last_ran_in() const {
    return last_.load(std::memory_order_acquire);
  }
  void ran_in(const Slot& slot) {
    if (last_.load(std::memory_order_relaxed) != &slot) {
      last_.store(&slot, std::memory_order_release);
    }
  }

  // The slot of `context`, or nullptr: one acquire load per context this
  // launch has run in (a handful at most).
  const Slot* loaded_in(const LaunchContext& context) const {
    for (const auto& slot : slots_) {
      const Slot* s = slot.load(std::memory_order_acquire);
      if (s == nullptr) return nullptr;
      if (s->context == context) return s;
    }
    return nullptr;
  }
  const Slot& remember(const LaunchContext& context, int32_t device,
                       LoadedKernel kernel) {
    std::lock_guard lock(mutex_);
    for (const auto& known : storage_) {
      if (known->context == context) return *known;
    }
    storage_.push_back(std::make_unique<Slot>(context, device, kernel));
    for (auto& slot : slots_) {
      if (slot.load(std::memory_order_relaxed) == nullptr) {
        slot.store(storage_.back().get(), std::memory_order_release);
        break;
      }
    }
    // Past the fast slots, launches in further contexts load through the
    // driver's module cache and find their entry here, under the mutex
    // (still correct, just not lock-free).
    return *storage_.back();
  }

  const KernelInstantiation instantiation;
  const KeyParams key;  // checked against its schema once, here
  const ArgumentPacking packing;
  ArtifactRef ref;

 private:
  std::array<std::atomic<const Slot*>, 4> slots_{};
  std::atomic<const Slot*> last_{nullptr};
  std::mutex mutex_;  // only for remember()
  std::vector<std::unique_ptr<Slot>> storage_;
};

std::unique_ptr<GpuBackend::PreparedLaunch> GpuBackend::prepare(
    const Descriptor& descriptor, const jw_artifact_view& artifact) {
  require(artifact.struct_size >=
              offsetof(jw_artifact_view, artifact_id) + sizeof(uint64_t),
          "a complete jw_artifact_view");
  require(artifact.key != nullptr, "the artifact's compile key");
  require(artifact.binary != nullptr && artifact.binary_size != 0,
          "the artifact's binary");
  require(artifact.entry_point != nullptr, "the artifact's entry point");
  return std::make_unique<PreparedLaunch>(
      artifact, instantiate_kernel(descriptor, *artifact.key,
                                   parse_target(*artifact.key)));
}

void GpuBackend::release(PreparedLaunch* prepared) {
  delete prepared;
}

void GpuBackend::launch_prepared(PreparedLaunch& prepared,
                                 std::span<const jw_arg_value> args,
                                 void* stream) {
  const int32_t device = prepared.packing.device(args);
  // Plans, packs and launches in `slot`'s context; false when that context
  // was assumed and the driver refused it for the stream.
  const auto launch_in = [&](const PreparedLaunch::Slot& slot,
                             StreamContext stream_context) {
    const LoadedKernel* loaded = &slot.kernel;
    const LaunchPlan plan = plan_launch(prepared.instantiation, prepared.key,
                                        args, loaded->limits, &slot.plan);
    if (plan.geometry.empty()) return true;  // nothing to do: an empty batch
    KernelArguments arguments = prepared.packing.pack(args, plan);
    ConfiguredLaunch configured;
    configured.kernel = loaded;
    configured.geometry = plan.geometry;
    configured.arguments = &arguments;
    configured.what = prepared.ref.what;
    return driver_->launch(configured, stream, stream_context);
  };
  try {
    // A server launches on one stream in one context again and again: the
    // context the last launch ran in is tried without asking the driver
    // which context the stream is in (CUDA: two queries, about a fifth of
    // a launch's host time beyond cuLaunchKernel). Only a context the
    // driver keeps alive is tried, so the function cannot have gone with
    // its context; the driver refuses it for a stream of another context,
    // which then takes the way below.
    if (const PreparedLaunch::Slot* last = prepared.last_ran_in();
        last != nullptr && last->device == device &&
        last->kernel.context_retained &&
        launch_in(*last, StreamContext::assumed)) {
      return;
    }
    const LaunchContext context = driver_->launch_context(device, stream);
    const PreparedLaunch::Slot* slot = prepared.loaded_in(context);
    if (slot == nullptr) {
      slot = &prepared.remember(
          context, device, driver_->load_kernel(device, stream, prepared.ref));
    }
    prepared.ran_in(*slot);
    launch_in(*slot, StreamContext::known);
  } catch (const plugin::PluginError& error) {
    // No driver or no device: say which launch could not run.
    if (error.status() != JW_ERROR_NO_DEVICE) throw;
    throw plugin::PluginError(JW_ERROR_NO_DEVICE,
                              description_.plugin_name + " cannot launch " +
                                  std::string(prepared.ref.what) + ": " +
                                  error.what());
  }
}

uint32_t GpuBackend::capabilities(std::string& detail) const {
  uint32_t flags = 0;
  detail.clear();
  if (compiler_ != nullptr) {
    flags |= JW_PLATFORM_CAN_COMPILE;
    detail += compiler_->libraries();
  } else {
    detail +=
        description_.compiler_label + " unavailable: " + compiler_unavailable_;
  }
  const DriverStatus status = driver_->status();
  if (status.can_launch) flags |= JW_PLATFORM_CAN_LAUNCH;
  if (!status.detail.empty()) {
    if (!detail.empty()) detail += "; ";
    detail += status.detail;
  }
  return flags;
}

namespace {

// A kernel from source: its entry owns its descriptor (and files) and the
// parameter names its table points to; the core destroys it with the
// implementation.
struct SourceEntry {
  GpuBackend::ImplEntry entry;
  std::vector<const char*> names;
};

}  // namespace

jw_kernel_impl GpuBackend::implement_source_kernel(
    const jw_source_kernel& kernel, const jw_kernel_schema** schema) {
  require(kernel.struct_size >=
              offsetof(jw_source_kernel, num_files) + sizeof(uint32_t),
          "a complete jw_source_kernel");
  require(kernel.descriptor != nullptr, "the kernel's descriptor");
  require(kernel.files != nullptr || kernel.num_files == 0,
          "the kernel's files");
  const std::string origin = kernel.origin != nullptr ? kernel.origin : "host";
  auto files = std::make_shared<SourceFiles>();
  for (uint32_t i = 0; i < kernel.num_files; ++i) {
    const jw_source_file& f = kernel.files[i];
    require(f.name != nullptr && (f.text != nullptr || f.size == 0),
            "a kernel file's name and text");
    files->add(f.name, std::string(f.text != nullptr ? f.text : "", f.size));
  }
  // jitwarm's own headers (portability.cuh, kernel_support.cuh) for
  // kernels that include them; a file of the kernel's own name wins.
  for (const EmbeddedSource& header : sources_) {
    if (!header.name.ends_with(".cuh")) continue;
    if (std::find(files->names.begin(), files->names.end(), header.name) ==
        files->names.end()) {
      files->add(std::string(header.name), std::string(header.text));
    }
  }
  Descriptor descriptor = parse_kernel_descriptor(
      std::string_view(kernel.descriptor, kernel.descriptor_size), origin,
      [](std::string_view name) { return kernel_set::find_schema(name); },
      nullptr, std::move(files));
  if (!descriptor->platforms.empty() &&
      std::find(descriptor->platforms.begin(), descriptor->platforms.end(),
                description_.platform) == descriptor->platforms.end()) {
    throw plugin::PluginError(
        JW_ERROR_UNSUPPORTED,
        origin + ": not written for " + description_.platform);
  }
  std::string contents(kernel.descriptor, kernel.descriptor_size);
  for (uint32_t i = 0; i < kernel.num_files; ++i) {
    const jw_source_file& f = kernel.files[i];
    contents += '\0' + std::string(f.name) + '\0' +
                std::string(f.text != nullptr ? f.text : "", f.size);
  }
  auto* source =
      new SourceEntry{ImplEntry{this, descriptor,
                                description_.impl_name + "+" +
                                    content_hash(contents).substr(0, 8)},
                      {}};
  jw_kernel_impl impl = impl_table(source->entry, source->names);
  impl.destroy = [](void* user_data) {
    // user_data is the entry, the first member of its SourceEntry.
    delete reinterpret_cast<SourceEntry*>(user_data);
  };
  if (schema != nullptr) {
    *schema =
        descriptor->schema != nullptr ? &descriptor->schema->c() : nullptr;
  }
  return impl;
}

void GpuBackend::shutdown() {
  driver_->release_all();
}

// --- registration and the C callbacks ---------------------------------------

namespace {

struct Callbacks {
  static GpuBackend& backend_of(void* user_data) {
    return *static_cast<GpuBackend*>(user_data);
  }

  // Platform
  static jw_status capabilities(void* user_data, uint32_t* out_flags,
                                const jw_text_sink* detail) {
    return plugin::guarded([&] {
      require(out_flags != nullptr, "out_flags");
      std::string text;
      *out_flags = backend_of(user_data).capabilities(text);
      plugin::append(detail, text);
    });
  }
  static jw_status device_count(void* user_data, int32_t* out_count) {
    return plugin::guarded([&] {
      require(out_count != nullptr, "out_count");
      *out_count = backend_of(user_data).driver().device_count();
    });
  }
  static jw_status device_target(void* user_data, int32_t device,
                                 const jw_text_sink* out) {
    return plugin::guarded([&] {
      GpuBackend& backend = backend_of(user_data);
      plugin::append(out, backend.description().platform + ":" +
                              backend.driver().device_arch(device));
    });
  }
  static jw_status allocate(void* user_data, int32_t device, size_t bytes,
                            void** out_ptr) {
    return plugin::guarded([&] {
      require(out_ptr != nullptr, "out_ptr");
      *out_ptr = backend_of(user_data).driver().allocate(device, bytes);
    });
  }
  static jw_status free_memory(void* user_data, int32_t device, void* ptr) {
    return plugin::guarded(
        [&] { backend_of(user_data).driver().free_memory(device, ptr); });
  }
  static jw_status copy(void* user_data, int32_t device, void* dst,
                        const void* src, size_t bytes, jw_copy_direction dir,
                        void* stream) {
    return plugin::guarded([&] {
      backend_of(user_data).driver().copy(device, dst, src, bytes, dir, stream);
    });
  }
  static jw_status synchronize(void* user_data, int32_t device, void* stream) {
    return plugin::guarded(
        [&] { backend_of(user_data).driver().synchronize(device, stream); });
  }
};

}  // namespace

// The kernel callbacks get an ImplEntry (a private type) as user_data, so
// they are defined inside register_with.
struct GpuBackend::KernelCallbacks {
  using Entry = ImplEntry;

  static void check_kernel(const Entry& entry, const jw_compile_key_view& key) {
    const std::string_view expected = entry.descriptor->kernel_name;
    if (key.kernel_name == nullptr || expected != key.kernel_name) {
      throw plugin::PluginError(
          JW_ERROR_INVALID_ARGUMENT,
          "the " + std::string(expected) +
              " implementation was given a key for " +
              (key.kernel_name != nullptr ? key.kernel_name : "(null)"));
    }
  }
  static jw_status compile(void* user_data, const jw_compile_key_view* key,
                           const jw_artifact_sink* out) {
    return plugin::guarded([&] {
      require(key != nullptr, "the compile key");
      require(out != nullptr && out->emit != nullptr, "the artifact sink");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      check_kernel(entry, *key);
      const std::shared_ptr<const CompiledKernel> compiled =
          entry.backend->compile(entry.descriptor, *key);
      jw_artifact_desc artifact{};
      artifact.struct_size = sizeof(jw_artifact_desc);
      artifact.binary = compiled->binary.data();
      artifact.binary_size = compiled->binary.size();
      artifact.format = compiled->format.c_str();
      artifact.entry_point = compiled->entry_point.c_str();
      plugin::check_host(out->emit(out->ctx, &artifact),
                         "handing the artifact to the core");
    });
  }
  static jw_status compile_batch(void* user_data,
                                 const jw_compile_key_view* const* keys,
                                 uint32_t num_keys,
                                 const jw_batch_artifact_sink* out) {
    return plugin::guarded([&] {
      require(keys != nullptr || num_keys == 0, "the keys");
      require(out != nullptr && out->emit != nullptr && out->fail != nullptr,
              "the batch sink");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      for (uint32_t i = 0; i < num_keys; ++i) {
        require(keys[i] != nullptr, "a key of the batch");
        check_kernel(entry, *keys[i]);
      }
      const std::vector<GpuBackend::BatchResult> results =
          entry.backend->compile_batch(entry.descriptor,
                                       std::span(keys, num_keys));
      for (uint32_t i = 0; i < num_keys; ++i) {
        if (results[i].compiled) {
          const CompiledKernel& compiled = *results[i].compiled;
          jw_artifact_desc artifact{};
          artifact.struct_size = sizeof(jw_artifact_desc);
          artifact.binary = compiled.binary.data();
          artifact.binary_size = compiled.binary.size();
          artifact.format = compiled.format.c_str();
          artifact.entry_point = compiled.entry_point.c_str();
          plugin::check_host(out->emit(out->ctx, i, &artifact),
                             "handing an artifact of the batch to the core");
        } else {
          const plugin::PluginError& error = *results[i].error;
          plugin::check_host(
              out->fail(out->ctx, i, error.status(), error.what()),
              "handing a failure of the batch to the core");
        }
      }
    });
  }
  static jw_status launch(void* user_data, const jw_artifact_view* artifact,
                          const jw_arg_value* args, uint32_t num_args,
                          void* stream) {
    return plugin::guarded([&] {
      require(artifact != nullptr, "the artifact");
      require(args != nullptr || num_args == 0, "the arguments");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      if (artifact->key != nullptr) check_kernel(entry, *artifact->key);
      entry.backend->launch(entry.descriptor, *artifact,
                            std::span(args, num_args), stream);
    });
  }
  static jw_status prepare(void* user_data, const jw_artifact_view* artifact,
                           void** out_prepared) {
    return plugin::guarded([&] {
      require(artifact != nullptr, "the artifact");
      require(out_prepared != nullptr, "the prepared launch's out pointer");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      if (artifact->key != nullptr) check_kernel(entry, *artifact->key);
      *out_prepared =
          entry.backend->prepare(entry.descriptor, *artifact).release();
    });
  }
  static jw_status launch_prepared(void* user_data, void* prepared,
                                   const jw_arg_value* args, uint32_t num_args,
                                   void* stream) {
    return plugin::guarded([&] {
      const Entry& entry = *static_cast<const Entry*>(user_data);
      entry.backend->launch_prepared(*static_cast<PreparedLaunch*>(prepared),
                                     std::span(args, num_args), stream);
    });
  }
  static void release_prepared(void*, void* prepared) {
    GpuBackend::release(static_cast<PreparedLaunch*>(prepared));
  }
  static jw_status describe(void* user_data, const jw_compile_key_view* key,
                            const jw_text_sink* out) {
    return plugin::guarded([&] {
      require(key != nullptr, "the compile key");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      check_kernel(entry, *key);
      plugin::append(out, entry.backend->describe(entry.descriptor, *key));
    });
  }
  static jw_status preferred_batch_size(void* user_data, const char* target,
                                        uint32_t* out_size) {
    return plugin::guarded([&] {
      require(target != nullptr, "the target");
      require(out_size != nullptr, "the batch size's out pointer");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      *out_size = entry.backend->preferred_batch_size(target);
    });
  }
  static jw_status fingerprint(void* user_data, const jw_compile_key_view* key,
                               const jw_text_sink* out) {
    return plugin::guarded([&] {
      require(key != nullptr, "the compile key");
      const Entry& entry = *static_cast<const Entry*>(user_data);
      check_kernel(entry, *key);
      plugin::append(out, entry.backend->fingerprint(entry.descriptor, *key));
    });
  }
};

// The C table of `entry`'s implementation; `names` holds its parameter
// names and must live as long as the table is read.
jw_kernel_impl GpuBackend::impl_table(ImplEntry& entry,
                                      std::vector<const char*>& names) const {
  names.clear();
  for (const ExprParam& p : entry.descriptor->params) {
    names.push_back(p.name.c_str());
  }
  jw_kernel_impl impl{};
  impl.struct_size = sizeof(jw_kernel_impl);
  impl.kernel_name = entry.descriptor->kernel_name.c_str();
  impl.platform = description_.platform.c_str();
  impl.impl_name = entry.impl_name.c_str();
  impl.param_names = names.data();
  impl.num_param_names = static_cast<uint32_t>(names.size());
  impl.user_data = &entry;
  impl.compile = &KernelCallbacks::compile;
  impl.compile_batch = &KernelCallbacks::compile_batch;
  impl.launch = &KernelCallbacks::launch;
  impl.describe = &KernelCallbacks::describe;
  impl.fingerprint = &KernelCallbacks::fingerprint;
  impl.preferred_batch_size = &KernelCallbacks::preferred_batch_size;
  impl.prepare = &KernelCallbacks::prepare;
  impl.launch_prepared = &KernelCallbacks::launch_prepared;
  impl.release_prepared = &KernelCallbacks::release_prepared;
  return impl;
}

void GpuBackend::register_with(const jw_host_api& host) {
  std::vector<const char*> names;
  for (const Descriptor& descriptor : builtin_descriptors()) {
    entries_.push_back(std::make_unique<ImplEntry>(
        ImplEntry{this, descriptor, description_.impl_name}));
    // Built-in entries live as long as the backend: no destroy.
    const jw_kernel_impl impl = impl_table(*entries_.back(), names);
    plugin::check_host(host.register_impl(host.host_ctx, &impl),
                       "registering " + description_.impl_name + " for " +
                           descriptor->kernel_name);
  }

  jw_platform_desc platform{};
  platform.struct_size = sizeof(jw_platform_desc);
  platform.name = description_.platform.c_str();
  platform.user_data = this;
  platform.capabilities = &Callbacks::capabilities;
  platform.device_count = &Callbacks::device_count;
  platform.device_target = &Callbacks::device_target;
  platform.allocate = &Callbacks::allocate;
  platform.free_memory = &Callbacks::free_memory;
  platform.copy = &Callbacks::copy;
  platform.synchronize = &Callbacks::synchronize;
  plugin::check_host(host.register_platform(host.host_ctx, &platform),
                     "registering the " + description_.platform + " platform");
}

namespace {

// The installed backends by host table. Never destroyed (see install).
struct InstalledBackends {
  std::mutex mutex;
  std::map<const jw_host_api*, std::unique_ptr<GpuBackend>> by_host;
};
InstalledBackends& installed_backends() {
  static auto* const installed = new InstalledBackends();
  return *installed;
}

}  // namespace

void GpuBackend::install(std::unique_ptr<GpuBackend> backend,
                         const jw_host_api& host) {
  InstalledBackends& installed = installed_backends();
  {
    std::lock_guard<std::mutex> lock(installed.mutex);
    if (installed.by_host.count(&host) != 0) {
      throw plugin::PluginError(
          JW_ERROR_ALREADY_EXISTS,
          backend->description().plugin_name +
              ": register_all called twice with one host table");
    }
  }
  // Registration calls into the host: not under the lock.
  backend->register_with(host);
  std::lock_guard<std::mutex> lock(installed.mutex);
  installed.by_host.emplace(&host, std::move(backend));
}

bool GpuBackend::installed(const jw_host_api& host) {
  InstalledBackends& installed = installed_backends();
  std::lock_guard<std::mutex> lock(installed.mutex);
  return installed.by_host.count(&host) != 0;
}

jw_status GpuBackend::implement_source_kernel_callback(
    const jw_host_api* host, const jw_source_kernel* kernel,
    const jw_kernel_schema** out_schema, jw_kernel_impl* out) {
  return plugin::guarded([&] {
    require(host != nullptr && kernel != nullptr && out != nullptr,
            "the host table, the kernel and the out implementation");
    GpuBackend* backend = nullptr;
    {
      InstalledBackends& installed = installed_backends();
      std::lock_guard<std::mutex> lock(installed.mutex);
      const auto found = installed.by_host.find(host);
      if (found != installed.by_host.end()) backend = found->second.get();
    }
    if (backend == nullptr) {
      throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                                "implement_source_kernel: this host table "
                                "has no registered backend");
    }
    *out = backend->implement_source_kernel(*kernel, out_schema);
  });
}

std::size_t GpuBackend::installed_count() {
  InstalledBackends& installed = installed_backends();
  std::lock_guard<std::mutex> lock(installed.mutex);
  return installed.by_host.size();
}

void GpuBackend::uninstall(const jw_host_api& host) {
  std::unique_ptr<GpuBackend> backend;
  {
    InstalledBackends& installed = installed_backends();
    std::lock_guard<std::mutex> lock(installed.mutex);
    const auto found = installed.by_host.find(&host);
    if (found == installed.by_host.end()) return;
    backend = std::move(found->second);
    installed.by_host.erase(found);
  }
  backend->shutdown();
}

void GpuBackend::shutdown_installed() {
  std::map<const jw_host_api*, std::unique_ptr<GpuBackend>> backends;
  {
    InstalledBackends& installed = installed_backends();
    std::lock_guard<std::mutex> lock(installed.mutex);
    backends.swap(installed.by_host);
  }
  for (auto& [host, backend] : backends) backend->shutdown();
}

}  // namespace jitwarm::gpu
