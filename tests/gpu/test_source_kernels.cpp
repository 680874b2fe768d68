// Kernels from source (docs/kernel-descriptors.md), through the core and the
// CUDA and HIP plugins, compile-only: a kernel directory's descriptor and
// source become a kernel with the same keys, warmup and caches as the
// built-in ones; bad descriptors and sources are clear errors that leave
// the other kernels alone; a host registers one and its handle removes it.
#include <jitwarm/jitwarm.hpp>

#include <doctest/doctest.h>

#include "temporary_directory.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace jitwarm;

namespace {

constexpr const char* kScale = "example.kernels.scale";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A kernel directory of its own, removed at the end.
struct KernelDirectory {
  detail::TemporaryDirectory directory{"jitwarm-kernels-"};
  const fs::path& path = directory.path();
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
  }
  // The example kernel (examples/kernels/scale), as shipped.
  void add_example() const {
    for (const char* name : {"scale.toml", "scale.cu"}) {
      write(name, read_file(fs::path(EXAMPLE_KERNEL_DIR) / name));
    }
  }
};

std::unique_ptr<Runtime> runtime_with(const KernelDirectory& kernels,
                                      PluginLoadReport* report = nullptr) {
  RuntimeOptions quiet;
  quiet.log = [](jw_log_level, const std::string&) {};
  auto runtime = std::make_unique<Runtime>(quiet);
  PluginLoadOptions load;
  load.search_path = {CUDA_PLUGIN, HIP_PLUGIN, REFERENCE_PLUGIN};
  // The build's plugins stand for the installed (bundled) ones.
  for (const char* plugin : {CUDA_PLUGIN, HIP_PLUGIN, REFERENCE_PLUGIN}) {
    load.bundled_directories.push_back(fs::path(plugin).parent_path());
  }
  load.kernel_path = {kernels.path.string()};
  PluginLoadReport r = runtime->load_plugins(load);
  if (report != nullptr) *report = std::move(r);
  return runtime;
}

WarmupRequest scale_request() {
  WarmupRequest r;
  r.kernel_name = kScale;
  r.axes = {{"n", WarmupAxis{{__int128{256}, __int128{7}}, {}}}};
  return r;
}

}  // namespace

TEST_CASE(
    "given the example kernel in a kernel directory, then the CUDA and HIP "
    "plugins implement it, its schema is defined, and it warms for sm_90 "
    "and gfx90a") {
  KernelDirectory kernels;
  kernels.add_example();
  PluginLoadReport report;
  auto runtime = runtime_with(kernels, &report);
  REQUIRE(report.kernel_files.size() == 1);
  const KernelFileRecord& file = report.kernel_files[0];
  CHECK_MESSAGE(file.loaded, file.detail);
  CHECK(file.kernel == kScale);
  CHECK(file.platforms == std::vector<std::string>{"cuda", "hip"});
  CHECK(report.to_text().find("scale.toml") != std::string::npos);

  const KernelSchema& schema = runtime->schema(kScale);
  CHECK(schema.params().size() == 4);
  CHECK(schema.origin() == (kernels.path / "scale.toml").string());
  const KernelExplanation e = runtime->explain(kScale);
  REQUIRE(e.platforms.size() == 2);
  CHECK(e.platforms[0].winner.precedence == "user plugin");

  // Loading again does not stack the directory's kernel a second time.
  PluginLoadOptions kernels_only;
  kernels_only.search_path = {};
  kernels_only.kernel_path = {kernels.path.string()};
  kernels_only.search_path.push_back(REFERENCE_PLUGIN);  // a duplicate now
  const PluginLoadReport again = runtime->load_plugins(kernels_only);
  REQUIRE(again.kernel_files.size() == 1);
  CHECK_FALSE(again.kernel_files[0].loaded);
  CHECK(again.kernel_files[0].detail.find("duplicate") != std::string::npos);
  CHECK(runtime->explain(kScale).platforms[0].replaced.empty());

  for (const char* target : {"cuda:sm_90", "hip:gfx90a"}) {
    CAPTURE(target);
    WarmupOptions options;
    options.target = target;
    const WarmupResult w = runtime->warmup({scale_request()}, options);
    REQUIRE(w.keys.size() == 2);  // n: divisible by 16, and no class
    for (const WarmupKeyResult& k : w.keys) {
      CHECK_MESSAGE(!k.failed, k.error);
    }
    CHECK(w.compiled == 2);
  }
}

