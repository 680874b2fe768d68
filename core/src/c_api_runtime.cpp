// The C API of a runtime and what it has loaded (jitwarm.h: the runtime,
// loading plugins, "What is loaded"): forwards to jitwarm::Runtime.
#include <nlohmann/json.hpp>

#include "c_api_support.hpp"

namespace jitwarm::detail::c_api {
namespace {

using OwnedPlatform = Owned<jw_platform_info, PlatformInfo>;
struct OwnedPlatformList : jw_platform_list {
  OwnedItems<OwnedPlatform> platforms;
};

jw_status load_plugins(jw_runtime* runtime, const PluginLoadOptions& options) {
  return act({{runtime, "runtime"}}, [&] {
    const PluginLoadReport report = runtime->runtime.load_plugins(options);
    runtime->searched_directories.insert(runtime->searched_directories.end(),
                                         report.searched_directories.begin(),
                                         report.searched_directories.end());
  });
}

std::string explanation_json(const KernelExplanation& e) {
  nlohmann::json j;
  j["kernel"] = e.kernel_name;
  j["schema_origin"] = e.schema_origin;
  j["platforms"] = nlohmann::json::array();
  for (const auto& p : e.platforms) {
    nlohmann::json replaced = nlohmann::json::array();
    for (const auto& r : p.replaced)
      replaced.push_back(
          {{"implementation", r.impl_name}, {"origin", r.origin}});
    j["platforms"].push_back({{"platform", p.platform},
                              {"implementation", p.winner.impl_name},
                              {"origin", p.winner.origin},
                              {"replaces", std::move(replaced)}});
  }
  return j.dump(2);
}

}  // namespace

jw_platform_list* to_c(std::vector<PlatformInfo> platforms) {
  auto list = std::make_unique<OwnedPlatformList>();
  for (PlatformInfo& info : platforms) {
    OwnedPlatform& item = list->platforms.add(std::move(info));
    item.name = item.value.name.c_str();
    item.origin = item.value.origin.c_str();
    item.detail = item.value.detail.c_str();
    item.can_compile = item.value.can_compile ? 1 : 0;
    item.can_launch = item.value.can_launch ? 1 : 0;
    item.device_count = item.value.device_count;
  }
  jw_platform_list& c = *list;
  set_header(c);
  c.items = list->platforms.data();
  c.count = list->platforms.count();
  return list.release();
}

}  // namespace jitwarm::detail::c_api

namespace c_api = jitwarm::detail::c_api;

extern "C" {

JITWARM_EXPORT jw_status jw_runtime_create(jw_runtime** out_runtime) {
  return c_api::answer({}, out_runtime, "out_runtime", [] {
    return new jw_runtime{jitwarm::Runtime{}, {}};
  });
}

JITWARM_EXPORT jw_status jw_runtime_create_with_options(
    const jw_runtime_options* options, jw_runtime** out_runtime) {
  return c_api::answer({}, out_runtime, "out_runtime", [&] {
    return new jw_runtime{jitwarm::Runtime{c_api::runtime_options_of(options)},
                          {}};
  });
}

JITWARM_EXPORT void jw_runtime_destroy(jw_runtime* runtime) {
  delete runtime;
}

JITWARM_EXPORT jw_status jw_runtime_load_plugins(jw_runtime* runtime,
                                                 const char* search_path,
                                                 int strict) {
  jitwarm::PluginLoadOptions options;
  options.strict = strict != 0;
  if (search_path != nullptr) {
    options.search_path = jitwarm::split_path_list(search_path);
  }
  return c_api::load_plugins(runtime, options);
}

JITWARM_EXPORT jw_status jw_runtime_load_plugins_with_options(
    jw_runtime* runtime, const jw_plugin_load_options* options) {
  jitwarm::PluginLoadOptions load;
  const jw_status read = c_api::act({}, [&] {
    const jw_plugin_load_options o =
        c_api::read_sized(options, "jw_plugin_load_options");
    load.strict = o.strict != 0;
    load.isolate = o.isolate != 0;
    if (o.probe_timeout_ms != 0) {
      load.probe_timeout_seconds = o.probe_timeout_ms / 1000.0;
    }
    if (o.search_path != nullptr) {
      load.search_path = jitwarm::split_path_list(o.search_path);
    }
  });
  if (read != JW_OK) return read;
  return c_api::load_plugins(runtime, load);
}

JITWARM_EXPORT jw_status jw_runtime_load_plugin(jw_runtime* runtime,
                                                const char* path) {
  return c_api::act({{runtime, "runtime"}, {path, "path"}}, [&] {
    runtime->runtime.load_plugin(path, /*strict=*/true);
  });
}

JITWARM_EXPORT jw_status jw_runtime_load_report(jw_runtime* runtime,
                                                jw_text_format format,
                                                char** out_text) {
  return c_api::answer({{runtime, "runtime"}}, out_text, "out_text", [&] {
    jitwarm::PluginLoadReport report;
    report.searched_directories = runtime->searched_directories;
    report.records = runtime->runtime.load_history();
    return c_api::text_in(
        format, [&] { return report.to_text(); },
        [&] { return report.to_json(); });
  });
}

JITWARM_EXPORT jw_status jw_runtime_kernel_names(jw_runtime* runtime,
                                                 jw_string_list** out_names) {
  return c_api::answer({{runtime, "runtime"}}, out_names, "out_names",
                       [&] { return runtime->runtime.kernel_names(); });
}

JITWARM_EXPORT jw_status jw_runtime_explain(jw_runtime* runtime,
                                            const char* kernel_name,
                                            jw_text_format format,
                                            char** out_text) {
  return c_api::answer({{runtime, "runtime"}, {kernel_name, "kernel_name"}},
                       out_text, "out_text", [&] {
                         const jitwarm::KernelExplanation e =
                             runtime->runtime.explain(kernel_name);
                         return c_api::text_in(
                             format, [&] { return e.to_text(); },
                             [&] { return c_api::explanation_json(e); });
                       });
}

JITWARM_EXPORT jw_status jw_runtime_platforms(jw_runtime* runtime,
                                              jw_platform_list** out_list) {
  return c_api::answer({{runtime, "runtime"}}, out_list, "out_list",
                       [&] { return runtime->runtime.platforms(); });
}

JITWARM_EXPORT void jw_platform_list_free(jw_platform_list* list) {
  delete static_cast<c_api::OwnedPlatformList*>(list);
}

JITWARM_EXPORT jw_status jw_runtime_target_for(jw_runtime* runtime,
                                               const char* platform,
                                               int32_t device,
                                               char** out_target) {
  return c_api::answer(
      {{runtime, "runtime"}, {platform, "platform"}}, out_target, "out_target",
      [&] { return runtime->runtime.target_for(platform, device); });
}

JITWARM_EXPORT jw_status jw_runtime_default_platform(jw_runtime* runtime,
                                                     char** out_name) {
  return c_api::answer({{runtime, "runtime"}}, out_name, "out_name",
                       [&] { return runtime->runtime.default_platform(); });
}

}  // extern "C"
