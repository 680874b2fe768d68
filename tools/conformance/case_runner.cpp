// case_runner.cpp — the checks a worker runs for one work item (see
// case_runner.hpp).
#include "case_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "case_arguments.hpp"
#include "cases.hpp"
#include "compare.hpp"
#include "plan.hpp"
#include "reference_cpu.hpp"
#include "source_kernel_cases.hpp"

namespace jitwarm::conformance {
namespace {

using device_args::Buffer;
using device_args::Case;
using device_args::Comparison;
using device_args::DeviceError;
using device_args::host_memory;
using device_args::MemorySpace;
using device_args::metadata_args;
using device_args::MetadataArgs;
using device_args::PlacedCase;
using device_args::platform_memory;

// A step that failed, with what it was doing in words.
class StepFailure : public std::runtime_error {
 public:
  StepFailure(const std::string& message, bool device_broken)
      : std::runtime_error(message), device_broken_(device_broken) {}
  bool device_broken() const { return device_broken_; }

 private:
  bool device_broken_;
};

// Runs `body`; an exception becomes a StepFailure that says which step
// failed. Device errors (memory services, a refused launch) mark the
// worker for replacement: the context may be unusable afterwards.
template <typename Body>
auto step(std::string_view what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const StepFailure&) {
    throw;
  } catch (const DeviceError& e) {
    throw StepFailure(fmt::format("{}: {}", what, e.what()), true);
  } catch (const Error& e) {
    const bool broken = e.status() == JW_ERROR_LAUNCH_FAILED ||
                        e.status() == JW_ERROR_NO_DEVICE;
    throw StepFailure(fmt::format("{}: {}", what, e.what()), broken);
  } catch (const std::exception& e) {
    throw StepFailure(fmt::format("{}: {}", what, e.what()), false);
  }
}

// warmup_inputs_for must give storage-free arguments that derive the very
// same key (it throws naming both keys otherwise); derive again to be sure
// the comparison is not only the core's own. A tuned key's config is no
// argument's: arguments derive the untuned key, which the config completes.
void check_warmup_inputs(const KernelSchema& schema, const CompileKey& key) {
  step("warmup inputs do not reproduce the key", [&] {
    const WarmupInputs inputs = warmup_inputs_for(schema, key);
    const CompileKey again =
        derive_key(schema, inputs.args, key.target(), key.impl_name())
            .with_config(key.config());
    if (!(again == key)) {
      throw std::runtime_error(
          fmt::format("expected {}, derived {}", key.text(), again.text()));
    }
  });
}

// The worst element is reported next to the message (CaseResult's
// comparisons, the report's "worst error"), so this says how many.
std::string describe_mismatch(const BufferComparison& comparison) {
  return fmt::format(
      "'{}' ({}): {} of {} elements differ from the reference ({})",
      comparison.buffer, dtype_name(comparison.dtype), comparison.mismatches,
      comparison.elements, comparison.rule);
}

// Compares every buffer the case marks for comparison; returns messages
// for the ones that differ.
std::vector<std::string> compare_outputs(const Case& the_case,
                                         const PlacedCase& expected,
                                         const PlacedCase& actual,
                                         CaseResult& result) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < the_case.buffers.size(); ++i) {
    const Buffer& buffer = the_case.buffers[i];
    if (buffer.comparison == Comparison::none) continue;
    const std::vector<unsigned char> want = expected.read(i);
    const std::vector<unsigned char> got =
        step("reading back the output", [&] { return actual.read(i); });
    BufferComparison comparison = compare_buffer(buffer, want, got);
    if (!comparison.passed()) problems.push_back(describe_mismatch(comparison));
    result.comparisons.push_back(std::move(comparison));
  }
  return problems;
}

std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) {
    text += (text.empty() ? "" : "; ") + part;
  }
  return text;
}

// Fills `placed` (host memory) with the expected outputs. The portable set's
// oracle is the linked-in CPU reference; a kernel from source has none
// built in, so its oracle is its "cpu" implementation from the registry
// (a plugin of the user's). Returns why there is no oracle, if there is
// none: outputs then go uncompared, and the result says so.
std::optional<std::string> run_reference(Runtime& runtime, const WorkItem& item,
                                         const PlacedCase& placed) {
  if (!is_source_kernel(item.kernel)) {
    step("the CPU reference refused the case (a bug in the case generator)",
         [&] { reference_cpu::run_kernel(item.kernel, placed.args()); });
    return std::nullopt;
  }
  if (item.platform == "cpu") {
    return "the kernel's CPU implementation is the one under test, and a "
           "kernel from source has no other oracle";
  }
  const std::vector<PlatformExplanation> platforms =
      runtime.explain(item.kernel).platforms;
  if (std::none_of(
          platforms.begin(), platforms.end(),
          [](const PlatformExplanation& p) { return p.platform == "cpu"; })) {
    return "no CPU implementation of this kernel is registered to compare "
           "with (docs/kernel-descriptors.md, 'Conformance cases')";
  }
  step("the kernel's CPU implementation (the oracle) refused the case", [&] {
    runtime.kernel(item.kernel)
        .launch(placed.args(), LaunchOptions{"cpu", 0, nullptr});
  });
  return std::nullopt;
}