TEST_CASE(
    "given bad descriptors beside a good one, then each bad one is rejected "
    "naming its file and line, and the good one still loads") {
  KernelDirectory kernels;
  kernels.add_example();
  // TOML that does not parse.
  kernels.write("broken.toml", "[kernel\nname = 1\n");
  // An expression naming a parameter that does not exist (line 11).
  std::string unknown = read_file(kernels.path / "scale.toml");
  unknown.replace(unknown.find("example.kernels.scale"), 21,
                  "example.kernels.bad_grid");
  unknown.replace(unknown.find("ceil_div(n, 256)"), 16, "ceil_div(m, 256)");
  kernels.write("bad_grid.toml", unknown);
  // A source that does not exist.
  kernels.write("no_source.toml",
                "[kernel]\nname = \"example.kernels.nothing\"\n"
                "source = \"missing.cu\"\nfunction = \"f\"\n"
                "[[param]]\nname = \"x\"\nkind = \"tensor\"\n"
                "[launch]\nblock = [\"1\"]\ngrid = [\"1\"]\n");
  PluginLoadReport report;
  auto runtime = runtime_with(kernels, &report);
  REQUIRE(report.kernel_files.size() == 4);
  std::map<std::string, const KernelFileRecord*> by_name;
  for (const auto& k : report.kernel_files) {
    by_name[fs::path(k.path).filename().string()] = &k;
  }
  CHECK(by_name.at("scale.toml")->loaded);
  CHECK_FALSE(by_name.at("broken.toml")->loaded);
  CHECK(by_name.at("broken.toml")->detail.find("broken.toml:") !=
        std::string::npos);
  const KernelFileRecord& bad_grid = *by_name.at("bad_grid.toml");
  CHECK_FALSE(bad_grid.loaded);
  CHECK(bad_grid.detail.find("bad_grid.toml:") != std::string::npos);
  CHECK(bad_grid.detail.find("unknown name 'm'") != std::string::npos);
  CHECK(by_name.at("no_source.toml")->detail.find("missing.cu") !=
        std::string::npos);
  // The good one is there, the bad ones are not.
  CHECK_NOTHROW(runtime->kernel(kScale));
  CHECK_THROWS_AS(runtime->kernel("example.kernels.bad_grid"), Error);
  // The built-in kernels are untouched.
  CHECK(runtime->explain("vllm.model_executor.layers.layernorm.rms_norm")
            .platforms.size() == 3);
  // Rejected descriptors count as rejected candidates, so strict loading
  // refuses them as it does a rejected plugin.
  CHECK(report.rejected_count() == 3);
  RuntimeOptions quiet;
  quiet.log = [](jw_log_level, const std::string&) {};
  Runtime strict(quiet);
  PluginLoadOptions load;
  load.search_path = {CUDA_PLUGIN, REFERENCE_PLUGIN};
  load.kernel_path = {kernels.path.string()};
  load.strict = true;
  CHECK_THROWS_WITH(strict.load_plugins(load),
                    doctest::Contains("3 candidate(s) rejected"));
}

TEST_CASE(
    "given a source that does not compile, then warming it fails with the "
    "compiler's log and the key") {
  KernelDirectory kernels;
  kernels.add_example();
  std::string source = read_file(kernels.path / "scale.cu");
  source.replace(source.find("out[i] = static_cast"), 8,
                 "out[i] = undeclared_name +");
  kernels.write("scale.cu", source);
  auto runtime = runtime_with(kernels);
  WarmupOptions options;
  options.target = "cuda:sm_90";
  const WarmupResult w = runtime->warmup({scale_request()}, options);
  REQUIRE(w.keys.size() == 2);
  CHECK(w.failed == 2);
  CHECK(w.keys[0].error.find("undeclared_name") != std::string::npos);
  CHECK(w.keys[0].error.find("scale[cuda:sm_90]") != std::string::npos);
}

