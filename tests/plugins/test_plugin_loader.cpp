// The plugin loader against fake plugins built from one source: for each
// candidate, check what the handshake decided and why (not just that
// loading succeeded or failed), and that a rejected plugin leaves no trace.
#include <doctest/doctest.h>
#include <unistd.h>
#include <jitwarm/jitwarm.hpp>

#include "registry.hpp"
#include "runtime_impl.hpp"

#include <filesystem>
#include <span>

using namespace jitwarm;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSilu =
    "vllm.model_executor.layers.activation.silu_and_mul";

const PluginLoadRecord& record_for(const PluginLoadReport& report,
                                   const std::string& variant) {
  const std::string file = "libjitwarm-fake-" + variant + ".so";
  for (const auto& r : report.records) {
    if (fs::path(r.path).filename() == file) return r;
  }
  FAIL("no record for " << file);
  throw;  // unreachable
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Loaded {
  Runtime runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
  PluginLoadReport reference;
  PluginLoadReport fakes;
  Loaded() {
    reference = runtime.load_plugins({{REFERENCE_PLUGIN}, false});
    fakes = runtime.load_plugins({{FAKE_PLUGIN_DIR}, false});
  }
};

}  // namespace

TEST_CASE(
    "given the reference plugin, then it loads and defines the ten kernels on "
    "cpu") {
  Loaded l;
  REQUIRE(l.reference.records.size() == 1);
  const PluginLoadRecord& r = l.reference.records[0];
  CHECK_MESSAGE(r.loaded, r.detail);
  CHECK(r.plugin_name == "jitwarm-reference-cpu");
  CHECK(r.abi_version == JITWARM_ABI_VERSION);
  CHECK(r.schemas.size() == 10);
  CHECK(r.kernels.size() == 10);
  REQUIRE(r.platforms.size() == 1);
  CHECK(contains(r.platforms[0], "cpu: launch"));
}

TEST_CASE(
    "given each fake plugin, then the negotiation decided what its macro asked "
    "for") {
  Loaded l;
  CHECK(l.fakes.records.size() == 9);

  const auto& good = record_for(l.fakes, "good");
  CHECK_MESSAGE(good.loaded, good.detail);
  CHECK(good.abi_version == 1);

  const auto& no_entry = record_for(l.fakes, "no-entry");
  CHECK_FALSE(no_entry.loaded);
  CHECK(no_entry.rejection == PluginRejection::missing_entry_symbol);
  CHECK(contains(no_entry.detail, "jitwarm_plugin_negotiate"));

  const auto& too_old = record_for(l.fakes, "abi-too-old");
  CHECK(too_old.rejection == PluginRejection::abi_too_old);
  CHECK(too_old.abi_version == 0);
  CHECK(contains(too_old.detail,
                 "plugin speaks ABI version 0; this core requires 1 to 1"));

  const auto& too_new = record_for(l.fakes, "abi-too-new");
  CHECK(too_new.rejection == PluginRejection::abi_too_new);
  CHECK(too_new.abi_version == JITWARM_ABI_VERSION + 1);
  CHECK(contains(too_new.detail,
                 "plugin requires ABI version 2; this core speaks 1 to 1"));

  const auto& refuses = record_for(l.fakes, "registration-fails");
  CHECK(refuses.rejection == PluginRejection::registration_failed);
  CHECK(contains(refuses.detail, "requires FakeGPU 9"));

  const auto& duplicate = record_for(l.fakes, "duplicate-schema");
  CHECK(duplicate.rejection == PluginRejection::registration_failed);
  CHECK(contains(duplicate.detail, "libjitwarm-reference-cpu.so"));
  CHECK(contains(duplicate.detail, "libjitwarm-fake-duplicate-schema.so"));
  CHECK(contains(duplicate.detail, "defined twice"));

  const auto& missing = record_for(l.fakes, "missing-vendor");
  CHECK(missing.rejection == PluginRejection::missing_dependency);
  CHECK(contains(missing.detail, "libjitwarm-missing-vendor.so.1"));

  const auto& garbage = record_for(l.fakes, "garbage");
  CHECK(garbage.rejection == PluginRejection::not_a_shared_object);
  CHECK(contains(garbage.detail, "not an ELF file"));

  const auto& override_ref = record_for(l.fakes, "override-reference");
  CHECK_MESSAGE(override_ref.loaded, override_ref.detail);
  CHECK(l.fakes.loaded_count() == 2);
  CHECK(l.fakes.rejected_count() == 7);
}

