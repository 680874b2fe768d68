// Tests of tools/conformance/cases: the catalogue covers, for every kernel
// of the portable set, what docs/kernels.md asks a backend to get right ("What
// a backend must get right"). The checks read the schemas (allowed dtypes,
// which integers are specialized) and derive each case's compile key, so they
// follow the kernel set rather than a list written here.
#include <doctest/doctest.h>

#include <jitwarm/jitwarm.hpp>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "case_arguments.hpp"
#include "cases.hpp"
#include "kernel_set.hpp"
#include "reference_cpu.hpp"
#include "source_kernel_cases.hpp"

namespace da = jitwarm::device_args;
namespace jc = jitwarm::conformance;
using jitwarm::KernelSchema;

namespace {

std::string class_name(jw_int_class c) {
  switch (c) {
    case JW_INT_CLASS_ONE: return "1";
    case JW_INT_CLASS_DIV16: return "multiple of 16";
    default: return "other";
  }
}

// The named case of a kernel, run on the CPU reference: the contents of
// its buffer `buffer` afterwards, as T.
template <typename T>
std::vector<T> reference_output(std::string_view kernel,
                                const std::string& case_name,
                                const std::string& buffer) {
  for (const jc::CaseRecipe& recipe : jc::case_recipes(kernel, {})) {
    if (recipe.name != case_name) continue;
    const da::Case the_case = recipe.build();
    const auto host = da::host_memory();
    const da::PlacedCase placed(the_case, *host);
    jitwarm::reference_cpu::run_kernel(kernel, placed.args());
    for (std::size_t i = 0; i < the_case.buffers.size(); ++i) {
      if (the_case.buffers[i].name != buffer) continue;
      const std::vector<unsigned char> bytes = placed.read(i);
      std::vector<T> values(bytes.size() / sizeof(T));
      std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
      return values;
    }
  }
  FAIL("no case ", case_name, " with a buffer ", buffer, " for ", kernel);
  return {};
}

}  // namespace

TEST_CASE(
    "given every kernel of the set, then its cases cover every dtype, every "
    "integer class, both alignments and an empty input") {
  for (const jw_kernel_schema& c_schema : jitwarm::kernel_set::schemas()) {
    const KernelSchema schema = KernelSchema::from_c(c_schema, "kernel_set");
    CAPTURE(schema.name());
    const auto recipes = jc::case_recipes(schema.name(), {});
    REQUIRE_FALSE(recipes.empty());
    REQUIRE(jc::has_cases(schema.name()));

    std::map<std::string, std::set<jw_dtype>> dtypes;
    std::map<std::string, std::set<jw_alignment>> alignments;
    std::map<std::string, std::set<jw_int_class>> classes;
    std::set<std::string> names;
    bool has_empty = false;
    for (const jc::CaseRecipe& recipe : recipes) {
      CAPTURE(recipe.name);
      CHECK(names.insert(recipe.name).second);  // names are unique
      CHECK_FALSE(recipe.large);
      has_empty = has_empty || recipe.name.find("empty/") != std::string::npos;
      const da::Case the_case = recipe.build();
      const da::MetadataArgs args = da::metadata_args(the_case);
      const jitwarm::CompileKey key =
          jitwarm::derive_key(schema, args.args, "cpu:x86_64", "reference-cpu");
      for (const jitwarm::ParamSpec& spec : key.params()) {
        if (spec.kind == JW_PARAM_TENSOR) {
          dtypes[spec.name].insert(spec.dtype);
          alignments[spec.name].insert(spec.alignment);
        } else if (spec.kind == JW_PARAM_INT) {
          classes[spec.name].insert(spec.int_spec.value_class);
        }
      }
    }
    CHECK(has_empty);
    for (const jitwarm::ParamDesc& param : schema.params()) {
      CAPTURE(param.name);
      if (param.kind == JW_PARAM_TENSOR) {
        CHECK(alignments[param.name].contains(JW_ALIGN_16));
        CHECK(alignments[param.name].contains(JW_ALIGN_NONE));
        // A parameter whose dtype follows another's is covered by that one.
        if (!param.same_dtype_as.empty()) continue;
        for (int d = JW_DTYPE_BOOL; d < JW_DTYPE_COUNT; ++d) {
          const auto dtype = static_cast<jw_dtype>(d);
          const bool allowed =
              param.allowed_dtypes == 0 ||
              (param.allowed_dtypes & JW_DTYPE_BIT(dtype)) != 0;
          if (allowed) {
            CAPTURE(jitwarm::dtype_name(dtype));
            CHECK(dtypes[param.name].contains(dtype));
          }
        }
      } else if (param.kind == JW_PARAM_INT &&
                 !param.has_flag(JW_PARAM_DO_NOT_SPECIALIZE)) {
        for (const jw_int_class c :
             {JW_INT_CLASS_ONE, JW_INT_CLASS_DIV16, JW_INT_CLASS_NONE}) {
          CAPTURE(class_name(c));
          CHECK(classes[param.name].contains(c));
        }
      }
    }
  }
}

