// zero_kv_blocks — the reference for vllm.v1.worker.utils.zero_kv_blocks
// (docs/kernels.md, 4. zero_kv_blocks): zero the listed blocks in every cache
// segment. Segment addresses arrive as int64 values, host addresses on the CPU.
#include <cstdint>
#include <cstring>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::zero_kv_blocks;

void run(const KernelArgs& args) {
  const HostTensor block_ids = args.tensor(p::block_ids);
  const HostTensor seg_addrs = args.tensor(p::seg_addrs);
  const HostTensor seg_block_stride = args.tensor(p::seg_block_stride);
  const HostTensor seg_block_bytes = args.tensor(p::seg_block_bytes);
  const int64_t n_blocks = args.integer(p::n_blocks);
  const int64_t n_segments = args.integer(p::n_segments);
  args.require(n_blocks >= 0, "n_blocks = ", n_blocks, " is negative");
  args.require(n_segments >= 0, "n_segments = ", n_segments, " is negative");
  args.require(block_ids.dim(0) >= n_blocks, "block_ids has ", block_ids.dim(0),
               " elements, fewer than n_blocks = ", n_blocks);
  for (const HostTensor* t :
       {&seg_addrs, &seg_block_stride, &seg_block_bytes}) {
    args.require(t->dim(0) >= n_segments, t->name, " has ", t->dim(0),
                 " elements, fewer than n_segments = ", n_segments);
  }

  const int32_t* ids = block_ids.as<const int32_t>();
  const int64_t* addresses = seg_addrs.as<const int64_t>();
  const int64_t* strides = seg_block_stride.as<const int64_t>();
  const int64_t* byte_counts = seg_block_bytes.as<const int64_t>();
  // Everything is checked before the first byte is zeroed.
  int64_t largest_id = -1;
  for (int64_t b = 0; b < n_blocks; ++b) {
    args.require(ids[b] >= 0, "block_ids[", b, "] = ", ids[b], " is negative");
    largest_id = ids[b] > largest_id ? ids[b] : largest_id;
  }
  for (int64_t s = 0; s < n_segments; ++s) {
    args.require(strides[s] >= 0, "seg_block_stride[", s, "] = ", strides[s],
                 " is negative");
    args.require(byte_counts[s] >= 0, "seg_block_bytes[", s,
                 "] = ", byte_counts[s], " is negative");
    args.require(byte_counts[s] == 0 || n_blocks == 0 || addresses[s] != 0,
                 "segment ", s, " has a null address (seg_addrs[", s,
                 "] = 0) but zeroes ", byte_counts[s], " bytes per block");
    if (n_blocks > 0) {
      // The furthest byte any block of this segment reaches must be an
      // address: this also keeps every smaller offset from overflowing.
      const int64_t furthest = checked_add(
          args,
          checked_add(args, addresses[s],
                      checked_mul(args, largest_id, strides[s],
                                  concat("segment ", s, "'s block offset")),
                      concat("segment ", s, "'s block address")),
          byte_counts[s], concat("segment ", s, "'s block end"));
      static_cast<void>(furthest);
    }
  }
  for (int64_t s = 0; s < n_segments; ++s) {
    if (byte_counts[s] == 0) continue;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t address = addresses[s] + ids[b] * strides[s];
      std::memset(reinterpret_cast<void*>(static_cast<uintptr_t>(address)), 0,
                  static_cast<std::size_t>(byte_counts[s]));
    }
  }
}

const Instantiation kInstantiations[] = {{"zero_kv_blocks", &run}};

const Instantiation& select(const ParamReader&) {
  return kInstantiations[0];
}

}  // namespace

const KernelDefinition& zero_kv_blocks_definition() {
  static const KernelDefinition definition{
      kernel_set::kZeroKvBlocks, &select,
      "one instantiation (every dtype is fixed, no constexprs)",
      kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
