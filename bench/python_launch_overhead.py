#!/usr/bin/env python3
"""Host cost of a launch through the Python binding, per launch.

The kernel is expand on one request (out, x, cu_num_tokens, 5, 0, 8), the one
bench/launch_overhead.cpp times from C++, so its own work is negligible:

- cpu: NumPy arrays on the CPU reference (runs anywhere);
- cuda: torch CUDA tensors on torch's current stream (needs torch and a GPU;
  skipped with a note otherwise). Launches are timed in batches shorter than
  the device's queue, with a synchronize between batches outside the timing,
  so the number is the host's cost, not the GPU's.

Every key is warmed first; the run fails if a timed launch compiles.

    python3 bench/python_launch_overhead.py [--iterations N] [--platform cpu|cuda|all]
"""
import argparse
import sys
import time

import numpy as np

import jitwarm

EXPAND = "vllm.v1.sample.rejection_sampler.expand"
BATCH = 500


def time_launches(launch, iterations, between_batches=None):
    """Seconds per launch, the best of 5 rounds (the least disturbed by
    other work on the machine)."""
    return time_in_turns([launch], iterations, between_batches)[0]


def time_in_turns(calls, iterations, between_batches=None):
    """Seconds per call of each of `calls`, the best of 5 rounds, the calls
    taking turns round by round so that a host whose speed drifts slows
    them alike."""
    best = [float("inf")] * len(calls)
    for _ in range(5):
        for k, call in enumerate(calls):
            total, done = 0.0, 0
            while done < iterations:
                n = min(BATCH, iterations - done)
                start = time.perf_counter()
                for _ in range(n):
                    call()
                total += time.perf_counter() - start
                done += n
                if between_batches is not None:
                    between_batches()
            best[k] = min(best[k], total / iterations)
    return best


def bench_cpu(rt, iterations):
    expand = rt.kernel(EXPAND)
    x = np.array([5], dtype=np.int32)
    cu = np.array([1], dtype=np.int32)
    out = np.zeros(1, dtype=np.int32)
    expand(out, x, cu, 5, 0, 8)  # compiles once
    compiles = rt.cache_stats().compiles
    per_launch = time_launches(lambda: expand(out, x, cu, 5, 0, 8), iterations)
    by_name = time_launches(
        lambda: expand(output=out, x=x, cu_num_tokens=cu, replace_from=5, replace_to=0,
                       MAX_NUM_TOKENS=8), iterations)
    if rt.cache_stats().compiles != compiles:
        raise SystemExit("a timed launch compiled")
    print(f"cpu  (NumPy arrays, CPU reference): {per_launch * 1e6:.2f} us per launch "
          f"(positional), {by_name * 1e6:.2f} us (by name); {iterations} launches")
    return per_launch


def bench_cuda(rt, iterations):
    try:
        import torch
    except ImportError:
        print("cuda: skipped (torch is not installed)")
        return None
    if not torch.cuda.is_available():
        print("cuda: skipped (torch sees no CUDA device)")
        return None
    if not any(p.name == "cuda" and p.can_launch for p in rt.platforms()):
        print("cuda: skipped (the jitwarm CUDA plugin cannot launch here)")
        return None
    expand = rt.kernel(EXPAND)
    # x = 7 is not replace_from (5), so expand copies it to the token.
    x = torch.tensor([7], dtype=torch.int32, device="cuda")
    cu = torch.tensor([1], dtype=torch.int32, device="cuda")
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    rt.warmup_keys([expand.key_for(out, x, cu, 5, 0, 8)])
    expand(out, x, cu, 5, 0, 8)
    torch.cuda.synchronize()
    if out.item() != 7:
        raise SystemExit(f"expand on cuda wrote {out.item()}, expected 7")
    compiles = rt.cache_stats().compiles
    # In turns with the launch: torch's own cheapest launch from Python (an
    # in-place fill of a one-element tensor), and key_for, which reads the
    # same arguments and derives their key but launches nothing.
    per_launch, torch_fill, key_for = time_in_turns(
        [lambda: expand(out, x, cu, 5, 0, 8), lambda: out.fill_(7),
         lambda: expand.key_for(out, x, cu, 5, 0, 8)],
        iterations, between_batches=torch.cuda.synchronize)
    if rt.cache_stats().compiles != compiles:
        raise SystemExit("a timed launch compiled")
    # What the binding must ask torch for on each launch, asked from Python:
    # each tensor's dtype, shape, strides, pointer and device, and torch's
    # current stream (the binding makes the same calls through the C API,
    # without the Python-level loop and lambda).
    current_stream = torch._C._cuda_getCurrentRawStream

    def torch_queries():
        for t in (out, x, cu):
            t.dtype, t.shape, t.stride(), t.data_ptr(), t.get_device()
        current_stream(0)

    queries = time_launches(torch_queries, iterations)
    print(f"cuda (torch CUDA tensors, torch's current stream): {per_launch * 1e6:.2f} us per "
          f"launch; {iterations} launches (target: <= 3 us)")
    print(f"     in the same turns: torch's own launch of out.fill_(7) {torch_fill * 1e6:.2f} us; "
          f"expand.key_for(...) (the arguments read, the key derived, no launch) "
          f"{key_for * 1e6:.2f} us")
    print(f"     of which torch answers the binding's questions (3 tensors' dtype, shape, "
          f"stride(), data_ptr(), get_device(); the current stream), timed from Python: "
          f"{queries * 1e6:.2f} us")
    return per_launch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100000)
    parser.add_argument("--platform", choices=["cpu", "cuda", "all"], default="all")
    args = parser.parse_args()
    rt = jitwarm.Runtime()
    rt.load_plugins()
    if args.platform in ("cpu", "all"):
        bench_cpu(rt, args.iterations)
    if args.platform in ("cuda", "all"):
        bench_cuda(rt, args.iterations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
