"""torch.compile's Inductor kernels for the bench's rms_norm and silu_and_mul
shapes (bench/kernel_bandwidth.cpp), timed as that bench times jitwarm's:
one untimed call, then --iterations calls between two synchronizations, on
the same GPU, so scripts/device-run.sh can run both in turns.

    python3 bench/torch_compile_compare.py [--iterations 30] [--rounds 3]

Prints one line per (kernel, shape): microseconds per call and GB/s over
the same byte count the bench uses.
"""
import argparse
import time

import torch


def rms_norm(x, weight, eps: float):
    variance = x.float().pow(2).mean(dim=-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + eps)).to(x.dtype) * weight


def silu_and_mul(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def seconds_per_call(fn, iterations):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iterations):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iterations


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    compiled_norm = torch.compile(rms_norm, dynamic=False)
    compiled_silu = torch.compile(silu_and_mul, dynamic=False)
    H = 8192
    for dtype, T, name in ((torch.bfloat16, 16384, "bf16"), (torch.float32, 8192, "fp32")):
        size = torch.finfo(dtype).bits // 8
        x = torch.rand(T, 2 * H, device="cuda", dtype=dtype) * 0.5 + 0.5
        xn = x[:, :H].contiguous()
        w = torch.ones(H, device="cuda", dtype=dtype)
        cases = (
            ("rms_norm", f"{name} [{T}, {H}]", 2.0 * T * H * size + H * size,
             lambda: compiled_norm(xn, w, 1e-6)),
            ("silu_and_mul", f"{name} [{T}, 2x{H}]", 3.0 * T * H * size,
             lambda: compiled_silu(x)),
        )
        for kernel, shape, bytes_moved, fn in cases:
            fn()  # compile outside the timing
            times = [seconds_per_call(fn, args.iterations) for _ in range(args.rounds)]
            best = min(times)
            print(f"torch.compile {kernel:<14} {shape:<22} "
                  f"{best * 1e6:9.1f} us  {bytes_moved / best / 1e9:8.1f} GB/s  "
                  f"(rounds: {', '.join(f'{t * 1e6:.1f}' for t in times)} us)",
                  flush=True)


if __name__ == "__main__":
    main()