TEST_CASE(
    "given a host that registers a kernel from source, then it is "
    "implemented at once, and releasing the handle removes it") {
  KernelDirectory empty;
  auto runtime = runtime_with(empty);
  CHECK_THROWS_AS(runtime->kernel(kScale), Error);
  SourceKernel kernel = read_source_kernel(
      (fs::path(EXAMPLE_KERNEL_DIR) / "scale.toml").string());
  kernel.origin = "host: test";
  {
    RegistrationHandle handle = runtime->register_source_kernel(kernel);
    const KernelExplanation e = runtime->explain(kScale);
    REQUIRE(e.platforms.size() == 2);
    CHECK(e.platforms[0].winner.origin == "host: test");
    CHECK(e.platforms[0].winner.precedence == "host override");
    WarmupOptions options;
    options.target = "cuda:sm_90";
    CHECK(runtime->warmup({scale_request()}, options).compiled == 2);
    // The same kernel again: the same schema, a second implementation.
    RegistrationHandle again = runtime->register_source_kernel(kernel);
    CHECK(runtime->explain(kScale).platforms[0].replaced.size() == 1);
  }
  // The schema stays; its implementations are gone.
  CHECK(runtime->explain(kScale).platforms.empty());
  // Another kernel of the same name with other parameters is refused,
  // naming both origins.
  SourceKernel other = kernel;
  other.origin = "host: other";
  other.descriptor.replace(other.descriptor.find("name = \"factor\""), 15,
                           "name = \"alpha\" ");
  CHECK_THROWS_WITH(runtime->register_source_kernel(other),
                    doctest::Contains("with other parameters"));
}

TEST_CASE(
    "given a changed version of a kernel from source registered after the "
    "first was warmed, then its keys are its own and it compiles its own "
    "binaries") {
  KernelDirectory empty;
  auto runtime = runtime_with(empty);
  SourceKernel first = read_source_kernel(
      (fs::path(EXAMPLE_KERNEL_DIR) / "scale.toml").string());
  first.origin = "host: first";
  SourceKernel second = first;
  second.origin = "host: second";
  for (auto& [name, text] : second.files) {
    if (name == "scale.cu") text.replace(text.find("* factor"), 8, "+ factor");
  }
  WarmupOptions options;
  options.target = "cuda:sm_90";
  RegistrationHandle one = runtime->register_source_kernel(first);
  const std::string first_impl =
      runtime->explain(kScale).platforms[0].winner.impl_name;
  CHECK(first_impl.starts_with("cuda-nvrtc+"));
  CHECK(runtime->warmup({scale_request()}, options).compiled == 2);
  RegistrationHandle two = runtime->register_source_kernel(second);
  const std::string second_impl =
      runtime->explain(kScale).platforms[0].winner.impl_name;
  CHECK(second_impl.starts_with("cuda-nvrtc+"));
  CHECK(second_impl != first_impl);
  // Keys of the same arguments, but not the same keys: nothing of the first
  // version's is reused.
  const WarmupResult again = runtime->warmup({scale_request()}, options);
  CHECK(again.compiled == 2);
  for (const WarmupKeyResult& k : again.keys) {
    CHECK(k.key_text.find(second_impl) != std::string::npos);
  }
  // The same version again is the same implementation: its keys hit.
  RegistrationHandle three = runtime->register_source_kernel(first);
  CHECK(runtime->explain(kScale).platforms[0].winner.impl_name == first_impl);
  CHECK(runtime->warmup({scale_request()}, options).compiled == 0);
}

TEST_CASE(
    "given a batch of one kernel's keys with one instantiation that does not "
    "compile, then the others land and the failing key reports its own "
    "error") {
  KernelDirectory kernels;
  kernels.write("picky.toml", R"(
[kernel]
name = "test.kernels.picky"
source = "picky.cu"
function = "test::picky"

[[param]]
name = "x"
kind = "tensor"
dtypes = ["float32"]
rank = 1

[[param]]
name = "n"
kind = "int"
flags = ["do_not_specialize"]

[[param]]
name = "WIDTH"
kind = "constexpr"

[compile]
template = ["WIDTH"]

[launch]
block = ["64"]
grid = ["1"]
)");
  kernels.write("picky.cu", R"(#include "portability.cuh"
namespace test {
template <int kWidth>
__global__ void picky(float* x, jw::i32 n) {
  static_assert(kWidth != 3, "a width of 3 is not supported");
  if (jw::thread_index() < n) x[jw::thread_index()] *= kWidth;
}
}  // namespace test
)");
  PluginLoadReport report;
  auto runtime = runtime_with(kernels, &report);
  REQUIRE(report.kernel_files.size() == 1);
  REQUIRE_MESSAGE(report.kernel_files[0].loaded, report.kernel_files[0].detail);
  WarmupRequest request;
  request.kernel_name = "test.kernels.picky";
  request.axes = {
      {"WIDTH",
       WarmupAxis{{__int128{1}, __int128{2}, __int128{3}, __int128{4}}, {}}}};
  for (const char* target : {"cuda:sm_90", "hip:gfx90a"}) {
    CAPTURE(target);
    WarmupOptions options;
    options.target = target;
    // The default batch size is the plugin's preference (else 8): the keys
    // compile together.
    REQUIRE_FALSE(options.batch_size.has_value());
    const WarmupResult w = runtime->warmup({request}, options);
    REQUIRE(w.keys.size() == 4);
    CHECK(w.compiled == 3);
    CHECK(w.failed == 1);
    for (const WarmupKeyResult& k : w.keys) {
      CAPTURE(k.key_text);
      const bool width_3 = k.key_text.find("WIDTH=3") != std::string::npos;
      CHECK(k.failed == width_3);
      if (width_3) {
        CHECK(k.error.find("a width of 3 is not supported") !=
              std::string::npos);
        CHECK(k.status == JW_ERROR_COMPILE_FAILED);
      }
    }
  }
}