TEST_CASE("given every case, then the CPU reference accepts its inputs") {
  for (const jw_kernel_schema& schema : jitwarm::kernel_set::schemas()) {
    for (const jc::CaseRecipe& recipe : jc::case_recipes(schema.name, {})) {
      CAPTURE(recipe.name);
      const da::Case the_case = recipe.build();
      const auto host = da::host_memory();
      const da::PlacedCase placed(the_case, *host);
      CHECK_NOTHROW(
          jitwarm::reference_cpu::run_kernel(schema.name, placed.args()));
    }
  }
}

TEST_CASE(
    "given the same seed, then a case's data is the same; given another seed, "
    "then it differs") {
  const std::string kernel(jitwarm::kernel_set::kRmsNorm);
  const auto first = jc::case_recipes(kernel, {})[0].build();
  const auto again = jc::case_recipes(kernel, {})[0].build();
  const auto other = jc::case_recipes(kernel, {.seed = 7})[0].build();
  REQUIRE(first.buffers.size() == again.buffers.size());
  for (std::size_t i = 0; i < first.buffers.size(); ++i) {
    CHECK(first.buffers[i].bytes == again.buffers[i].bytes);
  }
  bool differs = false;
  for (std::size_t i = 0; i < first.buffers.size(); ++i) {
    differs = differs || first.buffers[i].bytes != other.buffers[i].bytes;
  }
  CHECK(differs);
}

TEST_CASE(
    "given --large, then every kernel adds cases of at least a million "
    "elements") {
  for (const jw_kernel_schema& schema : jitwarm::kernel_set::schemas()) {
    CAPTURE(schema.name);
    const auto all = jc::case_recipes(schema.name, {.large = true});
    const auto small = jc::case_recipes(schema.name, {});
    CHECK(all.size() > small.size());
    for (const jc::CaseRecipe& recipe : all) {
      if (!recipe.large) continue;
      CAPTURE(recipe.name);
      // Count metadata only: the sizes are in the arguments.
      const da::Case the_case = recipe.build();
      int64_t largest = 0;
      for (const da::Buffer& buffer : the_case.buffers) {
        largest = std::max(largest, buffer.element_count());
      }
      CHECK(largest >= 1000000);
    }
  }
}

TEST_CASE(
    "given every kernel of the set, then its cases are the generated ones, "
    "then its descriptor's [[case]] tables") {
  for (const jw_kernel_schema& schema : jitwarm::kernel_set::schemas()) {
    CAPTURE(schema.name);
    const auto generated = jc::generated_case_recipes(schema.name, {});
    const auto described = jc::descriptor_case_recipes(schema.name, {});
    CHECK_FALSE(generated.empty());
    CHECK_FALSE(described.empty());
    std::vector<std::string> expected;
    for (const auto& list : {generated, described}) {
      for (const jc::CaseRecipe& recipe : list) expected.push_back(recipe.name);
    }
    std::vector<std::string> names;
    for (const jc::CaseRecipe& recipe : jc::case_recipes(schema.name, {})) {
      names.push_back(recipe.name);
    }
    CHECK(names == expected);
  }
}

TEST_CASE(
    "given the worked examples of docs/kernels.md as descriptor cases, then "
    "the CPU reference computes the documented outputs") {
  namespace ks = jitwarm::kernel_set;
  CHECK(reference_output<int64_t>(ks::kComputeSlotMapping, "example",
                                  "slot_mapping") ==
        std::vector<int64_t>{112, 49, -1, -1});
  CHECK(reference_output<int32_t>(ks::kExpand, "example", "output") ==
        std::vector<int32_t>{0, 0, 9, 9, 9, 0});
  CHECK(reference_output<int32_t>(ks::kPreparePosSeqLens, "example",
                                  "seq_lens") ==
        std::vector<int32_t>{12, 7, 0});
  CHECK(reference_output<int64_t>(ks::kPreparePosSeqLens, "example",
                                  "positions") ==
        std::vector<int64_t>{10, 11, 4, 5, 6});
  // The variations the descriptors' comments describe.
  CHECK(reference_output<int64_t>(ks::kComputeSlotMapping, "example/cp_rank=1",
                                  "slot_mapping") ==
        std::vector<int64_t>{-1, 120, -1, -1});
  CHECK(reference_output<float>(ks::kExpand, "example/float32", "output") ==
        std::vector<float>{0.5f, 0.5f, 9, 9, 9, 0.5f});
}

TEST_CASE("given a kernel outside the set, then there are no cases") {
  CHECK_FALSE(jc::has_cases("jitwarm.test.scale"));
  CHECK(jc::case_recipes("jitwarm.test.scale", {}).empty());
}
