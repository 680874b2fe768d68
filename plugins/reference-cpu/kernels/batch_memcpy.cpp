// batch_memcpy — the reference for vllm.v1.worker.mamba_utils.batch_memcpy
// (docs/kernels.md, 3. batch_memcpy): many independent byte ranges, copied with
// memmove semantics per pair. Addresses arrive as int64 values, so on the CPU
// they are host addresses.
#include <cstdint>
#include <cstring>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::batch_memcpy;

void run(const KernelArgs& args) {
  constexpr_at_least(args, p::BLOCK_SIZE, 1);
  const HostTensor src_ptrs = args.tensor(p::src_ptrs);
  const HostTensor dst_ptrs = args.tensor(p::dst_ptrs);
  const HostTensor sizes = args.tensor(p::sizes);
  const int64_t num_copies = args.integer(p::num_copies);
  args.require(num_copies >= 0, "num_copies = ", num_copies, " is negative");
  for (const HostTensor* t : {&src_ptrs, &dst_ptrs, &sizes}) {
    args.require(t->dim(0) >= num_copies, t->name, " has ", t->dim(0),
                 " elements, fewer than num_copies = ", num_copies);
  }

  const int64_t* sources = src_ptrs.as<const int64_t>();
  const int64_t* destinations = dst_ptrs.as<const int64_t>();
  const int64_t* byte_counts = sizes.as<const int64_t>();
  // Check every pair before copying, so a bad pair leaves memory untouched.
  for (int64_t b = 0; b < num_copies; ++b) {
    args.require(byte_counts[b] >= 0, "sizes[", b, "] = ", byte_counts[b],
                 " is negative");
    args.require(
        byte_counts[b] == 0 || (sources[b] != 0 && destinations[b] != 0),
        "copy ", b, " moves ", byte_counts[b],
        " bytes but has a null address (src_ptrs[", b, "] = ", sources[b],
        ", dst_ptrs[", b, "] = ", destinations[b], ")");
  }
  for (int64_t b = 0; b < num_copies; ++b) {
    if (byte_counts[b] == 0) continue;
    std::memmove(
        reinterpret_cast<void*>(static_cast<uintptr_t>(destinations[b])),
        reinterpret_cast<const void*>(static_cast<uintptr_t>(sources[b])),
        static_cast<std::size_t>(byte_counts[b]));
  }
}

const Instantiation kInstantiations[] = {{"batch_memcpy", &run}};

const Instantiation& select(const ParamReader& reader) {
  constexpr_at_least(reader, p::BLOCK_SIZE, 1);
  return kInstantiations[0];
}

}  // namespace

const KernelDefinition& batch_memcpy_definition() {
  static const KernelDefinition definition{
      kernel_set::kBatchMemcpy, &select,
      "one instantiation (bytes are bytes); BLOCK_SIZE is validated only",
      kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