TEST_CASE(
    "given keys warmed in batches, then each key's artifact names its own "
    "instantiation, as the key compiled alone does") {
  KernelDirectory empty;
  auto batched = runtime_with(empty);
  auto alone = runtime_with(empty);
  WarmupRequest request;
  request.kernel_name = "vllm.model_executor.layers.activation.silu_and_mul";
  WarmupOptions options;
  options.target = "cuda:sm_90";
  const std::vector<CompileKey> keys = batched->warmup_plan({request}, options);
  REQUIRE(keys.size() > 4);
  const WarmupResult together = batched->warmup_keys(keys, options);
  CHECK(together.compiled == keys.size());
  WarmupOptions one_by_one = options;
  one_by_one.batch_size = 1;
  CHECK(alone->warmup_keys(keys, one_by_one).compiled == keys.size());
  std::set<std::string> entry_points;
  for (const CompileKey& key : keys) {
    CAPTURE(key.text());
    const auto from_batch = batched->cached_artifact(key);
    const auto from_alone = alone->cached_artifact(key);
    REQUIRE(from_batch);
    REQUIRE(from_alone);
    CHECK(from_batch->entry_point == from_alone->entry_point);
    CHECK(from_batch->format == "cubin");
    // The batch's binary holds its key's kernel (and its batch-mates', unless
    // the plugin links each kernel apart: test_cuda_backend.cpp).
    CHECK(from_batch->binary.find(from_batch->entry_point) !=
          std::string::npos);
    entry_points.insert(std::string(from_batch->entry_point));
  }
  CHECK(entry_points.size() > 1);
}

TEST_CASE(
    "given a descriptor for a built-in kernel, then it implements that "
    "kernel's schema and, from a user directory, wins over the bundled "
    "implementation") {
  KernelDirectory kernels;
  // rms_norm's own descriptor and source, as a user's copy.
  const fs::path builtin(BUILTIN_KERNEL_DIR);
  kernels.write("rms_norm.toml", read_file(builtin / "rms_norm.toml"));
  kernels.write("rms_norm.cuh", read_file(builtin / "rms_norm.cuh"));
  PluginLoadReport report;
  auto runtime = runtime_with(kernels, &report);
  REQUIRE(report.kernel_files.size() == 1);
  CHECK_MESSAGE(report.kernel_files[0].loaded, report.kernel_files[0].detail);
  const KernelExplanation e =
      runtime->explain("vllm.model_executor.layers.layernorm.rms_norm");
  for (const PlatformExplanation& p : e.platforms) {
    if (p.platform == "cpu") continue;
    CAPTURE(p.platform);
    CHECK(p.winner.origin == (kernels.path / "rms_norm.toml").string());
    REQUIRE(p.replaced.size() == 1);
    CHECK(p.replaced[0].precedence == "bundled plugin");
  }
}

