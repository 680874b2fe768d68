// Kernels from source (docs/kernel-descriptors.md), through the core and the
// CUDA and HIP plugins, compile-only: a kernel directory's descriptor and
// source become a kernel with the same keys, warmup and caches as the
// built-in ones; bad descriptors and sources are clear errors that leave
// the other kernels alone; a host registers one and its handle removes it.
#include <jitwarm/jitwarm.hpp>

#include <doctest/doctest.h>

#include "temp_dir.hpp"

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
  test::TempDir directory{"kernels"};
  const fs::path& path = directory.path;
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
