// CompiledKernelMemo: one compile per distinct program in a process. Keys
// whose instantiations are identical (same source, name expression, options
// and target; e.g. two alignments of a tensor the kernel never vectorizes)
// share one CompiledKernel. Concurrent requests for the same program wait for
// the first (a Flight, support/single_flight.hpp); a failed compile is not
// remembered, so a retry compiles again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "single_flight.hpp"

namespace jitwarm::gpu {

// source -> COMPILED: what a compile key produced.
struct CompiledKernel {
  std::string binary;
  std::string format;       // "cubin", "ptx", "hsaco"
  std::string entry_point;  // lowered name of the instantiation
  std::string log;          // compiler warnings, possibly empty
  double compile_seconds = 0;
};

class CompiledKernelMemo {
 public:
  using Compile = std::function<CompiledKernel()>;

  // The program's compiled kernel: from the memo, or by running `compile`
  // (once, however many threads ask). `identity` must cover everything that
  // changes the binary. Rethrows what `compile` threw.
  std::shared_ptr<const CompiledKernel> get_or_compile(
      const std::string& identity, const Compile& compile);

  // The compiled kernel of `identity` (waiting for a compile of it in
  // flight), or nullptr when there is none or that compile failed.
  std::shared_ptr<const CompiledKernel> find(const std::string& identity);
  // What one program compiled for several identities at once gave (a
  // batch, GpuBackend::compile_batch): counted as one compile. An identity
  // already there keeps its entry. Returns each identity's entry, in order.
  std::vector<std::shared_ptr<const CompiledKernel>> put_batch(
      std::vector<std::pair<std::string, CompiledKernel>> compiled);

  struct Counters {
    uint64_t requests = 0;
    uint64_t compiles = 0;  // started (including failed ones)
    uint64_t failures = 0;
  };
  Counters counters() const;

 private:
  // A program's compile; held by the map until it fails, and by whoever
  // waits for it.
  using Entry = detail::Flight<std::shared_ptr<const CompiledKernel>>;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
  Counters counters_;
};

}  // namespace jitwarm::gpu
