// End-to-end tests of the conformance runner: each runs the
// jitwarm-conformance driver as a user would (a separate process, plugins
// from JITWARM_PLUGIN_PATH or --plugin) and reads its exit code, its JSON
// and JUnit reports and its table.
//
// Meson runs each TEST_CASE as its own test (--test-case=...), so the
// compile-only ones run only when the CUDA or HIP plugin is built.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Run {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  nlohmann::json report;
  std::string junit;
};

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path make_temp_dir() {
  std::string pattern =
      (fs::temp_directory_path() / "jitwarm-conformance-XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

// Runs the driver with `args` plus --json-file and --junit into a fresh
// directory.
Run run_conformance(std::vector<std::string> args, bool reports = true) {
  const fs::path dir = make_temp_dir();
  if (reports) {
    args.insert(args.end(), {"--json-file", (dir / "report.json").string(),
                             "--junit", (dir / "report.xml").string()});
  }
  std::string command = quoted(CONFORMANCE_DRIVER);
  for (const std::string& arg : args) command += " " + quoted(arg);
  command += " > " + quoted((dir / "output.txt").string()) + " 2>&1";
  const int status = std::system(command.c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.output = read_file(dir / "output.txt");
  if (fs::exists(dir / "report.json")) {
    run.report = nlohmann::json::parse(read_file(dir / "report.json"));
  }
  if (fs::exists(dir / "report.xml")) run.junit = read_file(dir / "report.xml");
  fs::remove_all(dir);
  return run;
}

std::string short_name(const std::string& kernel) {
  return kernel.substr(kernel.rfind('.') + 1);
}

// Results of one kernel (short name) and check.
std::vector<nlohmann::json> results_of(const Run& run,
                                       const std::string& kernel,
                                       const std::string& check = "run") {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : run.report.at("results")) {
    if (short_name(r.at("kernel")) == kernel && r.at("check") == check) {
      out.push_back(r);
    }
  }
  return out;
}

bool is_empty_case(const nlohmann::json& result) {
  return result.at("case").get<std::string>().find("/empty/") !=
         std::string::npos;
}

const std::vector<std::string> kKernelSet = {"compute_slot_mapping",
                                             "expand",
                                             "batch_memcpy",
                                             "zero_kv_blocks",
                                             "scatter_states",
                                             "pack_seq",
                                             "unpack_seq",
                                             "prepare_pos_seq_lens",
                                             "rms_norm",
                                             "silu_and_mul"};

// Every result of a compile-only run: each case compiled, each launch
// skipped with the reason, for every target asked.
void check_compile_only(const Run& run, const std::string& platform,
                        const std::vector<std::string>& targets) {
  INFO(run.output);
  CHECK(run.exit_code == 0);
  std::map<std::string, std::size_t> compiled_per_target;
  std::set<std::string> kernels;
  for (const nlohmann::json& r : run.report.at("results")) {
    CHECK(r.at("platform") == platform);
    if (r.at("check") == "compile") {
      CHECK(r.at("status") == "pass");
      CHECK_FALSE(r.at("key").get<std::string>().empty());
      ++compiled_per_target[r.at("target")];
      kernels.insert(short_name(r.at("kernel")));
    } else {
      CHECK(r.at("check") == "launch");
      CHECK(r.at("status") == "skip");
      CHECK(r.at("message").get<std::string>().find("compile-only") !=
            std::string::npos);
    }
  }
  CHECK(kernels.size() == kKernelSet.size());
  for (const std::string& target : targets) {
    CAPTURE(target);
    CHECK(compiled_per_target[target] > 100);
  }
}

}  // namespace

TEST_CASE(
    "given the CPU reference, then it passes every case and check against "
    "itself") {
  const Run run = run_conformance({"--platform", "cpu", "--expectations-dir",
                                   EXPECTATIONS_DIR, "--jobs", "2"});
  INFO(run.output);
  CHECK(run.exit_code == 0);
  const nlohmann::json& totals = run.report.at("totals");
  CHECK(totals.at("unmet") == 0);
  CHECK(totals.at("pass") == totals.at("total"));
  CHECK(totals.at("total").get<int>() > 150);
  for (const std::string& kernel : kKernelSet) {
    CAPTURE(kernel);
    CHECK(results_of(run, kernel).size() >= 5);
    CHECK(results_of(run, kernel, "override").size() == 1);
  }
  CHECK(run.output.find("conformance: ") != std::string::npos);
}

TEST_CASE(
    "given the example vendor plugin, then its wrong rms_norm fails with the "
    "case and the worst error, and the others pass") {
  const Run run = run_conformance({"--plugin", EXAMPLE_PLUGIN});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  std::set<std::string> kernels;
  for (const nlohmann::json& r : run.report.at("results")) {
    CHECK(r.at("platform") == "example");
    kernels.insert(short_name(r.at("kernel")));
  }
  CHECK(kernels == std::set<std::string>{"expand", "rms_norm", "silu_and_mul"});

  const auto rms_norm = results_of(run, "rms_norm");
  REQUIRE(rms_norm.size() >= 10);
  std::string a_failing_case;
  for (const nlohmann::json& r : rms_norm) {
    CAPTURE(r.dump());
    if (is_empty_case(r)) {
      CHECK(r.at("status") == "pass");
      continue;
    }
    CHECK(r.at("status") == "fail");
    const nlohmann::json& worst = r.at("worst_error");
    CHECK(worst.at("buffer") == "out");
    CHECK(worst.at("position").get<std::string>().front() == '[');
    CHECK(worst.at("expected") != worst.at("actual"));
    CHECK(worst.at("tolerance_ratio").is_number());
    CHECK(worst.at("tolerance_ratio").get<double>() > 1);
    CHECK(r.at("message").get<std::string>().find(
              "differ from the reference") != std::string::npos);
    a_failing_case = r.at("case");
  }
  CHECK(results_of(run, "rms_norm", "override").at(0).at("status") == "fail");
  for (const std::string kernel : {"silu_and_mul", "expand"}) {
    CAPTURE(kernel);
    for (const nlohmann::json& r : results_of(run, kernel)) {
      CHECK(r.at("status") == "pass");
    }
    CHECK(results_of(run, kernel, "override").at(0).at("status") == "pass");
  }

  // JUnit: the failing case is a <failure> of the rms_norm suite.
  const std::string testcase = "name=\"" + a_failing_case + " [run]\"";
  const auto at = run.junit.find(testcase);
  REQUIRE(at != std::string::npos);
  const auto close = run.junit.find("</testcase>", at);
  CHECK(run.junit.substr(at, close - at).find("<failure type=\"fail\"") !=
        std::string::npos);
  CHECK(run.junit.substr(at, close - at).find("worst error: &apos;out&apos;") !=
        std::string::npos);
  CHECK(run.junit.find("<testsuite name=\"example.silu_and_mul\" tests=\"") !=
        std::string::npos);
  // The table names the case and its worst error.
  CHECK(run.output.find("FAIL    example/rms_norm/" + a_failing_case) !=
        std::string::npos);
  CHECK(run.output.find("worst error: 'out'[") != std::string::npos);
}

TEST_CASE(
    "given the example vendor's expectations, then its failures are expected "
    "and the run passes; an expected failure that passes is unexpected") {
  const Run run = run_conformance(
      {"--plugin", EXAMPLE_PLUGIN, "--expectations", EXAMPLE_EXPECTATIONS});
  INFO(run.output);
  CHECK(run.exit_code == 0);
  for (const nlohmann::json& r : results_of(run, "rms_norm")) {
    CAPTURE(r.dump());
    CHECK(r.at("status") == (is_empty_case(r) ? "pass" : "expected-fail"));
    if (!is_empty_case(r)) {
      CHECK(r.at("raw_status") == "fail");
      CHECK(r.at("expected") == "fail");
    }
  }
  CHECK(run.report.at("totals").at("expected-fail").get<int>() > 0);

  // Claim that silu_and_mul's float32 cases fail: they pass, so each is an
  // unexpected pass and the run fails.
  const fs::path dir = make_temp_dir();
  const fs::path wrong = dir / "wrong.toml";
  std::ofstream(wrong) << "[[expect]]\nkernel = \"silu_and_mul\"\n"
                          "case = \"fp32/*\"\nstatus = \"fail\"\n"
                          "reason = \"a claim the run disproves\"\n";
  const Run disproved =
      run_conformance({"--plugin", EXAMPLE_PLUGIN, "--expectations",
                       EXAMPLE_EXPECTATIONS, "--expectations", wrong.string()});
  fs::remove_all(dir);
  INFO(disproved.output);
  CHECK(disproved.exit_code == 1);
  std::size_t unexpected = 0;
  for (const nlohmann::json& r : results_of(disproved, "silu_and_mul")) {
    const bool claimed = r.at("case").get<std::string>().rfind("fp32/", 0) == 0;
    CHECK(r.at("status") == (claimed ? "unexpected-pass" : "pass"));
    unexpected += claimed ? 1 : 0;
  }
  CHECK(unexpected > 0);
  CHECK(disproved.report.at("totals").at("unexpected-pass") == unexpected);
  CHECK(disproved.junit.find("<failure type=\"unexpected-pass\"") !=
        std::string::npos);
}

TEST_CASE(
    "given a kernel that crashes and one that hangs, then they are reported as "
    "crash and timeout and the run goes on") {
  const Run run = run_conformance(
      {"--plugin", CRASHING_PLUGIN, "--case", "i32/B=37,max=16", "--case",
       "i64/B=37,max=16", "--case", "fp32/*", "--timeout", "2"});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  std::size_t passed = 0;
  for (const nlohmann::json& r : results_of(run, "expand")) {
    CAPTURE(r.dump());
    const std::string name = r.at("case");
    if (name.rfind("i32/", 0) == 0) {
      CHECK(r.at("status") == "crash");
      CHECK(r.at("message").get<std::string>().find("during the case") !=
            std::string::npos);
    } else if (name.rfind("i64/", 0) == 0) {
      CHECK(r.at("status") == "timeout");
      CHECK(r.at("message").get<std::string>().find("2 s timeout") !=
            std::string::npos);
    } else {
      CHECK(r.at("status") == "pass");
      ++passed;
    }
  }
  CHECK(passed >= 4);
  CHECK(run.report.at("totals").at("crash") == 1);
  CHECK(run.report.at("totals").at("timeout") == 1);
  CHECK(run.junit.find("<error type=\"crash\"") != std::string::npos);
  CHECK(run.junit.find("<error type=\"timeout\"") != std::string::npos);
}

TEST_CASE("given bad command lines and inputs, then the exit code says which") {
  CHECK(run_conformance({"--no-such-option"}, false).exit_code == 2);
  CHECK(run_conformance({"--jobs", "0"}, false).exit_code == 2);
  const Run help = run_conformance({"--help"}, false);
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("--compile-only") != std::string::npos);

  const fs::path dir = make_temp_dir();
  std::ofstream(dir / "broken.toml") << "[[expect]]\nkernel = \"x\"\n";
  const Run broken = run_conformance(
      {"--platform", "cpu", "--expectations", (dir / "broken.toml").string()},
      false);
  CHECK(broken.exit_code == 3);
  CHECK(broken.output.find("broken.toml:1: 'reason' is required") !=
        std::string::npos);
  CHECK(run_conformance({"--platform", "no-such-platform"}, false).exit_code ==
        3);
  CHECK(run_conformance({"--platform", "cpu", "--kernel", "no_such_kernel"},
                        false)
            .exit_code == 3);
  std::ofstream(dir / "libnot-a-plugin.so") << "not an ELF file\n";
  const Run rejected = run_conformance(
      {"--plugin", (dir / "libnot-a-plugin.so").string()}, false);
  CHECK(rejected.exit_code == 4);
  CHECK(rejected.output.find("was rejected") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("given --list, then the cases are printed and nothing runs") {
  const Run run =
      run_conformance({"--platform", "cpu", "--kernel", "rms_norm", "--list"});
  CHECK(run.exit_code == 0);
  CHECK(run.output.find("cpu/rms_norm/bf16/T=7,H=64 [run]") !=
        std::string::npos);
  CHECK(run.output.find("cpu/rms_norm/override-routing [override]") !=
        std::string::npos);
  CHECK(run.report.is_null());
}

TEST_CASE(
    "given --no-isolation, then the cases run in the runner's own process and "
    "pass") {
  const Run run = run_conformance(
      {"--platform", "cpu", "--kernel", "expand", "--no-isolation"});
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(run.report.at("options").at("isolated") == false);
  CHECK(run.report.at("totals").at("pass").get<int>() > 10);
}

TEST_CASE(
    "given the CUDA plugin, then every key compiles for sm_90 and every launch "
    "is skipped") {
  const Run run = run_conformance({"--platform", "cuda", "--compile-only",
                                   "--target", "cuda:sm_90", "--jobs", "2"});
  check_compile_only(run, "cuda", {"cuda:sm_90"});
}

TEST_CASE(
    "given the HIP plugin, then every key compiles for gfx90a and gfx942 and "
    "every launch is skipped") {
  const Run run =
      run_conformance({"--platform", "hip", "--compile-only", "--target",
                       "hip:gfx90a", "--target", "hip:gfx942", "--jobs", "2"});
  check_compile_only(run, "hip", {"hip:gfx90a", "hip:gfx942"});
}

#ifdef EXAMPLE_KERNEL_DIR
namespace {

// The runner with the example kernel's CPU plugin on the plugin path (after
// the bundled plugins) and `kernel_dir` as the kernel path.
Run run_with_kernel_dir(const std::string& kernel_dir,
                        std::vector<std::string> args) {
  const char* bundled = std::getenv("JITWARM_PLUGIN_PATH");
  const std::string plugin_path =
      std::string(bundled != nullptr ? bundled : "") + ":" +
      SCALE_CPU_PLUGIN_DIR;
  args.insert(args.begin(),
              {"--plugin-path", plugin_path, "--kernel-path", kernel_dir});
  return run_conformance(std::move(args));
}

// A kernel directory holding the example kernel's source and `descriptor`.
fs::path kernel_dir_with(const std::string& descriptor) {
  const fs::path dir = make_temp_dir();
  fs::copy_file(fs::path(EXAMPLE_KERNEL_DIR) / "scale.cu", dir / "scale.cu");
  std::ofstream(dir / "scale.toml") << descriptor;
  return dir;
}

// The example's descriptor up to its [[case]] tables.
std::string descriptor_without_cases() {
  const std::string text =
      read_file(fs::path(EXAMPLE_KERNEL_DIR) / "scale.toml");
  return text.substr(0, text.find("[[case]]"));
}

}  // namespace

TEST_CASE(
    "given the example kernel from source, then its descriptor's cases run "
    "on the CPU and compile for sm_90, gfx90a and gfx942") {
  const Run run = run_with_kernel_dir(
      EXAMPLE_KERNEL_DIR,
      {"--kernel", "example.kernels.scale", "--target", "cuda:sm_90",
       "--target", "hip:gfx90a", "--target", "hip:gfx942", "--jobs", "2"});
  INFO(run.output);
  CHECK(run.exit_code == 0);
  std::map<std::string, std::set<std::string>> cases_by_platform_target;
  for (const nlohmann::json& r : run.report.at("results")) {
    CHECK(r.at("kernel") == "example.kernels.scale");
    if (r.at("check") == "launch") continue;  // compile-only's skips
    CHECK(r.at("status") == "pass");
    const std::string where = r.at("platform").get<std::string>() + " " +
                              r.at("target").get<std::string>() + " " +
                              r.at("check").get<std::string>();
    cases_by_platform_target[where].insert(r.at("case").get<std::string>());
  }
  // The CPU implementation is the one under test there, so it has no
  // oracle: it launches, and the result says its outputs went uncompared.
  const std::vector<nlohmann::json> cpu = results_of(run, "scale");
  REQUIRE(cpu.size() == 3);
  for (const nlohmann::json& r : cpu) {
    CHECK(r.at("platform") == "cpu");
    CHECK(r.at("message").get<std::string>().find("outputs not compared") !=
          std::string::npos);
  }
  for (const char* gpu : {"cuda cuda:sm_90 compile", "hip hip:gfx90a compile",
                          "hip hip:gfx942 compile"}) {
    CAPTURE(gpu);
    CHECK(cases_by_platform_target[gpu].size() == 3);
  }
}

TEST_CASE(
    "given a kernel from source with a malformed case table, then the run "
    "stops as bad input naming the descriptor's line") {
  const fs::path dir = kernel_dir_with(
      descriptor_without_cases() +
      "[[case]]\nname = \"bad\"\n"
      "args = { out = { shape = [4] }, x = { shape = [4] }, n = 4, "
      "factor = 1.0, bogus = 1 }\n");
  const Run run =
      run_with_kernel_dir(dir.string(), {"--kernel", "example.kernels.scale"});
  fs::remove_all(dir);
  INFO(run.output);
  CHECK(run.exit_code == 3);
  CHECK(run.output.find("scale.toml:") != std::string::npos);
  CHECK(run.output.find("'bogus' is not a parameter") != std::string::npos);
}

TEST_CASE(
    "given a kernel from source whose cases repeat a name or have an unknown "
    "key, then the run stops as bad input naming the line") {
  const std::string base = descriptor_without_cases();
  const std::string good_case =
      "[[case]]\nname = \"one\"\n"
      "args = { out = { shape = [4] }, x = { shape = [4] }, n = 4, "
      "factor = 1.0 }\n";
  for (const auto& [descriptor, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {base + good_case + good_case, "a second case named 'one'"},
           {base + "[[case]]\nname = \"two\"\nrepeat = 3\n"
                   "args = { out = { shape = [4] }, x = { shape = [4] }, "
                   "n = 4, factor = 1.0 }\n",
            "unknown key 'repeat' in a [[case]]"},
           {base + "[[case]]\nname = \"three\"\n"
                   "args = { out = { shape = [4], fil = \"ones\" }, "
                   "x = { shape = [4] }, n = 4, factor = 1.0 }\n",
            "unknown key 'fil' in a tensor's table"}}) {
    CAPTURE(expected);
    const fs::path dir = kernel_dir_with(descriptor);
    const Run run = run_with_kernel_dir(dir.string(),
                                        {"--kernel", "example.kernels.scale"});
    fs::remove_all(dir);
    INFO(run.output);
    CHECK(run.exit_code == 3);
    CHECK(run.output.find("scale.toml:") != std::string::npos);
    CHECK(run.output.find(expected) != std::string::npos);
  }
}

TEST_CASE(
    "given a kernel from source without case tables, then it is skipped "
    "saying so") {
  const fs::path dir = kernel_dir_with(descriptor_without_cases());
  const Run run = run_with_kernel_dir(
      dir.string(), {"--kernel", "example.kernels.scale", "--platform", "cpu"});
  fs::remove_all(dir);
  INFO(run.output);
  CHECK(run.exit_code == 0);
  const std::vector<nlohmann::json> results = results_of(run, "scale");
  REQUIRE(results.size() == 1);
  CHECK(results.front().at("status") == "skip");
  CHECK(results.front().at("message").get<std::string>().find("[[case]]") !=
        std::string::npos);
}
#endif
