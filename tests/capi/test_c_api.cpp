// The host half of the C API (jitwarm.h), exercised from C: each scenario in
// c_api_scenarios.c returns NULL when it passes or what failed.
#include <doctest/doctest.h>

#include <string>

extern "C" {
const char* scenario_options_and_monitor(void);
const char* scenario_reports_and_platforms(void);
const char* scenario_keys(void);
const char* scenario_specialization(void);
const char* scenario_warmup(void);
const char* scenario_warmup_failures(void);
const char* scenario_cuda_compile_only_warmup(void);
const char* scenario_parallel_batched_warmup(void);
const char* scenario_counters(void);
const char* scenario_cache_settings(void);
const char* scenario_bundles(void);
const char* scenario_trust(void);
const char* scenario_external_entries(void);
const char* scenario_shards_and_remote_counters(void);
const char* scenario_load_with_options(void);
const char* scenario_tuning(void);
}

namespace {

void check_scenario(const char* failure) {
  CHECK_MESSAGE(failure == nullptr,
                std::string(failure != nullptr ? failure : ""));
}

}  // namespace

TEST_CASE(
    "given runtime options from C, when launches compile after seal, then "
    "the monitor warns once, refuses, records, and bad options are refused") {
  check_scenario(scenario_options_and_monitor());
}

TEST_CASE(
    "given loaded plugins, when C asks for the load report, kernel names, "
    "explain, platforms and targets, then it gets them as text and JSON") {
  check_scenario(scenario_reports_and_platforms());
}

TEST_CASE(
    "given warmup tensors or real tensors, when C asks for the key a launch "
    "would use, then it gets its text, hash and encoding, which decodes back") {
  check_scenario(scenario_keys());
}

TEST_CASE(
    "given integers from C, then specialize_integer and its representative "
    "follow the rules and bad enums are refused") {
  check_scenario(scenario_specialization());
}

TEST_CASE(
    "given a manifest as text or a file, when C warms it, then the plan, the "
    "result, progress and the cache agree and the first launch compiles "
    "nothing") {
  check_scenario(scenario_warmup());
}

TEST_CASE(
    "given a key that fails to compile, when C warms, then the status is "
    "compile-failed and the result still lists every key") {
  check_scenario(scenario_warmup_failures());
}

TEST_CASE(
    "given no GPU, when C warms for cuda:sm_90, then NVRTC compiles the key" *
    doctest::skip(!JITWARM_TEST_HAS_CUDA_PLUGIN)) {
  check_scenario(scenario_cuda_compile_only_warmup());
}

TEST_CASE(
    "given batches and worker processes, when C warms for cuda:sm_90, then "
    "every key lands in this runtime's cache, and an unknown parallel mode "
    "is refused" *
    doctest::skip(!JITWARM_TEST_HAS_CUDA_PLUGIN)) {
  check_scenario(scenario_parallel_batched_warmup());
}

TEST_CASE(
    "given an older caller's shorter counters struct, then the core fills "
    "only what it knows and says how much") {
  check_scenario(scenario_counters());
}

TEST_CASE(
    "given cache options from C, then the settings are resolved as for a "
    "runtime, a bad URL is refused, and an older options struct still "
    "works") {
  check_scenario(scenario_cache_settings());
}

TEST_CASE(
    "given a warm cache, when a target is exported and imported from C, then "
    "a new runtime compiles nothing, and a truncated bundle imports "
    "nothing") {
  check_scenario(scenario_bundles());
}

TEST_CASE(
    "given signing and trusted keys from C, then bundles are signed, refused "
    "by an unknown key or digest, and imported and loaded under the right "
    "one") {
  check_scenario(scenario_trust());
}

TEST_CASE(
    "given an external entry stored from C, then another runtime on the "
    "directory loads it byte for byte, another fingerprint misses, and an "
    "empty fingerprint or format is refused") {
  check_scenario(scenario_external_entries());
}

TEST_CASE(
    "given shards of a plan and an unreachable remote tier from C, then the "
    "shards cover the plan, every key compiles, and the remote counters say "
    "what failed") {
  check_scenario(scenario_shards_and_remote_counters());
}

TEST_CASE(
    "given load options from C, when the plugins are probed in a child "
    "first, then they load as in-process, and a short struct is refused") {
  check_scenario(scenario_load_with_options());
}

TEST_CASE(
    "given a kernel tuned from C, then the result, the stored result, the "
    "key a launch uses and a warmup for the device's kind name one winner, "
    "and an implementation that is not tunable is refused") {
  check_scenario(scenario_tuning());
}
