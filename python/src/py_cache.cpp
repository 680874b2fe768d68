// jitwarm.resolve_cache_settings, CacheSettings, export_cache_bundle /
// import_cache_bundle and warmup_shard: the host API's cache calls, as they
// are, so Python resolves settings exactly as a runtime and the CLI do.
#include "py_cache.hpp"

#include <pybind11/stl.h>

#include <fmt/format.h>

#include <cmath>

#include "py_errors.hpp"
#include "py_trust.hpp"
#include "py_values.hpp"

namespace jitwarm::python {
namespace {

// Targets as the jitwarm command reads them (parse_target: sm_90 is
// cuda:sm_90). Throws Error: call inside call_core.
std::vector<std::string> parsed_targets(const std::vector<std::string>& typed) {
  std::vector<std::string> targets;
  for (const std::string& t : typed) targets.push_back(parse_target(t));
  return targets;
}

}  // namespace

void CacheArguments::apply(RuntimeOptions& o) const {
  // Errors name the keyword arguments a Python caller typed.
  o.option_names = RuntimeOptions::OptionNames::keywords;
  if (!cache_dir.is_none()) o.cache_dir = path_from(cache_dir);
  if (!no_cache_dir.is_none()) o.no_cache_dir = no_cache_dir.cast<bool>();
  if (!system_cache_dir.is_none())
    o.system_cache_dir = path_from(system_cache_dir);
  if (!cache_max_bytes.is_none()) {
    const long long bytes = cache_max_bytes.cast<long long>();
    if (bytes < 0) invalid("cache_max_bytes must not be negative");
    o.cache_max_bytes = static_cast<uint64_t>(bytes);
  }
  if (!remote_cache.is_none())
    o.remote_cache = remote_cache.cast<std::string>();
  if (!no_remote_cache.is_none())
    o.no_remote_cache = no_remote_cache.cast<bool>();
  if (!remote_timeout.is_none()) {
    const double seconds = remote_timeout.cast<double>();
    if (!(seconds >= 0.001 && seconds <= 600)) {
      invalid(fmt::format("remote_timeout {} s: use 0.001 to 600 seconds",
                          seconds));
    }
    o.remote_timeout = std::chrono::milliseconds(
        static_cast<int64_t>(std::lround(seconds * 1000)));
  }
}

void bind_cache(py::module_& m) {
  py::class_<CacheSettings>(
      m, "CacheSettings",
      "Where compiled kernels are kept: the one resolution of options and "
      "environment (docs/python.md, 'Caches').")
      .def_readonly("directory", &CacheSettings::directory)
      .def_property_readonly(
          "directory_source",
          [](const CacheSettings& s) {
            return std::string(to_string(s.directory_source));
          })
      .def_property_readonly("default_directory",
                             &CacheSettings::default_directory)
      .def_readonly("system_directory", &CacheSettings::system_directory)
      .def_readonly("max_bytes", &CacheSettings::max_bytes)
      .def_property_readonly(
          "remote", [](const CacheSettings& s) { return s.remote_display; })
      .def_readonly("remote_source", &CacheSettings::remote_source)
      .def_property_readonly(
          "remote_timeout",
          [](const CacheSettings& s) {
            return static_cast<double>(s.remote_timeout.count()) / 1000.0;
          })
      .def_readonly("problem", &CacheSettings::problem)
      .def_property_readonly("persistent", &CacheSettings::persistent)
      .def_readonly("signing_key_id", &CacheSettings::signing_key_id)
      .def_readonly("trusted_key_ids", &CacheSettings::trusted_key_ids)
      .def_property_readonly("remote_cache_mode",
                             [](const CacheSettings& s) {
                               return std::string(to_string(s.remote_mode));
                             })
      .def("__repr__", [](const CacheSettings& s) {
        return fmt::format(
            "<CacheSettings directory='{}' ({}) remote='{}'{}>", s.directory,
            to_string(s.directory_source), s.remote_display,
            s.problem.empty() ? "" : " problem='" + s.problem + "'");
      });

  py::class_<CacheBundleEntry>(m, "CacheBundleEntry")
      .def_readonly("key", &CacheBundleEntry::key)
      .def_readonly("target", &CacheBundleEntry::target)
      .def_readonly("bytes", &CacheBundleEntry::bytes);
  py::class_<CacheBundleSummary>(m, "CacheBundleSummary",
                                 "What an export or import did.")
      .def_readonly("bundle", &CacheBundleSummary::bundle)
      .def_readonly("cache_dir", &CacheBundleSummary::cache_dir)
      .def_readonly("entries", &CacheBundleSummary::entries)
      .def_readonly("written", &CacheBundleSummary::written)
      .def_readonly("present", &CacheBundleSummary::present)
      .def_readonly("skipped_corrupt", &CacheBundleSummary::skipped_corrupt)
      .def_readonly("entry_bytes", &CacheBundleSummary::entry_bytes)
      .def_readonly("file_bytes", &CacheBundleSummary::file_bytes)
      .def_readonly("sha256", &CacheBundleSummary::sha256)
      .def_readonly("signer", &CacheBundleSummary::signer)
      .def_property_readonly("targets",
                             [](const CacheBundleSummary& s) {
                               py::dict d;
                               for (const auto& [target, n] : s.targets)
                                 d[py::str(target)] = n;
                               return d;
                             })
      .def_readonly("manifest", &CacheBundleSummary::manifest)
      .def("__repr__", [](const CacheBundleSummary& s) {
        return fmt::format(
            "<CacheBundleSummary {} entries, {} written, {} present>",
            s.entries, s.written, s.present);
      });

  const auto cache_args =
      [](py::object cache_dir, py::object no_cache_dir,
         py::object system_cache_dir, py::object cache_max_bytes,
         py::object remote_cache, py::object no_remote_cache,
         py::object remote_timeout) {
        RuntimeOptions o;
        CacheArguments{cache_dir,       no_cache_dir, system_cache_dir,
                       cache_max_bytes, remote_cache, no_remote_cache,
                       remote_timeout}
            .apply(o);
        return o;
      };
  m.def(
      "resolve_cache_settings",
      [cache_args](py::object cache_dir, py::object no_cache_dir,
                   py::object system_cache_dir, py::object cache_max_bytes,
                   py::object remote_cache, py::object no_remote_cache,
                   py::object remote_timeout) {
        const RuntimeOptions o = cache_args(
            cache_dir, no_cache_dir, system_cache_dir, cache_max_bytes,
            remote_cache, no_remote_cache, remote_timeout);
        return call_core([&] { return resolve_cache_settings(o); });
      },
      py::kw_only(), py::arg("cache_dir") = py::none(),
      py::arg("no_cache_dir") = py::none(),
      py::arg("system_cache_dir") = py::none(),
      py::arg("cache_max_bytes") = py::none(),
      py::arg("remote_cache") = py::none(),
      py::arg("no_remote_cache") = py::none(),
      py::arg("remote_timeout") = py::none(),
      "The cache settings a Runtime with these options would use.");
  m.def(
      "export_cache_bundle",
      [](py::object path, std::vector<std::string> targets,
         py::object cache_dir, py::object system_cache_dir,
         py::object signing_key) {
        RuntimeOptions o;
        CacheArguments a;
        a.cache_dir = cache_dir;
        a.system_cache_dir = system_cache_dir;
        a.apply(o);
        TrustArguments{signing_key}.apply(o);
        const std::string file = path_from(path);
        return call_core([&] {
          return export_cache_bundle(file, parsed_targets(targets), o);
        });
      },
      py::arg("path"), py::arg("targets") = std::vector<std::string>{},
      py::kw_only(), py::arg("cache_dir") = py::none(),
      py::arg("system_cache_dir") = py::none(),
      py::arg("signing_key") = py::none(),
      "Writes the cache's entries of these targets (all when empty) into one "
      "compressed, checksummed bundle file, signed (with its entries) by "
      "signing_key when given.");
  m.def(
      "import_cache_bundle",
      [](py::object path, py::object cache_dir, py::object trusted_keys,
         std::string sha256) {
        RuntimeOptions o;
        CacheArguments a;
        a.cache_dir = cache_dir;
        a.apply(o);
        TrustArguments{py::none(), trusted_keys}.apply(o);
        const std::string file = path_from(path);
        return call_core([&] { return import_cache_bundle(file, o, sha256); });
      },
      py::arg("path"), py::kw_only(), py::arg("cache_dir") = py::none(),
      py::arg("trusted_keys") = py::none(), py::arg("sha256") = "",
      "Checks every entry of a bundle, then writes them all into the cache "
      "(a corrupt or truncated bundle writes none and raises; so does one "
      "not signed by a trusted key, or whose SHA-256 is not `sha256`).");
  // Cache administration: what `jitwarm cache` does.
  py::class_<CacheEntryInfo>(m, "CacheEntryInfo")
      .def_readonly("key", &CacheEntryInfo::key)
      .def_readonly("kernel", &CacheEntryInfo::kernel)
      .def_readonly("implementation", &CacheEntryInfo::implementation)
      .def_readonly("target", &CacheEntryInfo::target)
      .def_readonly("bytes", &CacheEntryInfo::bytes)
      .def_readonly("system", &CacheEntryInfo::system);
  py::class_<CacheListing>(m, "CacheListing",
                           "Every entry of a cache directory, and every "
                           "corrupt one as (path, why).")
      .def_readonly("cache_dir", &CacheListing::cache_dir)
      .def_readonly("entries", &CacheListing::entries)
      .def_property_readonly("corrupt", [](const CacheListing& l) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& c : l.corrupt) out.emplace_back(c.path, c.why);
        return out;
      });
  py::class_<CacheBundleUse>(m, "CacheBundleUse",
                             "A bundle imported into the cache directory: "
                             "its entries still present, and of those the "
                             "ones a runtime ever loaded.")
      .def_readonly("name", &CacheBundleUse::name)
      .def_readonly("id", &CacheBundleUse::id)
      .def_readonly("imported", &CacheBundleUse::imported)
      .def_readonly("entries", &CacheBundleUse::entries)
      .def_readonly("entries_ever_hit", &CacheBundleUse::entries_ever_hit)
      .def("__repr__", [](const CacheBundleUse& b) {
        return fmt::format(
            "CacheBundleUse(name='{}', entries={}, entries_ever_hit={})",
            b.name, b.entries, b.entries_ever_hit);
      });
  py::class_<CacheReport>(m, "CacheReport",
                          "What a cache action found or did; entries and "
                          "bytes are the cache's after it.")
      .def_readonly("cache_dir", &CacheReport::cache_dir)
      .def_readonly("entries", &CacheReport::entries)
      .def_readonly("bytes", &CacheReport::bytes)
      .def_readonly("system_entries", &CacheReport::system_entries)
      .def_readonly("system_bytes", &CacheReport::system_bytes)
      .def_readonly("corrupt", &CacheReport::corrupt)
      .def_readonly("corrupt_files", &CacheReport::corrupt_files)
      .def_readonly("removed", &CacheReport::removed)
      .def_readonly("removed_bytes", &CacheReport::removed_bytes)
      .def_readonly("bundles", &CacheReport::bundles)
      .def_readonly("bundle_problems", &CacheReport::bundle_problems)
      .def_property_readonly("signers",
                             [](const CacheReport& r) {
                               py::dict d;
                               for (const auto& [id, n] : r.signers)
                                 d[py::str(id)] = n;
                               return d;
                             })
      .def_property_readonly(
          "untrusted",
          [](const CacheReport& r) {
            std::vector<std::pair<std::string, std::string>> out;
            for (const auto& u : r.untrusted) out.emplace_back(u.path, u.why);
            return out;
          })
      .def_property_readonly("removed_by_target", [](const CacheReport& r) {
        py::dict d;
        for (const auto& [target, n] : r.removed_by_target)
          d[py::str(target)] = n;
        return d;
      });
  // The directory as a runtime with these options would use it.
  const auto directory_of = [](py::object cache_dir,
                               py::object system_cache_dir,
                               py::object cache_max_bytes) {
    RuntimeOptions o;
    CacheArguments a;
    a.cache_dir = cache_dir;
    a.system_cache_dir = system_cache_dir;
    a.cache_max_bytes = cache_max_bytes;
    a.apply(o);
    return o;
  };
  m.def(
      "parse_target",
      [](const std::string& typed) {
        return call_core([&] { return parse_target(typed); });
      },
      py::arg("target"),
      "A target as typed (cuda:sm_90, or the shorthand sm_90, gfx942) as "
      "PLATFORM:ARCH, read as the jitwarm command reads it.");
  m.def(
      "list_cache",
      [directory_of](std::vector<std::string> targets, py::object cache_dir,
                     py::object system_cache_dir) {
        const RuntimeOptions o =
            directory_of(cache_dir, system_cache_dir, py::none());
        return call_core(
            [&] { return list_cache(parsed_targets(targets), o); });
      },
      py::arg("targets") = std::vector<std::string>{}, py::kw_only(),
      py::arg("cache_dir") = py::none(),
      py::arg("system_cache_dir") = py::none(),
      "Every entry of the cache (and of its system layer) of these targets "
      "(all when empty), and every corrupt one.");
  m.def(
      "cache_directory_stats",
      [directory_of](py::object cache_dir, py::object system_cache_dir) {
        const RuntimeOptions o =
            directory_of(cache_dir, system_cache_dir, py::none());
        return call_core([&] { return cache_directory_stats(o); });
      },
      py::kw_only(), py::arg("cache_dir") = py::none(),
      py::arg("system_cache_dir") = py::none(),
      "Entries and bytes of the cache directory and of its system layer.");
  m.def(
      "verify_cache",
      [directory_of](py::object cache_dir, py::object trusted_keys) {
        RuntimeOptions o = directory_of(cache_dir, py::none(), py::none());
        TrustArguments{py::none(), trusted_keys}.apply(o);
        return call_core([&] { return verify_cache(o); });
      },
      py::kw_only(), py::arg("cache_dir") = py::none(),
      py::arg("trusted_keys") = py::none(),
      "Reads and checks every entry of the cache directory (and with "
      "trusted_keys, its signature: CacheReport.untrusted).");
  m.def(
      "prune_cache",
      [directory_of](py::object max_bytes, py::object cache_dir) {
        const RuntimeOptions o = directory_of(cache_dir, py::none(), max_bytes);
        return call_core([&] { return prune_cache(o); });
      },
      py::kw_only(), py::arg("max_bytes") = py::none(),
      py::arg("cache_dir") = py::none(),
      "Evicts least recently used entries down to max_bytes (default: "
      "JITWARM_CACHE_MAX_BYTES).");
  m.def(
      "clear_cache",
      [directory_of](std::vector<std::string> targets, py::object cache_dir) {
        const RuntimeOptions o =
            directory_of(cache_dir, py::none(), py::none());
        return call_core(
            [&] { return clear_cache(parsed_targets(targets), o); });
      },
      py::arg("targets") = std::vector<std::string>{}, py::kw_only(),
      py::arg("cache_dir") = py::none(),
      "Removes the entries of these targets (all when empty).");
  m.def(
      "warmup_shard",
      [](const std::vector<CompileKey>& plan, unsigned shard, unsigned count) {
        return call_core([&] { return warmup_shard(plan, shard, count); });
      },
      py::arg("plan"), py::arg("shard"), py::arg("count"),
      "Shard `shard` of `count` (1 to count) of a plan, for machines that "
      "warm one plan between them.");
}

}  // namespace jitwarm::python