TEST_CASE("given the C API, then a host registers a kernel from source") {
  jw_runtime* rt = nullptr;
  REQUIRE(jw_runtime_create(&rt) == JW_OK);
  REQUIRE(jw_runtime_load_plugin(rt, CUDA_PLUGIN) == JW_OK);
  const SourceKernel kernel = read_source_kernel(
      (fs::path(EXAMPLE_KERNEL_DIR) / "scale.toml").string());
  std::vector<jw_source_file> files;
  for (const auto& [name, text] : kernel.files) {
    files.push_back(jw_source_file{name.c_str(), text.data(), text.size()});
  }
  jw_source_kernel c{};
  c.struct_size = sizeof(c);
  c.origin = "host: C";
  c.descriptor = kernel.descriptor.data();
  c.descriptor_size = kernel.descriptor.size();
  c.files = files.data();
  c.num_files = static_cast<uint32_t>(files.size());
  jw_registration* registration = nullptr;
  REQUIRE(jw_register_source_kernel(rt, &c, &registration) == JW_OK);
  jw_kernel_handle* handle = nullptr;
  CHECK(jw_kernel_find(rt, kScale, &handle) == JW_OK);
  jw_kernel_release(handle);
  jw_registration_release(registration);
  c.descriptor = "[kernel]\n";
  c.descriptor_size = 9;
  CHECK(jw_register_source_kernel(rt, &c, &registration) ==
        JW_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(jw_last_error()).find("host: C") != std::string::npos);
  jw_runtime_destroy(rt);
}

namespace {

// The example kernel with a [tune] table: its block size and an unrolling
// define are choices; unrolling needs an n divisible by 16.
constexpr const char* kTunableScale = "example.kernels.tunable_scale";
constexpr const char* kScaleTune =
    "[tune]\n"
    "choices = [\n"
    "  { name = \"threads\", values = [256, 128, 512, 1024], default = 256 },\n"
    "  { name = \"unroll\", values = [1, 2], default = 1 },\n"
    "]\n"
    "check = [\"threads * unroll <= 1024\", \"unroll == 1 || div16(n)\"]\n";

// scale.toml renamed to `name`, with `tune` before its [compile] table and
// its launch reading the choices.
std::string tunable_scale(const std::string& name, const std::string& tune) {
  std::string text = read_file(fs::path(EXAMPLE_KERNEL_DIR) / "scale.toml");
  text.replace(text.find(kScale), std::string(kScale).size(), name);
  text.replace(
      text.find("[compile]\n"), 10,
      tune + "[compile]\ndefines = [[\"SCALE_UNROLL\", \"unroll\"]]\n");
  text.replace(text.find("block = [\"256\"]"), 15, "block = [\"threads\"]");
  text.replace(text.find("ceil_div(n, 256)"), 16, "ceil_div(n, threads)");
  return text;
}

// The runtime's keys of `kernel` for n = 256 (divisible by 16) and n = 7.
std::vector<CompileKey> scale_keys(Runtime& runtime, const char* kernel) {
  WarmupRequest request = scale_request();
  request.kernel_name = kernel;
  WarmupOptions options;
  options.target = "cuda:sm_90";
  std::vector<CompileKey> keys = runtime.warmup_plan({request}, options);
  REQUIRE(keys.size() == 2);
  REQUIRE(keys[0].text().find("n:i32:D") != std::string::npos);
  return keys;
}

std::vector<std::string> config_texts(const std::vector<TuneConfig>& configs) {
  std::vector<std::string> texts;
  for (const TuneConfig& c : configs) texts.push_back(tune_config_text(c));
  return texts;
}

}  // namespace

