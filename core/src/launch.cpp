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
//      monitor), let the implementation prepare, publish; keep the image
//      with it;
//   5. put the arguments in the implementation's order, defaults filled in;
//   6. call the implementation's launch_prepared (or launch).
// (Steps 3 and 4 are find_or_prepare.)
// A hit takes no lock, allocates nothing (for schemas of up to
// ArgumentSignature::kInlineParams parameters) and builds no text: messages
// are made only on the way out with an error.
#include <array>

#include "errors.hpp"
#include "prepared_launch.hpp"
#include "runtime_impl.hpp"

namespace jitwarm::detail {
namespace {

// The launch path's view of one artifact: the key in the owning
// implementation's parameter order. It owns its key: the view points into
// it, and it outlives every launch (the CompileKey a launch derived does not).
struct LaunchAttachment {
  explicit LaunchAttachment(const CompileKey& k) : key(k) {}
  CompileKey key;
  KeyViewStorage key_view;
};

}  // namespace

void make_key_view(const CompileKey& key, const ImplRecord& impl,
                   KeyViewStorage& out) {
  const auto& params = key.params();
  out.specs.clear();
  out.specs.reserve(impl.schema_index.size());
  for (uint32_t schema_index : impl.schema_index) {
    const ParamSpec& p = params.at(schema_index);
    jw_param_spec s{};
    s.struct_size = sizeof(jw_param_spec);
    s.name = p.name.c_str();
    s.kind = p.kind;
    s.dtype = p.dtype;
    s.alignment = p.alignment;
    s.num_stride_specs = static_cast<uint32_t>(p.stride_specs.size());
    for (std::size_t i = 0; i < p.stride_specs.size() && i < JW_MAX_RANK; ++i) {
      s.stride_specs[i] =
          jw_int_spec{p.stride_specs[i].type, p.stride_specs[i].value_class};
    }
    s.int_spec = jw_int_spec{p.int_spec.type, p.int_spec.value_class};
    s.float_type = p.float_type;
    s.scalar_kind = p.scalar_kind;
    s.constexpr_value = p.constexpr_value;
    out.specs.push_back(s);
  }
  out.text = key.text();
  out.view = jw_compile_key_view{};
  out.view.struct_size = sizeof(jw_compile_key_view);
  out.view.kernel_name = key.kernel_name().c_str();
  out.view.impl_name = key.impl_name().c_str();
  out.view.target = key.target().c_str();
  out.view.params = out.specs.data();
  out.view.num_params = static_cast<uint32_t>(out.specs.size());
  out.view.hash_lo = key.hash().lo;
  out.view.hash_hi = key.hash().hi;
  out.view.text = out.text.c_str();
}

// --------------------------------------------------------------------------
// The launch
// --------------------------------------------------------------------------
const KernelState::Platform& RuntimeImpl::resolve(const KernelState& state,
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

void RuntimeImpl::launch(const KernelSlot& slot,
                         std::span<const jw_arg_value> args,
                         std::string_view platform, int32_t device,
                         void* stream) {
  // 1. I2 (registry.hpp): this state stays valid while the guard lives.
  const auto reading = registry_.read_guard();
  const KernelState& state = *slot.state.load(std::memory_order_acquire);
  const KernelSchema& schema = *state.schema;
  // 2.
  const KernelState::Platform& entry = resolve(state, &platform);
  // 3. and 4.
  const PreparedLaunch* prepared = find_or_prepare(state, entry, platform, args,
                                                   device, /*for_launch=*/true);
  // 5. Arguments in the implementation's order, defaults filled in.
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

const PreparedLaunch* RuntimeImpl::find_or_prepare(
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

const PreparedLaunch* RuntimeImpl::find_prepared(
    const KernelSlot& slot, std::span<const jw_arg_value> args,
    std::string_view platform, int32_t device) {
  const auto reading = registry_.read_guard();
  const KernelState& state = *slot.state.load(std::memory_order_acquire);
  const KernelState::Platform& entry = resolve(state, &platform);
  // The state (and its table) may be replaced after the guard ends; the
  // caller only compares the pointer or reads it while nothing registers.
  return find_or_prepare(state, entry, platform, args, device,
                         /*for_launch=*/false);
}

const PreparedLaunch& RuntimeImpl::prepare(const KernelState& state,
                                           const KernelState::Platform& entry,
                                           std::string_view platform,
                                           int32_t device,
                                           const ArgumentSignature& signature) {
  const ImplRecord& impl = *entry.stack.front();
  const KernelSchema& schema = *state.schema;
  const CompileKey key = key_from_signature(
      schema, signature, platforms_.target_for(platform, device),
      impl.impl_name);
  const Artifact& artifact =
      *compile(impl, schema, key, /*from_launch=*/true).artifact;
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
  return *entry.prepared->insert(std::move(launch));
}

CompileKey RuntimeImpl::key_for(const KernelSlot& slot,
                                std::span<const jw_arg_value> args,
                                std::string_view platform, int32_t device) {
  const auto reading = registry_.read_guard();  // registry.hpp I2
  const KernelState& state = *slot.state.load(std::memory_order_acquire);
  const ImplRecord& impl = *resolve(state, &platform).stack.front();
  return derive_key(*state.schema, args,
                    platforms_.target_for(platform, device), impl.impl_name);
}

// --------------------------------------------------------------------------
// Compile through the cache (launch misses and warmup)
// --------------------------------------------------------------------------
CompileCache::Compiler RuntimeImpl::compiler_for(const ImplRecord& impl,
                                                 const KernelSchema& schema,
                                                 const CompileKey& key,
                                                 bool from_launch) {
  // The callbacks refer to impl, schema and key, which outlive the cache
  // call they are made for.
  CompileCache::Compiler compiler;
  compiler.counts_as_compile = (impl.c.flags & JW_IMPL_COMPILES_NOTHING) == 0;
  if (from_launch && compiler.counts_as_compile) {
    compiler.before_compile = [this, &impl, &schema, &key]() {
      monitor_.before_launch_compile(schema, key, impl.platform);
    };
  }
  compiler.compile = [&impl, &key]() {
    KeyViewStorage view;
    make_key_view(key, impl, view);
    struct Sink {
      Artifact artifact;
      int emitted = 0;
    } sink;
    jw_artifact_sink out{};
    out.struct_size = sizeof(out);
    out.ctx = &sink;
    out.emit = [](void* ctx, const jw_artifact_desc* a) -> jw_status {
      return c_guard([&] {
        if (a == nullptr ||
            a->struct_size < offsetof(jw_artifact_desc, entry_point)) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "emit: artifact is null or too small");
        }
        auto& s = *static_cast<Sink*>(ctx);
        if (a->binary_size > 0 && a->binary == nullptr) {
          fail(JW_ERROR_INVALID_ARGUMENT, "emit: binary is null");
        }
        s.artifact.binary.assign(static_cast<const char*>(a->binary),
                                 a->binary_size);
        s.artifact.format = a->format != nullptr ? a->format : "";
        s.artifact.entry_point =
            a->entry_point != nullptr ? a->entry_point : "";
        ++s.emitted;
      });
    };
    clear_last_error();
    check_plugin_status(impl.c.compile(impl.c.user_data, &view.view, &out),
                        fmt::format("compile of {}", key.text()));
    if (sink.emitted != 1) {
      fail(JW_ERROR_INTERNAL,
           "compile of {} emitted {} artifacts (expected exactly one)",
           key.text(), sink.emitted);
    }
    return std::move(sink.artifact);
  };
  if (impl.c.fingerprint != nullptr) {
    compiler.fingerprint = [&impl, &key]() -> std::optional<std::string> {
      KeyViewStorage view;
      make_key_view(key, impl, view);
      TextCollector text;
      const jw_text_sink sink = text.sink();
      if (impl.c.fingerprint(impl.c.user_data, &view.view, &sink) != JW_OK)
        return std::nullopt;
      return text.text;
    };
  }
  compiler.finalize = [&impl, &key](Artifact& artifact) {
    auto attachment = std::make_shared<LaunchAttachment>(key);
    make_key_view(attachment->key, impl, attachment->key_view);
    artifact.attachment = std::move(attachment);
  };
  return compiler;
}

CompileCache::Lookup RuntimeImpl::compile(const ImplRecord& impl,
                                          const KernelSchema& schema,
                                          const CompileKey& key,
                                          bool from_launch) {
  return cache_.get_or_compile(key,
                               compiler_for(impl, schema, key, from_launch));
}

std::vector<CompileCache::BatchLookup> RuntimeImpl::compile_batch(
    const ImplRecord& impl, const KernelSchema& schema,
    std::span<const CompileKey* const> keys) {
  CompileCache::BatchCompiler batch;
  batch.compiler_for = [&](std::size_t index) {
    return compiler_for(impl, schema, *keys[index], /*from_launch=*/false);
  };
  batch.compile_together = [&](std::span<const std::size_t> indices) {
    // The answers the plugin gives, one slot per key of the batch.
    struct Answers {
      std::span<const CompileKey* const> keys;
      std::span<const std::size_t> indices;
      std::vector<CompileCache::KeyOutcome> outcomes;
      CompileCache::KeyOutcome& slot(uint32_t index) {
        if (index >= outcomes.size()) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "compile_batch answered for key {} of a batch of {}", index,
               outcomes.size());
        }
        CompileCache::KeyOutcome& outcome = outcomes[index];
        if (outcome.artifact || outcome.error) {
          fail(JW_ERROR_INVALID_ARGUMENT, "compile_batch answered twice for {}",
               keys[indices[index]]->text());
        }
        return outcome;
      }
    } answers{keys, indices,
              std::vector<CompileCache::KeyOutcome>(indices.size())};
    std::vector<KeyViewStorage> views(indices.size());
    std::vector<const jw_compile_key_view*> view_pointers;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      make_key_view(*keys[indices[k]], impl, views[k]);
      view_pointers.push_back(&views[k].view);
    }
    jw_batch_artifact_sink out{};
    out.struct_size = sizeof(out);
    out.ctx = &answers;
    out.emit = [](void* ctx, uint32_t index,
                  const jw_artifact_desc* a) -> jw_status {
      return c_guard([&] {
        auto& answers = *static_cast<Answers*>(ctx);
        CompileCache::KeyOutcome& outcome = answers.slot(index);
        if (a == nullptr ||
            a->struct_size < offsetof(jw_artifact_desc, entry_point) ||
            (a->binary_size > 0 && a->binary == nullptr)) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "compile_batch: the artifact of {} is null, too small or has "
               "no binary",
               answers.keys[answers.indices[index]]->text());
        }
        Artifact artifact;
        artifact.binary.assign(static_cast<const char*>(a->binary),
                               a->binary_size);
        artifact.format = a->format != nullptr ? a->format : "";
        artifact.entry_point = a->entry_point != nullptr ? a->entry_point : "";
        outcome.artifact = std::move(artifact);
      });
    };
    out.fail = [](void* ctx, uint32_t index, jw_status status,
                  const char* message) -> jw_status {
      return c_guard([&] {
        auto& answers = *static_cast<Answers*>(ctx);
        CompileCache::KeyOutcome& outcome = answers.slot(index);
        // The text a failed compile of the key alone gives.
        const jw_status why =
            status != JW_OK ? status : JW_ERROR_COMPILE_FAILED;
        outcome.error = std::make_exception_ptr(
            Error(why, fmt::format("compile of {}: {} ({})",
                                   answers.keys[answers.indices[index]]->text(),
                                   message != nullptr && *message != '\0'
                                       ? message
                                       : "no detail given",
                                   jw_status_name(why))));
      });
    };
    clear_last_error();
    const jw_status status =
        impl.c.compile_batch(impl.c.user_data, view_pointers.data(),
                             static_cast<uint32_t>(view_pointers.size()), &out);
    if (status != JW_OK) {
      // Keys it did answer keep their answers; the others compile alone.
      logger_.log(JW_LOG_DEBUG,
                  fmt::format("compile_batch of {} keys of {} by {} returned "
                              "{}; compiling the unanswered keys one by one",
                              indices.size(), schema.name(), impl.impl_name,
                              jw_status_name(status)));
      clear_last_error();
    }
    return std::move(answers.outcomes);
  };
  return cache_.get_or_compile_batch(keys, batch);
}

}  // namespace jitwarm::detail
