#!/usr/bin/env python3
"""The Triton bridge on a GPU, end to end.

Warms the 18 specializations of bench/triton_compare.py's silu_and_mul (3
dtypes x aligned/unaligned x the three classes of H) through jitwarm.triton:
jitwarm enumerates them from a warmup request, checks each storage-free input
against Triton's own specialization, and Triton's kernel.warmup compiles them
(compile only, into a cold TRITON_CACHE_DIR). Then it seals with the monitor
in 'error' mode and launches every specialization for real (aligned and
unaligned torch tensors), checking each result against torch.

Prints Triton's counters: its in-memory kernel cache before and after the
sealed launches, and the compile hook's counts (warmup compiles, compiles
after seal, refusals). Exits non-zero when a sealed launch compiled or was
refused, the cache grew, a result was wrong, or the key check failed.
Needs torch, triton (3.x) and a CUDA GPU.

    python3 bench/triton_bridge_check.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from triton_compare import silu_and_mul, use_cold_triton_cache  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402

import jitwarm  # noqa: E402
import jitwarm.triton as jwt  # noqa: E402

T = 2
BLOCK = 1024
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
TOLERANCE = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}


def sealed_launch(dtype, aligned, h):
    """One real launch of the specialization; returns the max relative error."""
    shift = 0 if aligned else 1  # one element off a 16-byte boundary
    x = torch.randn(T * 2 * h + 8, dtype=dtype, device="cuda")[shift:shift + T * 2 * h]
    out = torch.empty(T * h + 8, dtype=dtype, device="cuda")[shift:shift + T * h]
    assert (x.data_ptr() % 16 == 0) == aligned and (out.data_ptr() % 16 == 0) == aligned
    silu_and_mul[(T, triton.cdiv(h, BLOCK))](out, x, T, h, BLOCK=BLOCK)
    rows = x.view(T, 2 * h).float()
    a, b = rows[:, :h], rows[:, h:]
    expected = a / (1.0 + torch.exp(-a)) * b
    error = (out.view(T, h).float() - expected).abs().max().item()
    return error / max(1.0, expected.abs().max().item())


def main():
    use_cold_triton_cache()  # the warmup below compiles: Triton's cache starts empty
    print(f"triton {triton.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    bridge = jwt.TritonKernel(silu_and_mul, name="silu_and_mul",
                              params={"out_ptr": {"kind": "tensor", "same_dtype_as": "x_ptr"}})
    request = jitwarm.WarmupRequest("silu_and_mul", params={
        "x_ptr": {"dtype": list(DTYPES), "aligned": [True, False]},
        "H": [16, 17, 1], "T": [T], "BLOCK": [BLOCK]})
    jwt.install_hook()  # so the warmup's compiles are counted too

    start = time.perf_counter()
    result = bridge.warmup(request)  # raises if an input's specialization differs
    warm_seconds = time.perf_counter() - start
    cache_after_warmup = bridge.cache_size()
    print(f"warmup: {len(result.keys)} jitwarm keys -> {result.compiled} Triton compiles, "
          f"{result.cached} already cached, in {warm_seconds:.2f} s; "
          f"every input reproduced Triton's own specialization")

    jwt.seal("error")
    failures = []
    for name, dtype in DTYPES.items():
        for aligned in (True, False):
            for h in (16, 17, 1):
                what = f"{name} {'aligned' if aligned else 'unaligned'} H={h}"
                try:
                    error = sealed_launch(dtype, aligned, h)
                except jitwarm.JitRefusedError as e:
                    failures.append(f"{what}: refused: {e.message}")
                    continue
                if error > TOLERANCE[dtype]:
                    failures.append(f"{what}: relative error {error:.3g}")
    torch.cuda.synchronize()

    counts = jwt.counters()
    cache_after_launches = bridge.cache_size()
    print(f"Triton kernel cache (silu_and_mul, device {torch.cuda.current_device()}): "
          f"{cache_after_warmup} entries after warmup, {cache_after_launches} after 18 sealed "
          f"launches")
    print("Triton compile hook: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if counts["compiles_after_seal"] or counts["refusals"]:
        failures.append(f"{counts['compiles_after_seal']} Triton compile(s) after seal")
    if cache_after_launches != cache_after_warmup:
        failures.append("Triton's kernel cache grew during the sealed launches")
    if result.compiled + result.cached != 18:
        failures.append(f"{result.compiled + result.cached} specializations warmed, not 18")
    for failure in failures:
        print("FAIL", failure)
    print("ok: 18 sealed launches compiled nothing" if not failures else
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
