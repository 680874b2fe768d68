#!/usr/bin/env python3
"""Host time per launch of Triton's JIT launcher, for the kernel the C++
launch-overhead bench times (bench/launch_overhead.cpp): expand of one
request, int32, on a CUDA stream, with the compiled kernel already in
Triton's cache. Run next to `jitwarm-bench-launch-overhead --platform cuda`
in the same device command (scripts/device-run.sh) so the numbers share a
machine and a moment.

Launches go in batches of 256 with a stream synchronize between batches
(untimed), as in the C++ bench, so the launch queue never fills. Prints the
median over rounds of the mean nanoseconds per launch; --json for a line of
JSON. Needs torch and triton on a GPU machine.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

BATCH = 256


@triton.jit
def expand(output_ptr, x_ptr, cu_num_tokens_ptr, replace_from, replace_to,
           MAX_NUM_TOKENS: tl.constexpr):
    # docs/kernels.md, 2. expand; one program per request: copy x[req] to its
    # tokens.
    req = tl.program_id(0)
    start = tl.load(cu_num_tokens_ptr + req - 1, mask=req > 0, other=0)
    end = tl.load(cu_num_tokens_ptr + req)
    value = tl.load(x_ptr + req)
    value = tl.where(value == replace_from, replace_to, value)
    offsets = tl.arange(0, MAX_NUM_TOKENS)
    tl.store(output_ptr + start + offsets, value, mask=offsets < end - start)


def time_per_launch(body, sync, iterations, rounds):
    results = []
    for _ in range(rounds):
        total = 0.0
        done = 0
        while done < iterations:
            n = min(BATCH, iterations - done)
            start = time.perf_counter_ns()
            for _ in range(n):
                body()
            total += time.perf_counter_ns() - start
            sync()
            done += n
        results.append(total / iterations)
    return statistics.median(results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    stream = torch.cuda.Stream()
    x = torch.tensor([5], dtype=torch.int32, device="cuda")
    cu = torch.tensor([1], dtype=torch.int32, device="cuda")
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    with torch.cuda.stream(stream):
        expand[(1,)](out, x, cu, 5, 0, MAX_NUM_TOKENS=8)  # compile once
        stream.synchronize()
        assert out.item() == 0, "expand replaced 5 by 0"
        ns = time_per_launch(
            lambda: expand[(1,)](out, x, cu, 5, 0, MAX_NUM_TOKENS=8),
            stream.synchronize, args.iterations, args.rounds)
    if args.json:
        print(json.dumps({"triton": triton.__version__, "torch": torch.__version__,
                          "device": torch.cuda.get_device_name(),
                          "ns_per_launch": round(ns, 1)}))
    else:
        print(f"triton {triton.__version__} JIT launch of expand "
              f"({torch.cuda.get_device_name()}): {ns:.1f} ns per launch "
              f"({args.iterations} iterations x {args.rounds} rounds, median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