TEST_CASE(
    "given a descriptor with a [tune] table, then its implementation offers "
    "every config that passes the checks for a key, the default first") {
  KernelDirectory kernels;
  kernels.add_example();
  kernels.write("tunable_scale.toml", tunable_scale(kTunableScale, kScaleTune));
  auto runtime = runtime_with(kernels);
  const std::vector<CompileKey> keys = scale_keys(*runtime, kTunableScale);
  // n divisible by 16: every pair but threads 1024 with unroll 2.
  CHECK(config_texts(runtime->tune_candidates(keys[0])) ==
        std::vector<std::string>{
            "{threads=256, unroll=1}", "{threads=256, unroll=2}",
            "{threads=128, unroll=1}", "{threads=128, unroll=2}",
            "{threads=512, unroll=1}", "{threads=512, unroll=2}",
            "{threads=1024, unroll=1}"});
  // n = 7: no unrolling.
  CHECK(config_texts(runtime->tune_candidates(keys[1])) ==
        std::vector<std::string>{
            "{threads=256, unroll=1}", "{threads=128, unroll=1}",
            "{threads=512, unroll=1}", "{threads=1024, unroll=1}"});
  // A key's own config does not change what is offered for it.
  CHECK(runtime->tune_candidates(keys[1].with_config({{"threads", 128}})) ==
        runtime->tune_candidates(keys[1]));
  // The HIP plugin reads the same table.
  WarmupRequest request = scale_request();
  request.kernel_name = kTunableScale;
  WarmupOptions hip;
  hip.target = "hip:gfx942";
  const std::vector<CompileKey> hip_keys = runtime->warmup_plan({request}, hip);
  REQUIRE(hip_keys.size() == 2);
  CHECK(runtime->tune_candidates(hip_keys[1]).size() == 4);
  // A kernel without [tune] is not tunable.
  CHECK(runtime->tune_candidates(scale_keys(*runtime, kScale)[0]).empty());
  const CompileKey unknown("example.kernels.none", keys[0].impl_name(),
                           keys[0].target(), keys[0].params());
  CHECK_THROWS_WITH(runtime->tune_candidates(unknown),
                    doctest::Contains("unknown kernel"));
}

TEST_CASE(
    "given tuned keys, then each offered config compiles as its own key, and "
    "a config not offered is that key's error, never the plugin's") {
  KernelDirectory kernels;
  kernels.add_example();
  kernels.write("tunable_scale.toml", tunable_scale(kTunableScale, kScaleTune));
  auto runtime = runtime_with(kernels);
  const std::vector<CompileKey> keys = scale_keys(*runtime, kTunableScale);
  const CompileKey tuned =
      keys[0].with_config({{"threads", 512}, {"unroll", 2}});
  CHECK(tuned.text().find(") {threads=512, unroll=2} via cuda-nvrtc") !=
        std::string::npos);
  WarmupOptions options;
  options.target = "cuda:sm_90";
  options.batch_size = 8;
  const std::vector<CompileKey> wanted = {
      keys[0],
      tuned,
      // Not offered: unrolling needs n divisible by 16.
      keys[1].with_config({{"threads", 256}, {"unroll", 2}}),
      // Not offered: 64 is not among the values.
      keys[0].with_config({{"threads", 64}, {"unroll", 1}}),
      // Not offered: a config names every choice.
      keys[0].with_config({{"threads", 128}}),
  };
  const WarmupResult w = runtime->warmup_keys(wanted, options);
  REQUIRE(w.keys.size() == 5);
  CHECK(w.compiled == 2);
  CHECK(w.failed == 3);
  for (std::size_t i = 2; i < 5; ++i) {
    CAPTURE(w.keys[i].error);
    CHECK(w.keys[i].error.find("is not one") != std::string::npos);
    CHECK(w.keys[i].error.find("it offers {threads=256, unroll=1}") !=
          std::string::npos);
  }
  // Tuned and untuned keys are separate entries with their own binaries.
  CHECK(runtime->is_cached(keys[0]));
  CHECK(runtime->is_cached(tuned));
  CHECK_FALSE(runtime->is_cached(
      keys[0].with_config({{"threads", 256}, {"unroll", 1}})));
  // One at a time, the same refusal.
  options.batch_size = 1;
  const WarmupResult one = runtime->warmup_keys(
      {keys[1].with_config({{"threads", 256}, {"unroll", 2}})}, options);
  CHECK(one.failed == 1);
  // A kernel without [tune] gets no config at all.
  const CompileKey plain = scale_keys(*runtime, kScale)[0];
  const WarmupResult untunable =
      runtime->warmup_keys({plain.with_config({{"threads", 256}})}, options);
  REQUIRE(untunable.keys.size() == 1);
  CHECK(untunable.keys[0].error.find("is not tunable") != std::string::npos);
}

TEST_CASE(
    "given a default config that fails a tune check for a key, then the "
    "untuned key's compile fails naming the check") {
  KernelDirectory kernels;
  std::string tune = kScaleTune;
  tune.replace(tune.find("default = 1 }"), 13, "default = 2 }");
  kernels.write("tunable_scale.toml", tunable_scale(kTunableScale, tune));
  kernels.write("scale.cu",
                read_file(fs::path(EXAMPLE_KERNEL_DIR) / "scale.cu"));
  auto runtime = runtime_with(kernels);
  const std::vector<CompileKey> keys = scale_keys(*runtime, kTunableScale);
  WarmupOptions options;
  options.target = "cuda:sm_90";
  const WarmupResult w = runtime->warmup_keys(keys, options);
  REQUIRE(w.keys.size() == 2);
  CHECK(w.keys[0].error.empty());
  CHECK(w.keys[1].error.find("tune check 'unroll == 1 || div16(n)' failed") !=
        std::string::npos);
  // Its candidates still start with the default, then what passes.
  CHECK(config_texts(runtime->tune_candidates(keys[1]))[0] ==
        "{threads=256, unroll=2}");
}

