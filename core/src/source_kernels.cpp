// Kernels from source (docs/kernel-descriptors.md): a descriptor plus its
// CUDA/HIP files, from a kernel directory or from a host. The core does not
// read descriptors itself: it hands each kernel to every loaded plugin that
// compiles source (jw_plugin_api.implement_source_kernel), defines the
// schema the descriptor defines (once; the same schema again is the same
// kernel), and registers what each plugin implements with the precedence
// of where the kernel came from. A plugin loaded later gets every kernel
// known so far, so load order does not matter.
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <filesystem>

#include "bounded_file.hpp"
#include "errors.hpp"
#include "plugin_calls.hpp"
#include "source_kernels.hpp"

namespace jitwarm::detail {
namespace fs = std::filesystem;

namespace {

// The extensions of the files a kernel directory's kernels may include.
bool is_kernel_file(const fs::path& path) {
  static constexpr std::string_view kExtensions[] = {".cu",  ".cuh", ".h",
                                                     ".hpp", ".hip", ".inc"};
  const std::string ext = path.extension().string();
  return std::find(std::begin(kExtensions), std::end(kExtensions), ext) !=
         std::end(kExtensions);
}

std::string read_text(const fs::path& path) {
  FileContents contents =
      read_bounded_file(path, kMaxUserFileBytes, Symlinks::follow);
  if (!contents.ok()) {
    fail(JW_ERROR_IO, "cannot read {}: it {}", path.string(), contents.why);
  }
  return std::move(contents.bytes);
}

// The C view of a kernel, borrowed from `kernel` for one call.
struct SourceKernelView {
  std::vector<jw_source_file> files;
  jw_source_kernel c{};
  explicit SourceKernelView(const SourceKernel& kernel) {
    for (const auto& [name, text] : kernel.files) {
      files.push_back(jw_source_file{name.c_str(), text.data(), text.size()});
    }
    c.struct_size = sizeof(c);
    c.origin = kernel.origin.c_str();
    c.descriptor = kernel.descriptor.data();
    c.descriptor_size = kernel.descriptor.size();
    c.files = files.data();
    c.num_files = static_cast<uint32_t>(files.size());
  }
};

}  // namespace

struct SourceKernelState {
  SourceKernel kernel;
  ImplSource source;
  std::vector<uint64_t> tokens;  // its implementations in the registry
};

// What one plugin made of one kernel.
struct SourceKernels::SourceImplementation {
  std::shared_ptr<ImplRecord> impl;    // null: not for its platform
  std::optional<KernelSchema> schema;  // when the descriptor defines one
  std::string error;                   // why it could not
};

SourceKernels::SourceKernels(Registry& registry, const Logger& logger,
                             PluginLoadHistory& history)
    : registry_(registry), logger_(logger), history_(history) {}

SourceKernels::~SourceKernels() = default;

SourceKernels::SourceImplementation SourceKernels::implement(
    const SourceCompiler& compiler, const SourceKernelState& state) {
  SourceImplementation result;
  const SourceKernelView view(state.kernel);
  const jw_kernel_schema* schema = nullptr;
  jw_kernel_impl impl{};
  clear_last_error();
  const jw_status status = call_into_plugin(
      compiler.path, "implement_source_kernel", JW_ERROR_INTERNAL, [&] {
        return compiler.implement(compiler.host, &view.c, &schema, &impl);
      });
  if (status == JW_ERROR_UNSUPPORTED) return result;
  if (status != JW_OK) {
    result.error = last_error();
    if (result.error.empty()) result.error = jw_status_name(status);
    return result;
  }
  try {
    // Both are read during the call only (jitwarm.h), so copied here.
    if (schema != nullptr) {
      result.schema = KernelSchema::from_c(*schema, state.kernel.origin);
    }
    result.impl =
        ImplRecord::from_c(impl, state.kernel.origin, compiler.library);
    result.impl->source = state.source;
    result.impl->logger = &logger_;
  } catch (const Error& e) {
    // The implementation the plugin made is destroyed by the record that
    // could not be built, or here.
    if (!result.impl && impl.destroy != nullptr) impl.destroy(impl.user_data);
    result.impl.reset();
    result.error = e.what();
  }
  return result;
}

void SourceKernels::define_source_schema(const KernelSchema& schema) {
  if (auto slot = registry_.slot(schema.name())) {
    const auto reading = registry_.read_guard();  // registry.hpp I2
    const KernelSchema& known =
        *slot->state.load(std::memory_order_acquire)->schema;
    if (!known.same_parameters(schema)) {
      fail(JW_ERROR_ALREADY_EXISTS,
           "kernel schema {} is defined by {} with other parameters than {} "
           "gives it",
           schema.name(), known.origin(), schema.origin());
    }
    return;  // the same kernel again: a second source of it
  }
  history_.note_dropped(registry_.define_schema(schema));
}

std::shared_ptr<SourceKernelState> SourceKernels::add(
    SourceKernel kernel, ImplSource source, KernelFileRecord* record) {
  auto state = std::make_shared<SourceKernelState>();
  state->kernel = std::move(kernel);
  state->source = source;
  std::lock_guard lock(mutex_);
  if (compilers_.empty()) {
    fail(JW_ERROR_UNSUPPORTED,
         "{}: no loaded plugin compiles kernels from source (the CUDA and "
         "HIP plugins do)",
         state->kernel.origin);
  }
  std::vector<SourceImplementation> made;
  std::string errors;
  for (const SourceCompiler& compiler : compilers_) {
    SourceImplementation m = implement(compiler, *state);
    if (!m.error.empty()) {
      errors += (errors.empty() ? "" : "\n") + m.error;
    } else if (m.impl) {
      made.push_back(std::move(m));
    }
  }
  if (made.empty()) {
    fail(JW_ERROR_INVALID_ARGUMENT, "{}",
         errors.empty()
             ? fmt::format("{}: no loaded plugin compiles it (its platforms "
                           "are not loaded)",
                           state->kernel.origin)
             : errors);
  }
  for (const SourceImplementation& m : made) {
    if (m.schema) define_source_schema(*m.schema);
  }
  try {
    for (SourceImplementation& m : made) {
      if (record != nullptr) {
        record->kernel = m.impl->kernel_name;
        record->platforms.push_back(m.impl->platform);
      }
      state->tokens.push_back(
          registry_.add(std::move(m.impl), /*allow_pending=*/true));
    }
  } catch (...) {
    registry_.remove_batch(state->tokens);
    throw;
  }
  if (record != nullptr && !errors.empty()) record->detail = errors;
  kernels_.push_back(state);
  return state;
}

void SourceKernels::remove(const std::shared_ptr<SourceKernelState>& kernel) {
  std::vector<uint64_t> tokens;
  {
    std::lock_guard lock(mutex_);
    std::erase(kernels_, kernel);
    tokens.swap(kernel->tokens);
  }
  registry_.remove_batch(tokens);
}

std::vector<SourceKernel> SourceKernels::kernels() {
  std::lock_guard lock(mutex_);
  std::vector<SourceKernel> out;
  for (const auto& state : kernels_) out.push_back(state->kernel);
  return out;
}

void SourceKernels::note_compiler(SourceCompiler compiler) {
  std::lock_guard lock(mutex_);
  for (const auto& state : kernels_) {
    SourceImplementation m = implement(compiler, *state);
    if (!m.error.empty()) {
      logger_.log(JW_LOG_WARNING,
                  fmt::format("{} cannot implement {}: {}", compiler.path,
                              state->kernel.origin, m.error));
      continue;
    }
    if (!m.impl) continue;
    try {
      if (m.schema) define_source_schema(*m.schema);
      state->tokens.push_back(
          registry_.add(std::move(m.impl), /*allow_pending=*/true));
    } catch (const Error& e) {
      logger_.log(JW_LOG_WARNING, e.what());
    }
  }
  compilers_.push_back(std::move(compiler));
}

void SourceKernels::load_kernel_directories(
    const std::vector<std::string>& directories, PluginLoadReport& report) {
  const std::string installed = installed_kernel_directory();
  for (const std::string& directory : directories) {
    if (directory.empty()) continue;
    std::error_code error;
    if (!fs::is_directory(directory, error)) {
      report.kernel_directories.push_back(directory + " (not found)");
      continue;
    }
    report.kernel_directories.push_back(directory);
    std::vector<fs::path> descriptors;
    for (const auto& entry : fs::directory_iterator(directory, error)) {
      if (entry.path().extension() == ".toml") {
        descriptors.push_back(entry.path());
      }
    }
    std::sort(descriptors.begin(), descriptors.end());
    // The installed directory's kernels are bundled; the others are the
    // user's, and beat bundled implementations (docs/plugin-abi.md P10).
    const ImplSource source = fs::equivalent(directory, installed, error)
                                  ? ImplSource::bundled_plugin
                                  : ImplSource::user_plugin;
    for (const fs::path& path : descriptors) {
      KernelFileRecord record;
      record.path = path.string();
      const std::string canonical = fs::weakly_canonical(path, error).string();
      {
        std::lock_guard lock(mutex_);
        if (loaded_kernel_files_.contains(canonical)) {
          record.detail = "duplicate: an earlier load_plugins loaded this file";
          report.kernel_files.push_back(std::move(record));
          continue;
        }
      }
      try {
        SourceKernel kernel = read_source_kernel(record.path);
        // Directory kernels are never removed: they stay registered for
        // the runtime's life.
        (void)add(std::move(kernel), source, &record);
        record.loaded = true;
        std::lock_guard lock(mutex_);
        loaded_kernel_files_.insert(canonical);
      } catch (const Error& e) {
        record.detail = e.what();
        logger_.log(JW_LOG_WARNING, fmt::format("kernel {} rejected: {}",
                                                record.path, record.detail));
      }
      report.kernel_files.push_back(std::move(record));
    }
  }
}

}  // namespace jitwarm::detail

namespace jitwarm {

SourceKernel read_source_kernel(const std::string& descriptor_path) {
  namespace fs = std::filesystem;
  SourceKernel kernel;
  kernel.origin = descriptor_path;
  kernel.descriptor = detail::read_text(descriptor_path);
  const fs::path directory = fs::path(descriptor_path).parent_path();
  std::error_code error;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(
           directory.empty() ? fs::path(".") : directory, error)) {
    if (entry.is_regular_file(error) && detail::is_kernel_file(entry.path())) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    kernel.files.emplace_back(f.filename().string(), detail::read_text(f));
  }
  return kernel;
}

}  // namespace jitwarm
