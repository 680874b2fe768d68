// The compile service (compile_service.hpp): a key compiled with an
// implementation through the cache, past the JIT monitor for a launch; the
// key's view as the implementation takes it; and what each artifact carries
// for the launch path (LaunchAttachment).
#include "compile_service.hpp"

#include "errors.hpp"

namespace jitwarm::detail {

CompileService::CompileService(CompileCache& cache, JitMonitor& monitor,
                               const Logger& logger)
    : cache_(cache), monitor_(monitor), logger_(logger) {}

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
  for (const TuneValue& v : key.config()) {
    out.config.push_back(jw_tune_value{v.name.c_str(), v.value});
  }
  out.view.config = out.config.empty() ? nullptr : out.config.data();
  out.view.num_config = static_cast<uint32_t>(out.config.size());
}

std::vector<TuneConfig> tune_candidates(const ImplRecord& impl,
                                        const CompileKey& key) {
  if (impl.c.tune_candidates == nullptr) return {};
  const CompileKey untuned = key.with_config({});
  KeyViewStorage view;
  make_key_view(untuned, impl, view);
  struct Collected {
    std::vector<TuneConfig> configs;
    std::string error;
  } collected;
  jw_tune_config_sink sink{};
  sink.struct_size = sizeof(sink);
  sink.ctx = &collected;
  sink.emit = [](void* ctx, const jw_tune_value* values,
                 uint32_t count) -> jw_status {
    return c_guard([&] {
      auto& c = *static_cast<Collected*>(ctx);
      if (count > 0 && values == nullptr) {
        fail(JW_ERROR_INVALID_ARGUMENT, "tune_candidates: a null config");
      }
      TuneConfig config;
      for (uint32_t i = 0; i < count; ++i) {
        if (values[i].name == nullptr) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "tune_candidates: a config value without a name");
        }
        config.push_back(TuneValue{values[i].name, values[i].value});
      }
      // Sorted and checked the way a key's config is.
      c.configs.push_back(
          CompileKey("k", "i", "t", {}, std::move(config)).config());
    });
  };
  clear_last_error();
  check_plugin_status(
      impl.c.tune_candidates(impl.c.user_data, &view.view, &sink),
      fmt::format("tune_candidates of {}", untuned.text()));
  return std::move(collected.configs);
}

void check_tuned_key(const ImplRecord& impl, const CompileKey& key) {
  if (key.config().empty()) return;
  const std::vector<TuneConfig> candidates = tune_candidates(impl, key);
  if (candidates.empty()) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: {} is not tunable, so it compiles no config such as {}",
         key.text(), impl.impl_name, tune_config_text(key.config()));
  }
  for (const TuneConfig& c : candidates) {
    if (c == key.config()) return;
  }
  std::string offered;
  for (const TuneConfig& c : candidates) {
    if (offered.size() > 400) {
      offered += ", ...";
      break;
    }
    offered += (offered.empty() ? "" : ", ") + tune_config_text(c);
  }
  fail(JW_ERROR_INVALID_ARGUMENT,
       "{}: config {} is not one {} offers for this key (it offers {})",
       key.text(), tune_config_text(key.config()), impl.impl_name, offered);
}

std::optional<std::string> key_fingerprint(const ImplRecord& impl,
                                           const CompileKey& key) {
  if (impl.c.fingerprint == nullptr) return std::nullopt;
  KeyViewStorage view;
  make_key_view(key, impl, view);
  TextCollector text;
  const jw_text_sink sink = text.sink();
  if (impl.c.fingerprint(impl.c.user_data, &view.view, &sink) != JW_OK)
    return std::nullopt;
  return text.text;
}

CompileCache::Compiler CompileService::compiler_for(const ImplRecord& impl,
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
    check_tuned_key(impl, key);
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
    compiler.fingerprint = [&impl, &key]() {
      return key_fingerprint(impl, key);
    };
  }
  compiler.finalize = [&impl, &key](Artifact& artifact) {
    auto attachment = std::make_shared<LaunchAttachment>(key);
    make_key_view(attachment->key, impl, attachment->key_view);
    artifact.attachment = std::move(attachment);
  };
  return compiler;
}

CompileCache::Lookup CompileService::compile(const ImplRecord& impl,
                                             const KernelSchema& schema,
                                             const CompileKey& key,
                                             bool from_launch) {
  return cache_.get_or_compile(key,
                               compiler_for(impl, schema, key, from_launch));
}

std::vector<CompileCache::BatchLookup> CompileService::compile_batch(
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
      std::vector<std::size_t> sent;  // the plugin's index -> outcome's
      const CompileKey& key(uint32_t index) const {
        return *keys[indices[sent[index]]];
      }
      CompileCache::KeyOutcome& slot(uint32_t index) {
        if (index >= sent.size()) {
          fail(JW_ERROR_INVALID_ARGUMENT,
               "compile_batch answered for key {} of a batch of {}", index,
               sent.size());
        }
        CompileCache::KeyOutcome& outcome = outcomes[sent[index]];
        if (outcome.artifact || outcome.error) {
          fail(JW_ERROR_INVALID_ARGUMENT, "compile_batch answered twice for {}",
               key(index).text());
        }
        return outcome;
      }
    } answers{keys,
              indices,
              std::vector<CompileCache::KeyOutcome>(indices.size()),
              {}};
    std::vector<KeyViewStorage> views(indices.size());
    std::vector<const jw_compile_key_view*> view_pointers;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      // A config the implementation does not offer is that key's error,
      // and the plugin never sees it.
      try {
        check_tuned_key(impl, *keys[indices[k]]);
      } catch (const Error&) {
        answers.outcomes[k].error = std::current_exception();
        continue;
      }
      make_key_view(*keys[indices[k]], impl, views[k]);
      view_pointers.push_back(&views[k].view);
      answers.sent.push_back(k);
    }
    if (view_pointers.empty()) return std::move(answers.outcomes);
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
               answers.key(index).text());
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
        outcome.error = std::make_exception_ptr(Error(
            why, fmt::format(
                     "compile of {}: {} ({})", answers.key(index).text(),
                     message != nullptr && *message != '\0' ? message
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