TEST_CASE(
    "given a vendor override of a reference kernel, then explain shows who won "
    "and what it "
    "replaced") {
  Loaded l;
  const KernelExplanation e = l.runtime.explain(kSilu);
  CHECK(contains(e.schema_origin, "libjitwarm-reference-cpu.so"));
  REQUIRE(e.platforms.size() == 1);
  CHECK(e.platforms[0].winner.impl_name == "fake-vendor-silu");
  CHECK(contains(e.platforms[0].winner.origin,
                 "libjitwarm-fake-override-reference.so"));
  REQUIRE(e.platforms[0].replaced.size() == 1);
  CHECK(e.platforms[0].replaced[0].impl_name == "reference-cpu");
}

TEST_CASE(
    "given rejected plugins, then they left no schema, kernel or platform "
    "behind") {
  Loaded l;
  // The duplicate's schema is still the reference's; the failing plugin
  // registered nothing; only the reference, override and good plugins count.
  CHECK(contains(l.runtime.explain(kSilu).schema_origin,
                 "libjitwarm-reference-cpu.so"));
  CHECK(l.runtime.kernel_names().size() == 11);  // ten + jitwarm.test.scale
  std::vector<std::string> platforms;
  for (const auto& p : l.runtime.platforms()) platforms.push_back(p.name);
  CHECK(platforms == std::vector<std::string>{"cpu", "fake"});
  // The host still works after all of that.
  CHECK(l.runtime.default_platform() == "cpu");
}

TEST_CASE(
    "given the same plugin in two directories, then the second copy is "
    "rejected") {
  const fs::path copy_dir =
      fs::temp_directory_path() / ("jitwarm-dup-" + std::to_string(getpid()));
  fs::create_directories(copy_dir);
  fs::copy_file(REFERENCE_PLUGIN, copy_dir / "libjitwarm-reference-cpu.so",
                fs::copy_options::overwrite_existing);
  Runtime runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
  const auto report =
      runtime.load_plugins({{REFERENCE_PLUGIN, copy_dir.string()}, false});
  REQUIRE(report.records.size() == 2);
  CHECK(report.records[0].loaded);
  CHECK(report.records[1].rejection == PluginRejection::duplicate);
  CHECK(contains(report.records[1].detail, "already loaded from"));
  fs::remove_all(copy_dir);
}

TEST_CASE(
    "given strict mode, then any rejection is an error that lists the report") {
  Runtime runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
  try {
    runtime.load_plugins({{FAKE_PLUGIN_DIR}, true});
    FAIL("expected strict loading to fail");
  } catch (const Error& e) {
    CHECK(contains(e.what(), "strict plugin loading"));
    CHECK(contains(e.what(), "missing entry symbol"));
  }
  CHECK_THROWS_AS(
      runtime.load_plugin(FAKE_PLUGIN_DIR "/libjitwarm-fake-garbage.so", true),
      Error);
}

TEST_CASE(
    "given the default search path, then JITWARM_PLUGIN_PATH comes before the "
    "install dir") {
  setenv("JITWARM_PLUGIN_PATH", "/a:/b::/c", 1);
  const auto path = default_plugin_search_path();
  CHECK(path == std::vector<std::string>{"/a", "/b", "/c",
                                         installed_plugin_directory()});
  Runtime runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
  const auto report = runtime.load_plugins({{"/nonexistent-dir"}, false});
  CHECK(report.records.empty());
  CHECK(report.searched_directories.at(0) == "/nonexistent-dir (not found)");
  CHECK(contains(report.to_json(), "\"rejected\": 0"));
}

