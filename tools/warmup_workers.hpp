// Warmup in worker processes (`jitwarm warmup --jobs N`): in-process NVRTC
// compiles serialize on a lock (DESIGN.md measured 0.8x on 16 cores;
// hiprtc is documented to serialize too), separate processes do not. Each
// worker writes the same persistent cache, whose entries are written
// atomically, so the parent and later runs read every result.
//
// Workers never outlive their parent: each asks the kernel for SIGTERM when
// the parent dies (PR_SET_PDEATHSIG) and checks, after asking, that the
// parent it was forked from is still there (it may have died in between);
// a write to the result pipe that finds the parent gone ends the worker
// too. A worker stopped by SIGTERM, SIGINT or SIGHUP removes the cache file
// it is writing (in_flight_files.hpp) before it dies. If the parent leaves
// warm_in_processes early (an exception), it stops and reaps its workers.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <functional>
#include <vector>

namespace jitwarm::cli {

// Called in the parent as each key's result arrives: done, total, the key.
using WorkerProgress =
    std::function<void(std::size_t, std::size_t, const CompileKey&)>;

// Compiles `keys` in `jobs` worker processes forked from this one, each
// taking every jobs-th key (neighbouring keys, often of one kernel, spread
// over the workers). A key whose worker died before reporting it is
// failed, with that reason.
WarmupResult warm_in_processes(Runtime& runtime,
                               const std::vector<CompileKey>& keys,
                               unsigned jobs, const WorkerProgress& progress);

}  // namespace jitwarm::cli
