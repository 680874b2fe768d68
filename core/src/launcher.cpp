// The launch path, top to bottom (docs/architecture.md, "The hot path and its
// invariants"):
//   1. enter the registry's readers and load the kernel's state (I2);
//   2. take the platform's winner (the default platform when none is named);
//   3. take the arguments' image (argument_image.hpp); when it is the last
//      launch's, that launch's prepared launch is this one's: skip 4;
//   4. compute the argument signature: every check on the arguments, once,
//      and the facts their key holds, without allocating; find the prepared
//      launch of (signature, device) without a lock; on a miss, prepare()
//      it: derive the key, compile through the cache (past the JIT
//      monitor; compile_service.hpp), let the implementation prepare,
//      publish; keep the image with it;
//   5. put the arguments in the implementation's order, defaults filled in;
//   6. call the implementation's launch_prepared (or launch).
// (Steps 3 and 4 are find_or_prepare.)
// A hit takes no lock, allocates nothing (for schemas of up to
// ArgumentSignature::kInlineParams parameters) and builds no text: messages
// are made only on the way out with an error.
#include <array>
#include <memory>
#include <vector>

#include "errors.hpp"
#include "launcher.hpp"
#include "prepared_launch.hpp"

namespace jitwarm::detail {

namespace {

// Steps 5 and 6 of a launch: the arguments in the implementation's order,
// defaults filled in, and the implementation's launch. Inlined into
// Launcher::launch, which is the hot path; tuning's launches share it.
[[gnu::always_inline]] inline void run_prepared(
    const PreparedLaunch& launch, const KernelSchema& schema,
    std::span<const jw_arg_value> args, void* stream) {
  const PreparedLaunch* prepared = &launch;
  // 5.
  const ImplRecord& impl = *prepared->impl;
  const auto& params = schema.params();
  std::span<const jw_arg_value> impl_args = args;
  std::array<jw_arg_value, ArgumentSignature::kInlineParams> inline_ordered;
  std::vector<jw_arg_value> heap_ordered;  // only for larger schemas
  if (!impl.positional || args.size() != params.size()) {
    const std::size_t n = impl.schema_index.size();
    jw_arg_value* ordered = inline_ordered.data();
    if (n > inline_ordered.size()) {
      heap_ordered.resize(n);
      ordered = heap_ordered.data();
    }
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t s = impl.schema_index[i];
      if (s < args.size()) {
        ordered[i] = args[s];
      } else {
        ordered[i] = jw_arg_value{};
        ordered[i].struct_size = sizeof(jw_arg_value);
        ordered[i].kind = JW_VALUE_SCALAR;
        ordered[i].value.scalar = params[s].default_value;
      }
    }
    impl_args = std::span<const jw_arg_value>(ordered, n);
  }
  // 6.
  clear_last_error();
  const auto num_args = static_cast<uint32_t>(impl_args.size());
  const jw_status status =
      prepared->plugin_prepared != nullptr
          ? impl.c.launch_prepared(impl.c.user_data, prepared->plugin_prepared,
                                   impl_args.data(), num_args, stream)
          : impl.c.launch(impl.c.user_data, &prepared->view, impl_args.data(),
                          num_args, stream);
  if (status != JW_OK) {
    check_plugin_status(status,
                        fmt::format("launch of {}", prepared->key->text()));
  }
}

// The prepared launch of `key` (compiled through the cache) for arguments
// of `signature` on `device`: what the miss path publishes, and what a
// tuning run launches each candidate with.
std::unique_ptr<PreparedLaunch> make_prepared(
    CompileService& compiler, const ImplRecord& impl,
    const KernelSchema& schema, const CompileKey& key,
    const ArgumentSignature& signature, int32_t device, bool from_launch) {
  const Artifact& artifact =
      *compiler.compile(impl, schema, key, from_launch).artifact;
  const auto& attachment =
      *static_cast<const LaunchAttachment*>(artifact.attachment.get());

  auto launch = std::make_unique<PreparedLaunch>(
      signature, device, prepared_launch_hash(signature, device));
  launch->impl = &impl;
  launch->artifact = &artifact;
  launch->key = &attachment.key;
  jw_artifact_view& view = launch->view;
  view.struct_size = sizeof(view);
  view.key = &attachment.key_view.view;
  view.binary = artifact.binary.data();
  view.binary_size = artifact.binary.size();
  view.format = artifact.format.c_str();
  view.entry_point = artifact.entry_point.c_str();
  view.artifact_id = artifact.id;
  if (impl.c.prepare != nullptr) {
    clear_last_error();
    check_plugin_status(impl.c.prepare(impl.c.user_data, &launch->view,
                                       &launch->plugin_prepared),
                        fmt::format("prepare of {}", key.text()));
    if (launch->plugin_prepared == nullptr) {
      fail(JW_ERROR_INTERNAL,
           "prepare of {} by {} succeeded but returned no prepared launch",
           key.text(), impl.origin);
    }
  }
  return launch;
}

}  // namespace

Launcher::Launcher(Registry& registry, Platforms& platforms,
                   CompileCache& cache, CompileService& compiler,
                   TuneResults& tune_results)
    : registry_(registry),
      platforms_(platforms),
      cache_(cache),
      compiler_(compiler),
      tune_results_(tune_results) {}

