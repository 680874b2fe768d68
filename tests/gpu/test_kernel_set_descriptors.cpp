// The kernel set from its descriptors (plugins/common/kernel_set.hpp): the
// schemas the build uses, which generate_kernel_set.py wrote from the
// built-in descriptors, are field by field the ones the descriptor reader
// (kernel_descriptor.cpp) makes of the same files' [[param]] tables, and
// the descriptor text the conformance runner reads is the one the GPU
// plugins embed.
#include <jitwarm/plugin.hpp>

#include "embedded_kernel_sources.hpp"
#include "kernel_descriptor.hpp"
#include "kernel_set.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <string_view>

namespace gpu = jitwarm::gpu;
namespace ks = jitwarm::kernel_set;

namespace {

std::string_view text_or_empty(const char* text) {
  return text != nullptr ? std::string_view(text) : std::string_view();
}

}  // namespace

TEST_CASE(
    "given the built-in descriptors read by the descriptor reader, then their "
    "[[param]] tables are the kernel set's schemas, field by field") {
  const auto descriptors = gpu::builtin_descriptors();
  REQUIRE(descriptors.size() == ks::schemas().size());
  for (const auto& descriptor : descriptors) {
    CAPTURE(descriptor->origin);
    REQUIRE(descriptor->schema != nullptr);
    const jw_kernel_schema& read = descriptor->schema->c();
    const jw_kernel_schema* built = ks::find_schema(descriptor->kernel_name);
    REQUIRE(built != nullptr);
    CHECK(std::string_view(read.name) == built->name);
    CHECK(read.struct_size == built->struct_size);
    CHECK(read.next == built->next);
    CHECK(text_or_empty(read.summary) == text_or_empty(built->summary));
    CHECK(text_or_empty(read.launch_rule) == text_or_empty(built->launch_rule));
    REQUIRE(read.num_params == built->num_params);
    const auto names = ks::param_names(built->name);
    REQUIRE(names.size() == built->num_params);
    for (uint32_t i = 0; i < read.num_params; ++i) {
      const jw_param_desc& r = read.params[i];
      const jw_param_desc& b = built->params[i];
      CAPTURE(r.name);
      CHECK(std::string_view(r.name) == b.name);
      CHECK(std::string_view(names[i]) == b.name);
      CHECK(r.struct_size == b.struct_size);
      CHECK(r.next == b.next);
      CHECK(r.kind == b.kind);
      CHECK(r.flags == b.flags);
      CHECK(r.allowed_dtypes == b.allowed_dtypes);
      CHECK(r.rank == b.rank);
      CHECK(r.default_value.kind == b.default_value.kind);
      // Every bit of the value, whichever member it is.
      CHECK(std::memcmp(&r.default_value.value, &b.default_value.value,
                        sizeof(r.default_value.value)) == 0);
      CHECK(text_or_empty(r.same_dtype_as) == text_or_empty(b.same_dtype_as));
    }
  }
}

TEST_CASE(
    "given the kernel set's parameter positions, then they are the positions "
    "in the schemas") {
  const auto position = [](std::string_view kernel, std::string_view param) {
    const auto names = ks::param_names(kernel);
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (param == names[i]) return static_cast<uint32_t>(i);
    }
    FAIL("no parameter ", param, " in ", kernel);
    return ~0u;
  };
  CHECK(position(ks::kComputeSlotMapping, "cp_interleave") ==
        ks::compute_slot_mapping::cp_interleave);
  CHECK(position(ks::kExpand, "MAX_NUM_TOKENS") == ks::expand::MAX_NUM_TOKENS);
  CHECK(position(ks::kScatterStates, "indices") == ks::scatter_states::indices);
  CHECK(position(ks::kPackSeq, "pad_value") == ks::pack_seq::pad_value);
  CHECK(position(ks::kUnpackSeq, "BLOCK_T") == ks::unpack_seq::BLOCK_T);
  CHECK(position(ks::kRmsNorm, "H") == ks::rms_norm::H);
  CHECK(ks::find_schema(ks::kSiluAndMul)->num_params ==
        ks::silu_and_mul::count);
}

TEST_CASE(
    "given the kernel set's descriptor files, then each is the descriptor the "
    "GPU plugins embed, under the same origin, in the order of the schemas") {
  const auto files = ks::descriptor_files();
  REQUIRE(files.size() == ks::schemas().size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    const ks::DescriptorFile& file = files[i];
    CAPTURE(file.origin);
    CHECK(file.kernel_name == ks::schemas()[i].name);
    const gpu::KernelDescriptor* descriptor =
        gpu::find_builtin_descriptor(file.kernel_name);
    REQUIRE(descriptor != nullptr);
    CHECK(file.origin == descriptor->origin);
    const std::string_view name =
        file.origin.substr(file.origin.rfind('/') + 1);
    CHECK(file.text ==
          gpu::find_source(gpu::embedded_kernel_sources(), name).text);
  }
}