TEST_CASE(
    "given bad [tune] tables, then each descriptor is rejected naming its "
    "file, line and fault") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[tune]\nchoices = []\n", "needs 'choices'"},
      {"[tune]\ncheck = [\"true\"]\n", "needs 'choices'"},
      {"[tune]\nchoices = [1]\n", "each choice is a table"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1.5], default = 1 }]\n",
       "values are integers"},
      {"[tune]\nchoices = [{ name = \"t\", values = [], default = 1 }]\n",
       "non-empty array of integers"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1, 2, 1], default = 1 "
       "}]\n",
       "1 is listed twice"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1, 2] }]\n",
       "needs a default"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1, 2], default = 3 }]\n",
       "the default 3 is not among its values"},
      {"[tune]\nchoices = [{ name = \"n\", values = [1], default = 1 }]\n",
       "'n' is a parameter's name"},
      {"[tune]\nchoices = [{ name = \"2t\", values = [1], default = 1 }]\n",
       "'2t' is not a name"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1], default = 1 },\n"
       "  { name = \"t\", values = [2], default = 2 }]\n",
       "'t' is a [tune] choice"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1], default = 1, x = 2 "
       "}]\n",
       "unknown key 'x' in [tune]"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1], default = 1 }]\n"
       "check = [\"t + 1\"]\n",
       "t + 1"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1], default = 1 }]\n"
       "check = [\"u > 1\"]\n",
       "unknown name 'u'"},
      {"[tune]\nchoices = [{ name = \"t\", values = [1], default = 1 }]\n"
       "tries = 3\n",
       "unknown key 'tries' in [tune]"},
  };
  // More than 1024 configs: 33 x 32 values.
  std::string values_a, values_b;
  for (int i = 1; i <= 33; ++i)
    values_a += (i > 1 ? ", " : "") + std::to_string(i);
  for (int i = 1; i <= 32; ++i)
    values_b += (i > 1 ? ", " : "") + std::to_string(i);
  std::vector<std::pair<std::string, std::string>> cases = bad;
  cases.push_back({"[tune]\nchoices = [{ name = \"a\", values = [" + values_a +
                       "], default = 1 },\n  { name = \"b\", values = [" +
                       values_b + "], default = 1 }]\n",
                   "at most 1024 configs"});
  KernelDirectory kernels;
  kernels.add_example();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    kernels.write("bad_" + std::to_string(i) + ".toml",
                  tunable_scale("example.kernels.bad_" + std::to_string(i),
                                cases[i].first));
  }
  // A let may not take a choice's name either.
  std::string let_twice = tunable_scale(
      "example.kernels.let_twice",
      "[tune]\nchoices = [{ name = \"t\", values = [1], default = 1 }]\n");
  let_twice.replace(let_twice.find("[compile]\n"), 10,
                    "[compile]\nlet = [[\"t\", \"2\"]]\n");
  kernels.write("let_twice.toml", let_twice);
  cases.push_back({"", "'t' is a [tune] choice"});
  PluginLoadReport report;
  auto runtime = runtime_with(kernels, &report);
  std::map<std::string, const KernelFileRecord*> by_name;
  for (const auto& k : report.kernel_files) {
    by_name[fs::path(k.path).filename().string()] = &k;
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string file = i + 1 == cases.size()
                                 ? std::string("let_twice.toml")
                                 : "bad_" + std::to_string(i) + ".toml";
    CAPTURE(file);
    REQUIRE(by_name.count(file) == 1);
    const KernelFileRecord& record = *by_name.at(file);
    CAPTURE(record.detail);
    CHECK_FALSE(record.loaded);
    CHECK(record.detail.find(file + ":") != std::string::npos);
    CHECK(record.detail.find(cases[i].second) != std::string::npos);
  }
  CHECK_NOTHROW(runtime->kernel(kScale));
}