const KernelState::Platform& Launcher::resolve(const KernelState& state,
                                               std::string_view* platform) {
  if (platform->empty()) *platform = platforms_.default_platform();
  const KernelState::Platform* entry = state.find(*platform);
  if (entry == nullptr) {
    fail(JW_ERROR_NOT_FOUND,
         "{} has no implementation for platform {} (implemented on: {})",
         state.schema->name(), *platform, state.platform_list());
  }
  return *entry;
}

void Launcher::launch(const KernelSlot& slot,
                      std::span<const jw_arg_value> args,
                      std::string_view platform, int32_t device, void* stream) {
  // 1. I2 (registry.hpp): this state stays valid while the guard lives.
  const auto reading = registry_.read_guard();
  const KernelState& state = *slot.state.load(std::memory_order_acquire);
  const KernelSchema& schema = *state.schema;
  // 2.
  const KernelState::Platform& entry = resolve(state, &platform);
  // 3. and 4.
  const PreparedLaunch* prepared = find_or_prepare(state, entry, platform, args,
                                                   device, /*for_launch=*/true);
  // 5. and 6.
  run_prepared(*prepared, schema, args, stream);
}

const PreparedLaunch* Launcher::find_or_prepare(
    const KernelState& state, const KernelState::Platform& entry,
    std::string_view platform, std::span<const jw_arg_value> args,
    int32_t device, bool for_launch) {
  // Arguments with the image of the last launch's (which passed
  // validation) pass it too and find the same launch.
  if (const PreparedLaunch* known = entry.prepared->recall(args, device)) {
    if (for_launch) cache_.count_hit();
    return known;
  }
  ArgumentSignature signature;
  specialize_arguments(*state.schema, args, ArgumentUse::launch, signature);
  const PreparedLaunch* prepared = entry.prepared->find(signature, device);
  if (prepared != nullptr) {
    if (for_launch) cache_.count_hit();
  } else if (for_launch) {
    prepared = &prepare(state, entry, platform, device, signature);
  } else {
    return nullptr;
  }
  ArgumentImage image;
  if (image.capture(args, device)) entry.prepared->remember(image, prepared);
  return prepared;
}

const PreparedLaunch* Launcher::find_prepared(
    const KernelSlot& slot, std::span<const jw_arg_value> args,
    std::string_view platform, int32_t device) {
  const auto reading = registry_.read_guard();
  const KernelState& state = *slot.state.load(std::memory_order_acquire);
  const KernelState::Platform& entry = resolve(state, &platform);
  // The state (and its table) may be replaced after the guard ends; the
  // caller only compares the pointer or reads it while nothing registers
  // or tunes (Registry::refresh).
  return find_or_prepare(state, entry, platform, args, device,
                         /*for_launch=*/false);
}

const PreparedLaunch& Launcher::prepare(const KernelState& state,
                                        const KernelState::Platform& entry,
                                        std::string_view platform,
                                        int32_t device,
                                        const ArgumentSignature& signature) {
  const ImplRecord& impl = *entry.stack.front();
  const KernelSchema& schema = *state.schema;
  const CompileKey key =
      launch_key(schema, impl, signature, platform, device, /*tuned=*/true);
  return *entry.prepared->insert(make_prepared(
      compiler_, impl, schema, key, signature, device, /*from_launch=*/true));
}

CompileKey Launcher::launch_key(const KernelSchema& schema,
                                const ImplRecord& impl,
                                const ArgumentSignature& signature,
                                std::string_view platform, int32_t device,
                                bool tuned) {
  CompileKey key = key_from_signature(schema, signature,
                                      platforms_.target_for(platform, device),
                                      impl.impl_name);
  // A tunable implementation's key runs its winner on this kind of device,
  // where a tuning result names one (tune_results.hpp).
  if (tuned && impl.c.tune_candidates != nullptr) {
    key = tune_results_.resolve(impl, key,
                                platforms_.device_kind(platform, device));
  }
  return key;
}

void Launcher::with_tuning_view(
    const KernelSlot& slot, std::span<const jw_arg_value> args,
    std::string_view platform, int32_t device, void* stream,
    const std::function<void(const TuningView&)>& body) {
  const auto reading = registry_.read_guard();  // registry.hpp I2
  const KernelState& state = *slot.state.load(std::memory_order_acquire);
  const ImplRecord& impl = *resolve(state, &platform).stack.front();
  const KernelSchema& schema = *state.schema;
  ArgumentSignature signature;
  specialize_arguments(schema, args, ArgumentUse::launch, signature);
  const CompileKey key =
      launch_key(schema, impl, signature, platform, device, /*tuned=*/false);
  const TuningView view{
      schema, impl, key, platform, [&](const CompileKey& candidate) {
        std::shared_ptr<const PreparedLaunch> prepared =
            make_prepared(compiler_, impl, schema, candidate, signature, device,
                          /*from_launch=*/false);
        return std::function<void()>([prepared, &schema, args, stream] {
          run_prepared(*prepared, schema, args, stream);
        });
      }};
  body(view);
}

CompileKey Launcher::key_for(const KernelSlot& slot,
                             std::span<const jw_arg_value> args,
                             std::string_view platform, int32_t device) {
  const auto reading = registry_.read_guard();  // registry.hpp I2
  const KernelState& state = *slot.state.load(std::memory_order_acquire);
  const ImplRecord& impl = *resolve(state, &platform).stack.front();
  ArgumentSignature signature;
  specialize_arguments(*state.schema, args, ArgumentUse::key, signature);
  return launch_key(*state.schema, impl, signature, platform, device,
                    /*tuned=*/true);
}

}  // namespace jitwarm::detail
