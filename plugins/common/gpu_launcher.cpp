// GpuLauncher: prepared launches (the loaded function per device context,
// the plan, the packing, the driver call), and launches of artifacts the
// core did not prepare, which prepare once and take the same path.
#include "gpu_launcher.hpp"

#include <jitwarm/plugin.hpp>

#include "key_params.hpp"
#include "launch_plan.hpp"
#include "required_argument.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace jitwarm::gpu {
namespace {

// What prepare reads of an artifact view.
void require_artifact(const jw_artifact_view& artifact) {
  require_argument(
      artifact.struct_size >=
          offsetof(jw_artifact_view, artifact_id) + sizeof(uint64_t),
      "a complete jw_artifact_view");
  require_argument(artifact.key != nullptr, "the artifact's compile key");
  require_argument(artifact.binary != nullptr && artifact.binary_size != 0,
                   "the artifact's binary");
  require_argument(artifact.entry_point != nullptr,
                   "the artifact's entry point");
}

}  // namespace

class GpuPreparedLaunch {
 public:
  GpuPreparedLaunch(const jw_artifact_view& artifact,
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

GpuLauncher::GpuLauncher(const GpuBackendDescription& description,
                         const GpuCompiler& compiler,
                         std::unique_ptr<DeviceDriver> driver)
    : description_(description),
      compiler_(compiler),
      driver_(std::move(driver)) {}

GpuPreparedLaunchPtr GpuLauncher::prepare(const Descriptor& descriptor,
                                          const jw_artifact_view& artifact) {
  require_artifact(artifact);
  return GpuPreparedLaunchPtr(new GpuPreparedLaunch(
      artifact, compiler_.instantiate(descriptor, *artifact.key)));
}

void GpuPreparedLaunchDeleter::operator()(GpuPreparedLaunch* prepared) const {
  delete prepared;
}

void GpuLauncher::launch_prepared(GpuPreparedLaunch& prepared,
                                  std::span<const jw_arg_value> args,
                                  void* stream) {
  const int32_t device = prepared.packing.device(args);
  // Plans, packs and launches in `slot`'s context; false when that context
  // was assumed and the driver refused it for the stream.
  const auto launch_in = [&](const GpuPreparedLaunch::Slot& slot,
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
    if (const GpuPreparedLaunch::Slot* last = prepared.last_ran_in();
        last != nullptr && last->device == device &&
        last->kernel.context_retained &&
        launch_in(*last, StreamContext::assumed)) {
      return;
    }
    const LaunchContext context = driver_->launch_context(device, stream);
    const GpuPreparedLaunch::Slot* slot = prepared.loaded_in(context);
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

namespace {

// The views of an artifact handed to an unprepared launch, copied: that
// launch borrows them for the call only (jitwarm.h), while its prepared
// launch keeps pointing into them. `binary` stays the caller's, valid for
// the life of the process.
class ArtifactCopy {
 public:
  explicit ArtifactCopy(const jw_artifact_view& artifact)
      : view_(artifact), key_(*artifact.key) {
    key_.next = nullptr;  // extensions are not copied (none is read)
    key_.kernel_name = copy(key_.kernel_name, kernel_name_);
    key_.impl_name = copy(key_.impl_name, impl_name_);
    key_.target = copy(key_.target, target_);
    key_.text = copy(key_.text, text_);
    params_.assign(key_.params, key_.params + key_.num_params);
    param_names_.resize(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) {
      params_[i].next = nullptr;
      params_[i].name = copy(params_[i].name, param_names_[i]);
    }
    key_.params = params_.data();
    view_.next = nullptr;
    view_.key = &key_;
    view_.format = copy(view_.format, format_);
    view_.entry_point = copy(view_.entry_point, entry_point_);
  }
  ArtifactCopy(const ArtifactCopy&) = delete;
  ArtifactCopy& operator=(const ArtifactCopy&) = delete;

  const jw_artifact_view& view() const { return view_; }

 private:
  // `text` kept in `into` (which never moves again); null stays null.
  static const char* copy(const char* text, std::string& into) {
    if (text == nullptr) return nullptr;
    into = text;
    return into.c_str();
  }

  jw_artifact_view view_;
  jw_compile_key_view key_;
  std::vector<jw_param_spec> params_;
  std::vector<std::string> param_names_;
  std::string kernel_name_, impl_name_, target_, text_;
  std::string format_, entry_point_;
};

}  // namespace

// An unprepared launch's artifact, copied, and its prepared launch.
struct GpuLauncher::ArtifactLaunch {
  ArtifactLaunch(const jw_artifact_view& borrowed, const GpuCompiler& compiler,
                 const Descriptor& descriptor)
      : artifact(borrowed),
        prepared(artifact.view(),
                 compiler.instantiate(descriptor, *artifact.view().key)) {}

  const ArtifactCopy artifact;  // what `prepared` points into
  GpuPreparedLaunch prepared;
};

GpuLauncher::~GpuLauncher() = default;

GpuLauncher::ArtifactLaunch& GpuLauncher::artifact_launch(
    const Descriptor& descriptor, const jw_artifact_view& artifact) {
  require_artifact(artifact);
  {
    std::shared_lock<std::shared_mutex> lock(artifact_launches_mutex_);
    const auto found = artifact_launches_.find(artifact.artifact_id);
    if (found != artifact_launches_.end()) return *found->second;
  }
  // Prepared outside the lock; a racing first launch of the same artifact
  // keeps the one published first.
  auto made = std::make_unique<ArtifactLaunch>(artifact, compiler_, descriptor);
  std::unique_lock<std::shared_mutex> lock(artifact_launches_mutex_);
  return *artifact_launches_.try_emplace(artifact.artifact_id, std::move(made))
              .first->second;
}

void GpuLauncher::launch(const Descriptor& descriptor,
                         const jw_artifact_view& artifact,
                         std::span<const jw_arg_value> args, void* stream) {
  launch_prepared(artifact_launch(descriptor, artifact).prepared, args, stream);
}

void GpuLauncher::launch(const jw_artifact_view& artifact,
                         std::span<const jw_arg_value> args, void* stream) {
  require_argument(artifact.key != nullptr, "the artifact's compile key");
  launch(GpuCompiler::builtin(*artifact.key), artifact, args, stream);
}

void GpuLauncher::release_all() {
  {
    std::unique_lock<std::shared_mutex> lock(artifact_launches_mutex_);
    artifact_launches_.clear();  // their functions go with the modules
  }
  driver_->release_all();
}

}  // namespace jitwarm::gpu