// The case's inputs placed where the platform's kernel reads them; a
// placement that fails leaves the device in doubt.
PlacedCase place_inputs(const Case& the_case, MemorySpace& device) {
  try {
    return PlacedCase(the_case, device);
  } catch (const std::exception& e) {
    throw StepFailure(fmt::format("placing the inputs: {}", e.what()), true);
  }
}

// What a case that launches its kernel needs: the expected outputs from the
// oracle (or why there is none), the inputs in the platform's memory, the
// kernel's handle and the launch options.
struct CaseOnDevice {
  CaseOnDevice(Runtime& runtime, const WorkItem& item, const Case& the_case,
               int32_t device_index)
      : host(host_memory()),
        expected(the_case, *host),
        no_oracle(run_reference(runtime, item, expected)),
        device(step("placing the inputs",
                    [&] {
                      return platform_memory(runtime.platform(item.platform),
                                             device_index);
                    })),
        actual(place_inputs(the_case, *device)),
        handle(runtime.kernel(item.kernel)),
        launch{item.platform, device_index, nullptr} {}

  const std::unique_ptr<MemorySpace> host;
  const PlacedCase expected;
  const std::optional<std::string> no_oracle;
  const std::unique_ptr<MemorySpace> device;
  const PlacedCase actual;
  const KernelHandle handle;
  const LaunchOptions launch;
};

}  // namespace

CaseRunner::CaseRunner(const Options& options) : options_(options) {
  // Conformance compiles for real: a persistent cache would turn compiles
  // into disk hits (and fill the user's cache), unless one is asked for
  // (--cache-dir: a tuned cache's winners are what is tested).
  RuntimeOptions runtime_options;
  runtime_options.cache_dir = options_.cache_dir;
  runtime_options.no_cache_dir = options_.cache_dir.empty();
  options_.trust.apply(runtime_options);
  runtime_options.no_remote_cache = true;
  runtime_options.log = [this](jw_log_level level, const std::string& message) {
    if (level >= JW_LOG_WARNING) log_.push_back(message);
  };
  runtime_ = std::make_unique<Runtime>(std::move(runtime_options));
  load_plugins_for_run(*runtime_, options_);
  // The plan read these cases already (a malformed table stopped it there).
  register_source_kernel_cases(*runtime_);
}

CaseRunner::~CaseRunner() = default;

const CaseRecipe& CaseRunner::recipe(const std::string& kernel,
                                     const std::string& case_name) {
  auto it = recipes_.find(kernel);
  if (it == recipes_.end()) {
    it = recipes_
             .emplace(kernel, case_recipes(kernel, CaseOptions{options_.seed,
                                                               options_.large}))
             .first;
  }
  if (it->second.empty()) {
    throw std::runtime_error("no conformance cases for " + kernel);
  }
  if (case_name == kOverrideCaseName) return it->second.front();
  for (const CaseRecipe& candidate : it->second) {
    if (candidate.name == case_name) return candidate;
  }
  throw std::runtime_error(
      fmt::format("{} has no case named '{}'", kernel, case_name));
}

