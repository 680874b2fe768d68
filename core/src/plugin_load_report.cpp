// The load report in words and as JSON (`jitwarm plugins`, `--json`), and
// the rejection reasons' names. It writes what the load history recorded;
// it must not load or judge anything.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include <jitwarm/jitwarm.hpp>

namespace jitwarm {

std::string_view to_string(PluginRejection rejection) {
  switch (rejection) {
    case PluginRejection::none: return "none";
    case PluginRejection::not_a_shared_object: return "not a shared object";
    case PluginRejection::missing_dependency: return "missing dependency";
    case PluginRejection::load_failed: return "load failed";
    case PluginRejection::missing_entry_symbol: return "missing entry symbol";
    case PluginRejection::negotiation_failed: return "negotiation failed";
    case PluginRejection::abi_too_old: return "ABI too old";
    case PluginRejection::abi_too_new: return "ABI too new";
    case PluginRejection::registration_failed: return "registration failed";
    case PluginRejection::duplicate: return "duplicate";
    case PluginRejection::crashed_in_probe: return "crashed in probe";
  }
  return "unknown";
}

std::size_t PluginLoadReport::loaded_count() const {
  const auto loaded = [](const auto& r) { return r.loaded; };
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), loaded) +
      std::count_if(kernel_files.begin(), kernel_files.end(), loaded));
}

std::size_t PluginLoadReport::rejected_count() const {
  return records.size() + kernel_files.size() - loaded_count();
}

std::string PluginLoadReport::to_text() const {
  std::string out;
  for (const auto& d : searched_directories)
    out += fmt::format("searched {}\n", d);
  for (const auto& r : records) {
    if (r.loaded) {
      out += fmt::format("loaded    {} ({} {}, ABI {}, {})\n", r.path,
                         r.plugin_name, r.plugin_version, r.abi_version,
                         r.precedence);
      if (!r.schemas.empty())
        out += fmt::format("          defines {} kernel schema(s)\n",
                           r.schemas.size());
      if (!r.kernels.empty())
        out += fmt::format("          implements {} kernel(s)\n",
                           r.kernels.size());
      for (const auto& d : r.dropped)
        out += fmt::format("          dropped {}\n", d);
      for (const auto& p : r.platforms)
        out += fmt::format("          platform {}\n", p);
    } else {
      out += fmt::format("rejected  {}\n          {}: {}\n", r.path,
                         to_string(r.rejection), r.detail);
    }
  }
  for (const auto& d : kernel_directories)
    out += fmt::format("kernels   {}\n", d);
  for (const auto& k : kernel_files) {
    if (k.loaded) {
      std::string platforms;
      for (const auto& p : k.platforms)
        platforms += (platforms.empty() ? "" : ", ") + p;
      out += fmt::format("kernel    {}\n          {} on {}\n", k.path, k.kernel,
                         platforms);
    } else {
      out += fmt::format("rejected  {}\n          {}\n", k.path, k.detail);
    }
  }
  out +=
      fmt::format("{} loaded, {} rejected\n", loaded_count(), rejected_count());
  return out;
}

std::string PluginLoadReport::to_json() const {
  nlohmann::json j;
  j["searched"] = searched_directories;
  j["loaded"] = loaded_count();
  j["rejected"] = rejected_count();
  j["plugins"] = nlohmann::json::array();
  for (const auto& r : records) {
    nlohmann::json p;
    p["path"] = r.path;
    p["status"] = r.loaded ? "loaded" : "rejected";
    p["reason"] = r.loaded ? "" : std::string(to_string(r.rejection));
    p["detail"] = r.detail;
    p["name"] = r.plugin_name;
    p["version"] = r.plugin_version;
    p["abi_version"] = r.abi_version;
    p["schemas"] = r.schemas;
    p["kernels"] = r.kernels;
    p["platforms"] = r.platforms;
    p["dropped"] = r.dropped;
    p["precedence"] = r.precedence;
    j["plugins"].push_back(std::move(p));
  }
  j["kernel_directories"] = kernel_directories;
  j["kernels"] = nlohmann::json::array();
  for (const auto& k : kernel_files) {
    j["kernels"].push_back({{"path", k.path},
                            {"status", k.loaded ? "loaded" : "rejected"},
                            {"kernel", k.kernel},
                            {"platforms", k.platforms},
                            {"detail", k.detail}});
  }
  return j.dump(2);
}

}  // namespace jitwarm
