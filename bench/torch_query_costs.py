#!/usr/bin/env python3
"""What each question a launch asks torch costs, from Python, on a CUDA tensor.

The binding reads each tensor argument's dtype, shape, stride(), data_ptr() and
get_device(), and torch's current stream, through the same methods from C; this
prices them one by one (the best of 5 rounds, an empty lambda's call subtracted),
with torch's own cheapest launch (x.zero_()) for scale. Needs torch and a GPU.

    python3 bench/torch_query_costs.py
"""
import time

import torch
from torch.utils.dlpack import to_dlpack


def per_call_ns(f, n=200000):
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e9


def main():
    x = torch.tensor([7], dtype=torch.int32, device="cuda")
    current_stream = torch._C._cuda_getCurrentRawStream
    base = per_call_ns(lambda: None)
    for name, f in [("dtype", lambda: x.dtype), ("shape", lambda: x.shape),
                    ("stride()", lambda: x.stride()), ("data_ptr()", lambda: x.data_ptr()),
                    ("get_device()", lambda: x.get_device()), ("is_cuda", lambda: x.is_cuda),
                    ("to_dlpack", lambda: to_dlpack(x)),
                    ("current stream", lambda: current_stream(0)),
                    ("x.zero_() launch", lambda: x.zero_())]:
        print(f"{name:20s} {per_call_ns(f) - base:8.1f} ns "
              f"(python call overhead {base:.1f} subtracted)")
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