CaseRunner::Outcome CaseRunner::run(const WorkItem& item) {
  log_.clear();
  Outcome outcome;
  CaseResult& result = outcome.result;
  result.platform = item.platform;
  result.target = item.target;
  result.impl = item.impl;
  result.kernel = item.kernel;
  result.case_name = item.case_name;
  result.check = item.check;
  const auto start = std::chrono::steady_clock::now();
  try {
    const CaseRecipe& source = recipe(item.kernel, item.case_name);
    const Case the_case = source.build();
    switch (item.check) {
      case Check::run: run_launch(item, the_case, result); break;
      case Check::compile: run_compile(item, the_case, result); break;
      case Check::override: run_override(item, the_case, result); break;
      case Check::launch:
        result.status = Status::skip;
        result.message = "compile-only";
        break;
    }
  } catch (const StepFailure& e) {
    result.status = Status::fail;
    result.message = e.what();
    outcome.replace_worker = e.device_broken();
  } catch (const std::exception& e) {
    result.status = Status::fail;
    result.message = e.what();
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  result.log = log_;
  return outcome;
}

void CaseRunner::run_launch(const WorkItem& item, const Case& the_case,
                            CaseResult& result) {
  const KernelSchema& schema = runtime_->schema(item.kernel);
  const CaseOnDevice placed(*runtime_, item, the_case, options_.device);
  const auto& [host, expected, no_oracle, device, actual, handle, launch] =
      placed;
  const CompileKey key = step("deriving the launch's key", [&] {
    return handle.key_for(actual.args(), launch);
  });
  result.key = key.text();
  result.target = key.target();
  result.impl = key.impl_name();
  check_warmup_inputs(schema, key);

  const WarmupResult warm =
      step("warmup", [&] { return runtime_->warmup_keys({key}); });
  if (warm.failed != 0) {
    throw StepFailure(
        fmt::format("compile failed: {}", warm.keys.front().error), false);
  }
  std::vector<std::string> problems;
  if (!runtime_->is_cached(key)) {
    problems.push_back("warmup did not put the key in the launch cache");
  }
  const uint64_t compiles_before = runtime_->cache_stats().compiles;
  step("launch", [&] { handle.launch(actual.args(), launch); });
  step("synchronize after the launch", [&] { device->synchronize(); });
  const uint64_t compiles_after = runtime_->cache_stats().compiles;
  if (compiles_after != compiles_before) {
    problems.push_back(
        fmt::format("the first launch after warmup compiled ({} compile(s))",
                    compiles_after - compiles_before));
  }
  if (no_oracle) {
    result.message = "outputs not compared: " + *no_oracle;
  } else {
    for (std::string& problem :
         compare_outputs(the_case, expected, actual, result)) {
      problems.push_back(std::move(problem));
    }
  }
  if (!problems.empty()) {
    result.status = Status::fail;
    result.message = join(problems);
  }
}

void CaseRunner::run_compile(const WorkItem& item, const Case& the_case,
                             CaseResult& result) {
  const KernelSchema& schema = runtime_->schema(item.kernel);
  // Storage-free arguments: no memory on any device.
  const MetadataArgs metadata = metadata_args(the_case);
  const CompileKey key = step("deriving the key", [&] {
    return derive_key(schema, metadata.args, item.target, item.impl);
  });
  result.key = key.text();
  check_warmup_inputs(schema, key);
  const WarmupResult warm =
      step("warmup", [&] { return runtime_->warmup_keys({key}); });
  if (warm.failed != 0) {
    result.status = Status::fail;
    result.message = fmt::format("compile failed: {}", warm.keys.front().error);
  }
}

void CaseRunner::run_override(const WorkItem& item, const Case& the_case,
                              CaseResult& result) {
  const CaseOnDevice placed(*runtime_, item, the_case, options_.device);
  const auto& [host, expected, no_oracle, device, actual, handle, launch] =
      placed;
  const std::string inputs = fmt::format(
      " (inputs of case '{}')", recipe(item.kernel, kOverrideCaseName).name);

  // A host function that only counts its calls: it must not touch the
  // tensors, which may be device memory.
  int calls = 0;
  HostKernel counter;
  counter.platform = item.platform;
  counter.impl_name = kOverrideImplName;
  counter.launch = [&calls](std::span<const jw_arg_value>, void*) { ++calls; };
  std::vector<std::string> problems;
  {
    RegistrationHandle registration = step("register_kernels", [&] {
      return runtime_->register_kernels(
          {KernelOverride{item.kernel, std::nullopt, counter}},
          "conformance runner");
    });
    const CompileKey key = step("deriving the key under the override", [&] {
      return handle.key_for(actual.args(), launch);
    });
    if (key.impl_name() != kOverrideImplName) {
      problems.push_back(fmt::format(
          "while the override is registered, the handle resolves to '{}'",
          key.impl_name()));
    }
    step("launch under the override",
         [&] { handle.launch(actual.args(), launch); });
    step("synchronize", [&] { device->synchronize(); });
    if (calls != 1) {
      problems.push_back(fmt::format(
          "the override ran {} time(s) for one launch: the plugin's "
          "implementation ran instead",
          calls));
    }
    registration.release();
  }
  const CompileKey restored = step("deriving the key after release", [&] {
    return handle.key_for(actual.args(), launch);
  });
  result.key = restored.text();
  if (restored.impl_name() != item.impl) {
    problems.push_back(fmt::format(
        "after the override was released the handle resolves to '{}', not "
        "'{}'",
        restored.impl_name(), item.impl));
  }
  step("launch after release", [&] { handle.launch(actual.args(), launch); });
  step("synchronize", [&] { device->synchronize(); });
  if (calls != 1) {
    problems.push_back("the override ran again after its release");
  }
  if (!no_oracle) {
    for (std::string& problem :
         compare_outputs(the_case, expected, actual, result)) {
      problems.push_back("after release: " + problem);
    }
  }
  if (!problems.empty()) {
    result.status = Status::fail;
    result.message = join(problems) + inputs;
  }
}

}  // namespace jitwarm::conformance
