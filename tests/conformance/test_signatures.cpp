// The launch path finds prepared launches by argument signature
// (core/src/argument_signature.hpp) and derives the key only on a miss, so
// the two must agree on every case a backend is tested with: a signature
// gives exactly the key derive_key gives for the same arguments, two
// arguments lists share a signature exactly when they share a key, and a
// launch's runtime tensors give the signature of the warmup tensors with
// the same metadata.
#include <doctest/doctest.h>

#include <jitwarm/jitwarm.hpp>

#include <map>
#include <string>
#include <vector>

#include "argument_signature.hpp"
#include "case_arguments.hpp"
#include "cases.hpp"
#include "kernel_set.hpp"

namespace da = jitwarm::device_args;
namespace jc = jitwarm::conformance;
using jitwarm::CompileKey;
using jitwarm::KernelSchema;
using jitwarm::detail::ArgumentSignature;
using jitwarm::detail::ArgumentUse;

namespace {

std::vector<uint64_t> words_of(const ArgumentSignature& signature) {
  const auto words = signature.words();
  return {words.begin(), words.end()};
}

}  // namespace

TEST_CASE(
    "given every conformance case, then its signature maps to derive_key's "
    "key, one signature per key and one key per signature, for launch and "
    "warmup arguments alike") {
  constexpr std::string_view kTarget = "cuda:sm_90";
  constexpr std::string_view kImpl = "cuda-nvrtc";
  std::size_t cases = 0;
  for (const jw_kernel_schema& c_schema : jitwarm::kernel_set::schemas()) {
    const KernelSchema schema = KernelSchema::from_c(c_schema, "kernel_set");
    CAPTURE(schema.name());
    std::map<std::vector<uint64_t>, std::string> key_of_signature;
    std::map<std::string, std::vector<uint64_t>> signature_of_key;
    for (const jc::CaseRecipe& recipe : jc::case_recipes(schema.name(), {})) {
      CAPTURE(recipe.name);
      ++cases;
      const da::Case the_case = recipe.build();
      const auto host = da::host_memory();
      const da::PlacedCase placed(the_case, *host);
      const da::MetadataArgs metadata = da::metadata_args(the_case);

      ArgumentSignature launch;
      jitwarm::detail::specialize_arguments(schema, placed.args(),
                                            ArgumentUse::launch, launch);
      const CompileKey from_signature =
          jitwarm::detail::key_from_signature(schema, launch, kTarget, kImpl);
      const CompileKey derived =
          jitwarm::derive_key(schema, placed.args(), kTarget, kImpl);
      CHECK(from_signature == derived);

      ArgumentSignature warmup;
      jitwarm::detail::specialize_arguments(schema, metadata.args,
                                            ArgumentUse::key, warmup);
      CHECK(words_of(warmup) == words_of(launch));
      CHECK(jitwarm::derive_key(schema, metadata.args, kTarget, kImpl) ==
            derived);

      const auto [by_signature, new_signature] =
          key_of_signature.emplace(words_of(launch), derived.encoding());
      CHECK(by_signature->second == derived.encoding());
      const auto [by_key, new_key] =
          signature_of_key.emplace(derived.encoding(), words_of(launch));
      CHECK(by_key->second == words_of(launch));
      CHECK(new_signature == new_key);
    }
  }
  CHECK(cases > 100);
}
