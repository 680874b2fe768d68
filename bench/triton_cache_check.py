#!/usr/bin/env python3
"""One cache for a server's JIT kernels, on a GPU machine: Triton kernels
and jitwarm kernels warmed on a "build box" with the GPU hidden, shipped as
one bundle, and served on a "fleet node" that compiles and benchmarks
nothing.

Phases, each its own process (this script with --phase):
  tune   GPU visible. jwt.use_jitwarm_cache on cache A; calls the autotuned
         kernel for its two shapes: Triton benchmarks its configs once and
         its choice lands in A (Triton's autotune cache, in jitwarm's tiers).
  build  CUDA_VISIBLE_DEVICES= (no GPU). Warms jitwarm's silu_and_mul
         (bench/silu_and_mul.toml) and, through jitwarm.triton for
         cuda:sm_90: silu_and_mul (18 specializations) with options
         {"num_warps": 4}, axpy (8) and the autotuned scale kernel (every
         config), into A; exports A's cuda:sm_90 entries as one bundle.
  fleet  GPU visible, an empty TRITON_CACHE_DIR and an empty cache B:
         imports the bundle, use_jitwarm_cache(B); warms silu_and_mul here
         (loads) and seals in 'error' mode; then launches every
         specialization of the three kernels with torch tensors (silu_and_mul
         without options: Triton's default num_warps=4 form), checks each
         result against torch, and fails on any Triton compile (a group
         stored), autotune benchmark (timings stored), refusal or wrong
         result.
Prints per Triton kernel the cold compile per specialization (build) beside
the warm start from the tiers (fleet).

    python3 bench/triton_cache_check.py        # runs the three phases
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK = 1024
T = 2


def kernels():
    import triton
    import triton.language as tl

    sys.path.insert(0, HERE)
    from triton_compare import silu_and_mul  # noqa: WPS433

    @triton.jit
    def axpy(out_ptr, x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
        tl.store(out_ptr + offsets, (a * x + y).to(out_ptr.dtype.element_ty), mask=mask)

    @triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4),
                              triton.Config({"BLOCK": 1024}, num_warps=8),
                              triton.Config({"BLOCK": 2048}, num_warps=8, num_stages=2)],
                     key=["n"])
    @triton.jit
    def scale(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * 2, mask=mask)

    return silu_and_mul, axpy, scale


SCALE_SHAPES = (4096, 1 << 20)


def bridges(silu_and_mul, axpy, scale):
    import jitwarm
    import jitwarm.triton as jwt
    same = {"kind": "tensor", "same_dtype_as": "x_ptr"}
    silu = (jwt.TritonKernel(silu_and_mul, name="silu_and_mul", params={"out_ptr": same}),
            jitwarm.WarmupRequest("silu_and_mul", params={
                "x_ptr": {"dtype": ["bfloat16", "float16", "float32"], "aligned": [True, False]},
                "H": [16, 17, 1], "T": [T], "BLOCK": [BLOCK]}))
    ax = (jwt.TritonKernel(axpy, name="axpy", params={"out_ptr": same, "y_ptr": same}),
          jitwarm.WarmupRequest("axpy", params={
              "x_ptr": {"dtype": ["float16", "float32"], "aligned": [True, False]},
              "a": 0.5, "n": [4096, 4097], "BLOCK": [BLOCK]}))
    sc = (jwt.TritonKernel(scale, name="scale", params={"out_ptr": same}),
          jitwarm.WarmupRequest("scale", params={
              "x_ptr": {"dtype": "float32", "aligned": True}, "n": [4096]}))
    return {"silu_and_mul": silu, "axpy": ax, "scale": sc}


def phase_tune(cache):
    import torch
    import jitwarm.triton as jwt
    _, _, scale = kernels()
    jwt.use_jitwarm_cache({"cache_dir": cache})
    for n in SCALE_SHAPES:
        x = torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        scale[lambda meta: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],)](out, x, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x * 2)
    print(json.dumps({"tune": jwt.cache_counters(),
                      "choices": {str(k): str(v) for k, v in scale.cache.items()}}))


def phase_build(cache, bundle):
    import jitwarm
    import jitwarm.triton as jwt
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""
    rt = jitwarm.Runtime(cache_dir=cache)
    rt.load_plugins()
    ours = rt.warmup(manifest=os.path.join(HERE, "silu_and_mul.toml"), target="cuda:sm_90")
    jwt.use_jitwarm_cache(rt)
    report = {"jitwarm_keys": len(ours.keys), "triton": {}}
    for name, (bridge, request) in bridges(*kernels()).items():
        options = {"num_warps": 4} if name == "silu_and_mul" else None
        result = bridge.warmup(request, target="cuda:sm_90", options=options)
        report["triton"][name] = {"keys": len(result.keys), "compiled": result.compiled,
                                  "loaded": result.loaded, "seconds": result.seconds}
    summary = jitwarm.export_cache_bundle(bundle, ["cuda:sm_90"], cache_dir=cache)
    listing = jitwarm.list_cache(["cuda:sm_90"], cache_dir=cache)
    by_impl = {}
    for entry in listing.entries:
        by_impl[entry.implementation] = by_impl.get(entry.implementation, 0) + 1
    report.update(bundle_entries=summary.entries, bundle_bytes=summary.file_bytes,
                  entries_by_implementation=by_impl, tiers=jwt.cache_counters())
    print(json.dumps(report))


def phase_fleet(cache, bundle):
    import torch
    import triton
    import jitwarm
    import jitwarm.triton as jwt
    assert not os.listdir(os.environ["TRITON_CACHE_DIR"])
    # A serving process has its CUDA context before it warms: leave the
    # context's creation out of the warm start.
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    imported = jitwarm.import_cache_bundle(bundle, cache_dir=cache)
    jwt.use_jitwarm_cache({"cache_dir": cache})
    silu_and_mul, axpy, scale = kernels()
    table = bridges(silu_and_mul, axpy, scale)
    failures = []
    report = {"imported": imported.entries, "warm_start": {}}

    bridge, request = table["silu_and_mul"]
    warm = bridge.warmup(request, options={"num_warps": 4})
    report["warm_start"]["silu_and_mul"] = {"keys": len(warm.keys), "loaded": warm.loaded,
                                            "compiled": warm.compiled, "seconds": warm.seconds}
    size_before = bridge.cache_size()
    jwt.seal("error")

    def check(what, got, expected, tolerance):
        error = (got.float() - expected.float()).abs().max().item()
        if error > tolerance * max(1.0, expected.float().abs().max().item()):
            failures.append(f"{what}: error {error:.3g}")

    def run(what, body):
        try:
            body()
        except jitwarm.JitRefusedError as e:
            failures.append(f"{what}: refused: {e.message}")

    tolerance = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for aligned in (True, False):
            for h in (16, 17, 1):
                shift = 0 if aligned else 1

                def body():
                    x = torch.randn(T * 2 * h + 8, dtype=dtype, device="cuda")[shift:shift + T * 2 * h]
                    out = torch.empty(T * h + 8, dtype=dtype, device="cuda")[shift:shift + T * h]
                    silu_and_mul[(T, triton.cdiv(h, BLOCK))](out, x, T, h, BLOCK=BLOCK)
                    rows = x.view(T, 2 * h).float()
                    a, b = rows[:, :h], rows[:, h:]
                    check(f"silu_and_mul {dtype} {aligned} {h}", out.view(T, h),
                          a / (1.0 + torch.exp(-a)) * b, tolerance[dtype])
                run(f"silu_and_mul {dtype} aligned={aligned} H={h}", body)
    if bridge.cache_size() != size_before:
        failures.append("silu_and_mul: Triton's in-memory cache grew after seal (options form)")

    start = time.perf_counter()
    for dtype in (torch.float16, torch.float32):
        for aligned in (True, False):
            for n in (4096, 4097):
                shift = 0 if aligned else 1

                def body():
                    x, y = (torch.randn(n + 8, dtype=dtype, device="cuda")[shift:shift + n]
                            for _ in range(2))
                    out = torch.empty(n + 8, dtype=dtype, device="cuda")[shift:shift + n]
                    axpy[(triton.cdiv(n, BLOCK),)](out, x, y, 0.5, n, BLOCK=BLOCK)
                    check(f"axpy {dtype} {aligned} {n}", out, 0.5 * x.float() + y.float(),
                          tolerance[dtype])
                run(f"axpy {dtype} aligned={aligned} n={n}", body)
    torch.cuda.synchronize()
    report["warm_start"]["axpy"] = {"keys": 8, "seconds": time.perf_counter() - start,
                                    "on": "the first sealed launches"}

    start = time.perf_counter()
    for n in SCALE_SHAPES:
        def body():
            x = torch.randn(n, device="cuda")
            out = torch.empty_like(x)
            scale[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, x, n)
            check(f"scale {n}", out, x * 2, 0)
        run(f"scale n={n}", body)
    torch.cuda.synchronize()
    report["warm_start"]["scale"] = {"keys": len(SCALE_SHAPES),
                                     "seconds": time.perf_counter() - start,
                                     "on": "the first sealed calls (autotuner included)"}
    tiers, counts = jwt.cache_counters(), jwt.counters()
    report.update(tiers=tiers, monitor=counts, triton_cache_dir_files=sum(
        len(files) for _, _, files in os.walk(os.environ["TRITON_CACHE_DIR"])))
    if tiers["groups_stored"]:
        failures.append(f"{tiers['groups_stored']} Triton compile(s) on the fleet node")
    if tiers["autotune_stored"]:
        failures.append(f"{tiers['autotune_stored']} autotune benchmark(s) on the fleet node")
    if counts["compiles_after_seal"] or counts["refusals"]:
        failures.append(f"monitor: {counts['compiles_after_seal']} compiles after seal")
    report["failures"] = failures
    print(json.dumps(report))
    return 1 if failures else 0


def phase(name, env, *args):
    command = [sys.executable, os.path.abspath(__file__), "--phase", name, *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode not in (0, 1) or not done.stdout.strip():
        print(done.stdout[-3000:], done.stderr[-6000:])
        raise SystemExit(f"phase {name} failed (exit code {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--phase", choices=["tune", "build", "fleet"])
    parser.add_argument("args", nargs="*")
    options = parser.parse_args()
    if options.phase == "tune":
        return phase_tune(*options.args)
    if options.phase == "build":
        return phase_build(*options.args)
    if options.phase == "fleet":
        return phase_fleet(*options.args)

    work = tempfile.mkdtemp(prefix="jitwarm-triton-cache-")
    cache_a, cache_b = os.path.join(work, "build-cache"), os.path.join(work, "node-cache")
    bundle = os.path.join(work, "sm90.jwb")
    env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(work, "triton-build"))
    env.pop("JITWARM_NO_CACHE_DIR", None)
    tuned, _ = phase("tune", env, cache_a)
    print("tune (GPU):", json.dumps(tuned))
    built, _ = phase("build", dict(env, CUDA_VISIBLE_DEVICES=""), cache_a, bundle)
    print("build (CUDA_VISIBLE_DEVICES=):", json.dumps(built))
    fleet_triton = os.path.join(work, "triton-node")
    os.makedirs(fleet_triton)
    served, code = phase("fleet", dict(env, TRITON_CACHE_DIR=fleet_triton), cache_b, bundle)
    print("fleet (GPU, empty TRITON_CACHE_DIR):", json.dumps(served))
    print("per Triton kernel, ms per specialization: cold compile (build, no GPU) vs warm "
          "start from the tiers (fleet)")
    for name, cold in built["triton"].items():
        warm = served["warm_start"][name]
        cold_ms = cold["seconds"] / max(1, cold["compiled"] + cold["loaded"]) * 1000
        warm_ms = warm["seconds"] / max(1, warm["keys"]) * 1000
        print(f"  {name:14s} cold {cold_ms:8.1f} ms ({cold['compiled']} compiled, "
              f"{cold['loaded']} found)   warm {warm_ms:8.1f} ms ({warm.get('on', 'bridge.warmup')})")
    for failure in served["failures"]:
        print("FAIL", failure)
    print("ok: the fleet node compiled and benchmarked nothing" if code == 0 and not
          served["failures"] else f"{len(served['failures'])} failure(s)")
    return 1 if served["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