namespace {

// A bundled directory (a copy of the reference plugin) and a user one (a
// vendor plugin that overrides the reference's silu_and_mul on cpu).
struct PrecedenceDirs {
  fs::path root = fs::temp_directory_path() /
                  ("jitwarm-precedence-" + std::to_string(getpid()));
  fs::path bundled = root / "bundled";
  fs::path vendor = root / "vendor";
  PrecedenceDirs() {
    fs::create_directories(bundled);
    fs::create_directories(vendor);
    fs::copy_file(REFERENCE_PLUGIN, bundled / "libjitwarm-reference-cpu.so",
                  fs::copy_options::overwrite_existing);
    fs::copy_file(FAKE_PLUGIN_DIR "/libjitwarm-fake-override-reference.so",
                  vendor / "libjitwarm-fake-override-reference.so",
                  fs::copy_options::overwrite_existing);
  }
  ~PrecedenceDirs() { fs::remove_all(root); }
  PluginLoadOptions search(std::vector<std::string> path) const {
    PluginLoadOptions options;
    options.search_path = std::move(path);
    options.bundled_directories = {bundled.string()};
    return options;
  }
};

Runtime quiet_runtime() {
  return Runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
}

void check_vendor_wins(const Runtime& runtime) {
  const KernelExplanation e = runtime.explain(kSilu);
  REQUIRE(e.platforms.size() == 1);
  const PlatformExplanation& cpu = e.platforms[0];
  CHECK(cpu.winner.impl_name == "fake-vendor-silu");
  CHECK(cpu.winner.precedence == "user plugin");
  REQUIRE(cpu.replaced.size() == 1);
  CHECK(cpu.replaced[0].impl_name == "reference-cpu");
  CHECK(cpu.replaced[0].precedence == "bundled plugin");
  const std::string text = e.to_text();
  CHECK(contains(text, "'fake-vendor-silu' from"));
  CHECK(contains(text, "(user plugin)"));
  CHECK(contains(text,
                 "a user plugin beats a bundled plugin whatever the load "
                 "order"));
}

}  // namespace

TEST_CASE(
    "given a user plugin and a bundled one implementing one kernel on cpu, "
    "then the user's wins whatever the load order, and explain says why") {
  const PrecedenceDirs dirs;
  SUBCASE("one search, user directory first") {
    Runtime runtime = quiet_runtime();
    const auto report = runtime.load_plugins(
        dirs.search({dirs.vendor.string(), dirs.bundled.string()}));
    REQUIRE(report.loaded_count() == 2);
    CHECK(report.records[0].precedence == "user plugin");
    CHECK(report.records[1].precedence == "bundled plugin");
    CHECK(contains(report.to_text(), "bundled plugin)"));
    check_vendor_wins(runtime);
  }
  SUBCASE("one search, bundled directory first") {
    Runtime runtime = quiet_runtime();
    runtime.load_plugins(
        dirs.search({dirs.bundled.string(), dirs.vendor.string()}));
    check_vendor_wins(runtime);
  }
  SUBCASE("two loads, the bundled plugin last") {
    Runtime runtime = quiet_runtime();
    runtime.load_plugins(dirs.search({dirs.vendor.string()}));
    runtime.load_plugins(dirs.search({dirs.bundled.string()}));
    check_vendor_wins(runtime);
  }
  SUBCASE("two loads, the bundled plugin first") {
    Runtime runtime = quiet_runtime();
    runtime.load_plugins(dirs.search({dirs.bundled.string()}));
    runtime.load_plugins(dirs.search({dirs.vendor.string()}));
    check_vendor_wins(runtime);
  }
}

TEST_CASE(
    "given a host override, then a user plugin loaded after it stays below "
    "it until it is released") {
  Runtime runtime = quiet_runtime();
  runtime.load_plugin(REFERENCE_PLUGIN);
  HostKernel host;
  host.impl_name = "host-silu";
  host.launch = [](std::span<const jw_arg_value>, void*) {};
  RegistrationHandle handle =
      runtime.register_kernels({KernelOverride{kSilu, std::nullopt, host}});
  runtime.load_plugin(FAKE_PLUGIN_DIR "/libjitwarm-fake-override-reference.so");
  const KernelExplanation e = runtime.explain(kSilu);
  CHECK(e.platforms.at(0).winner.impl_name == "host-silu");
  CHECK(e.platforms.at(0).winner.precedence == "host override");
  CHECK(e.platforms.at(0).replaced.at(0).impl_name == "fake-vendor-silu");
  handle.release();
  CHECK(runtime.explain(kSilu).platforms.at(0).winner.impl_name ==
        "fake-vendor-silu");
}

