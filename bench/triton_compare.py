#!/usr/bin/env python3
"""Cold compile time of the same specializations in Triton and in jitwarm.

Compiles silu_and_mul (the kernel-set semantics, written in Triton the way
vLLM writes such kernels) for 3 dtypes x aligned/unaligned x 3 classes of H
(1, a multiple of 16, other) = 18 specializations with an empty Triton cache,
through `kernel.warmup` (compile only, no launch), and prints the seconds.
The same 18 keys through jitwarm are `jitwarm warmup --manifest
bench/silu_and_mul.toml --target cuda:sm_90` (run next to this script by
scripts/device-run.sh). Needs a GPU machine with torch and triton.
"""
import os
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl


def use_cold_triton_cache():
    """Points Triton at a new, empty cache directory. Triton reads
    TRITON_CACHE_DIR at each cache access, so this works after import; it is
    a call, not an import-time effect, because importing silu_and_mul must not
    move the cache of a script that has its own (bench/triton_fleet_start.py's
    node processes read a populated one)."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cold-")


@triton.jit
def silu_and_mul(out_ptr, x_ptr, T, H, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < H
    a = tl.load(x_ptr + row * 2 * H + cols, mask=mask).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * H + H + cols, mask=mask).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(out_ptr + row * H + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def main():
    use_cold_triton_cache()
    specs = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for aligned in (True, False):
            for h in (16, 17, 1):
                specs.append((dtype, aligned, h))
    seconds = []
    for dtype, aligned, h in specs:
        shift = 0 if aligned else 1  # one element off a 16-byte boundary
        x = torch.empty(2 * 2 * h + 8, dtype=dtype, device="cuda")[shift:]
        out = torch.empty(2 * h + 8, dtype=dtype, device="cuda")[shift:]
        torch.cuda.synchronize()
        start = time.perf_counter()
        silu_and_mul.warmup(out, x, 2, h, BLOCK=1024, grid=(2, 1))
        seconds.append(time.perf_counter() - start)
    total = sum(seconds)
    # The first specialization also pays Triton's one-time set-up (its
    # backend, the driver's first module load); the others are what each
    # new specialization costs.
    after = seconds[1:]
    print(f"triton {triton.__version__}: {len(specs)} specializations compiled cold "
          f"in {total:.2f} s ({total / len(specs) * 1000:.0f} ms each; the first "
          f"{seconds[0] * 1000:.0f} ms, each later one {sum(after) / len(after) * 1000:.0f} ms "
          f"mean, {sorted(after)[len(after) // 2] * 1000:.0f} ms median)")


if __name__ == "__main__":
    sys.exit(main())