TEST_CASE(
    "given two live runtimes that load the reference plugin, when the "
    "second is destroyed, then the first still gets the plugin's errors "
    "and results (each runtime has its own registration)") {
  Runtime first = quiet_runtime();
  REQUIRE(first.load_plugin(REFERENCE_PLUGIN).loaded);
  {
    Runtime second = quiet_runtime();
    REQUIRE(second.load_plugin(REFERENCE_PLUGIN).loaded);
  }
  // A launch the reference refuses: its message must reach this runtime,
  // through its own host table (the other one is gone).
  auto slot = detail::impl_of(first).registry().slot(kSilu);
  REQUIRE(slot != nullptr);
  {
    const auto reading = detail::impl_of(first).registry().read_guard();
    const detail::ImplRecord* impl =
        slot->state.load(std::memory_order_acquire)->winner("cpu");
    REQUIRE(impl != nullptr);
    CHECK(impl->c.launch(impl->c.user_data, nullptr, nullptr, 0, nullptr) ==
          JW_ERROR_INVALID_ARGUMENT);
    CHECK(contains(jw_last_error(), "reference-cpu: launch: artifact is null"));
  }
  WarmupRequest silu;
  silu.kernel_name = kSilu;
  WarmupOptions cpu;
  cpu.platform = "cpu";
  CHECK(first.warmup({silu}, cpu).failed == 0);
}

TEST_CASE(
    "given a dangling symbolic link and a directory named like plugins on "
    "the search path, then each is a rejected candidate saying what it is") {
  const fs::path dir = fs::temp_directory_path() /
                       ("jitwarm-odd-candidates-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "libjitwarm-a-directory.so");
  fs::create_symlink(dir / "no-such-file.so", dir / "libjitwarm-dangling.so");
  fs::copy_file(REFERENCE_PLUGIN, dir / "libjitwarm-reference-copy.so");
  Runtime runtime{RuntimeOptions{
      {}, std::nullopt, {}, [](jw_log_level, const std::string&) {}}};
  const PluginLoadReport report = runtime.load_plugins({{dir.string()}});
  fs::remove_all(dir);
  REQUIRE(report.records.size() == 3);
  const PluginLoadRecord& directory = report.records[0];
  CHECK(fs::path(directory.path).filename() == "libjitwarm-a-directory.so");
  CHECK(directory.rejection == PluginRejection::not_a_shared_object);
  CHECK(directory.detail == "a directory, not a shared object");
  const PluginLoadRecord& dangling = report.records[1];
  CHECK(fs::path(dangling.path).filename() == "libjitwarm-dangling.so");
  CHECK(dangling.rejection == PluginRejection::not_a_shared_object);
  CHECK(dangling.detail == "a symbolic link to " +
                               (dir / "no-such-file.so").string() +
                               ", which does not exist");
  CHECK(report.records[2].loaded);
  CHECK(contains(report.to_text(), "a directory, not a shared object"));
}

TEST_CASE(
    "given kernels by their short names, then kernel(), schema() and "
    "explain() take them as the command does") {
  Loaded l;
  CHECK(l.runtime.kernel("silu_and_mul").name() == kSilu);
  CHECK(l.runtime.schema("silu_and_mul").name() == kSilu);
  CHECK(l.runtime.explain("silu_and_mul").kernel_name == kSilu);
  try {
    l.runtime.kernel("silu_and_mull");
    FAIL("a typo must not resolve");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_NOT_FOUND);
    CHECK(std::string(e.what()) ==
          "unknown kernel 'silu_and_mull'; did you mean '" +
              std::string(kSilu) + "'?");
  }
}
