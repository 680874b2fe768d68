#!/usr/bin/env python3
"""How fast a fresh process is ready to serve Triton's kernels and jitwarm's:
from `import` to every specialization loaded and launched once, on a GPU
machine, four ways, in turns:

  (a) triton-cache   Triton's own file cache, populated (TRITON_CACHE_DIR as a
                     cold run left it, launchers and autotune choices in it);
  (b) jitwarm-disk   jitwarm's disk tier as the GPU-less build box left it
                     (jitwarm.triton.use_jitwarm_cache; empty TRITON_CACHE_DIR);
  (c) jitwarm-bundle that build's bundle imported into an empty cache
                     (the import timed apart; empty TRITON_CACHE_DIR);
  (d) cold           nothing cached: every kernel compiled, the autotuner
                     benchmarks.

The kernels: the bridge check's silu_and_mul (18 specializations) and axpy
(8), an autotuned kernel (scale), kernels of distinct signatures (add3,
rowsum, clamp) and one with several hundred specializations (fill: one per
constexpr value). Each node run launches every specialization once with
torch tensors and checks the result; (b) and (c) seal jitwarm's monitor in
'error' mode, so a compile there fails the run, and count what the node
stored into the tiers (nothing, when the build box warmed everything a first
launch needs: kernels, launchers, Triton's driver utilities, autotune
choices).

Each node run splits its time by where it goes (exclusive times: a region's
time less that of the regions inside it):

  import          import torch, triton (and jitwarm)
  lookup          a cache lookup: jitwarm's tiers (CacheManager._load_entry) or
                  Triton's FileCacheManager (get_group, get_file)
  staging         writing found files where Triton reads them (jitwarm)
  compile-call    triton.compile on a cache hit less lookup and staging:
                  Triton's key, reading the files, CompiledKernel
  launcher        building or loading a launcher / driver utility module
                  (compile_module_from_src, less its lookup and staging)
  module-load     CompiledKernel._init_handles less the launcher: the
                  module's load into the context (cuModuleLoadData)
  jit-and-launch  the rest of the first calls: Triton's JIT dispatch
                  (binding, specialization key), the launch, the autotuner
  jitwarm-keys    (b, c) jitwarm's kernel set (manifests/kernel-set.toml):
                  a sealed server's warmup from the warm cache

and per run: the first specialization's time less the median one's (what the
process pays once: Triton hashing its own sources for its cache key, its
driver's set-up) and the median specialization's time.

    python3 bench/triton_fleet_start.py [--rounds 2] [--json-file F]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BLOCK = 1024
T = 2
FILL_VALUES = 256          # the specializations of `fill`
SCALE_N = 4096             # the autotuned kernel's one shape
TARGET = "cuda:sm_90"
START = time.perf_counter()


# ---------------------------------------------------------------------------
# Where the time goes: exclusive time per region
# ---------------------------------------------------------------------------
class Regions:
    """Wraps functions so that each call's time is charged to its region,
    less the time of regions called inside it."""

    def __init__(self):
        self.totals = {}
        self.calls = {}
        self.stack = []

    def charge(self, region, seconds):
        self.totals[region] = self.totals.get(region, 0.0) + seconds

    def wrap(self, owner, name, region):
        original = getattr(owner, name, None)
        if original is None or getattr(original, "_fleet_region", None):
            return
        regions = self

        def timed(*args, **kwargs):
            regions.stack.append(0.0)
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                inner = regions.stack.pop()
                regions.charge(region, spent - inner)
                regions.calls[region] = regions.calls.get(region, 0) + 1
                if regions.stack:
                    regions.stack[-1] += spent

        timed._fleet_region = region
        if isinstance(owner, type) and isinstance(owner.__dict__.get(name), staticmethod):
            timed = staticmethod(timed)
        setattr(owner, name, timed)


def instrument(regions, jitwarm_tiers):
    import importlib
    import triton
    from triton.compiler import compiler
    from triton.runtime import build, cache

    import triton.compiler as compiler_package
    regions.wrap(compiler, "compile", "compile-call")
    # JITFunction's binder calls the package's re-export (triton.compiler.compile).
    regions.wrap(compiler_package, "compile", "compile-call")
    regions.wrap(triton, "compile", "compile-call")
    regions.wrap(compiler.CompiledKernel, "_init_handles", "module-load")
    regions.wrap(build, "compile_module_from_src", "launcher")
    for module in ("triton.backends.nvidia.driver", "triton.backends.amd.driver"):
        try:
            regions.wrap(importlib.import_module(module), "compile_module_from_src", "launcher")
        except ImportError:
            pass
    if jitwarm_tiers:
        from jitwarm import _triton_cache
        regions.wrap(_triton_cache.CacheManager, "_load_entry", "lookup")
        regions.wrap(_triton_cache.CacheManager, "_materialize", "staging")
    else:
        for name in ("get_group", "get_file", "has_file"):
            regions.wrap(cache.FileCacheManager, name, "lookup")


# ---------------------------------------------------------------------------
# The kernels
# ---------------------------------------------------------------------------
def kernels():
    import triton
    import triton.language as tl

    # The bridge check's kernels (silu_and_mul, axpy, and scale autotuned).
    sys.path.insert(0, HERE)
    from triton_cache_check import kernels as cache_check_kernels  # noqa: WPS433
    silu_and_mul, axpy, scale = cache_check_kernels()

    @triton.jit
    def add3(out_ptr, a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        total = (tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask)
                 + tl.load(c_ptr + offsets, mask=mask))
        tl.store(out_ptr + offsets, total, mask=mask)

    @triton.jit
    def rowsum(out_ptr, x_ptr, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0).to(tl.float32)
        tl.store(out_ptr + row, tl.sum(x, axis=0))

    @triton.jit
    def clamp(out_ptr, x_ptr, lo, hi, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, tl.minimum(tl.maximum(x, lo), hi), mask=mask)

    @triton.jit
    def fill(out_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, K, mask=offsets < n)

    return dict(silu_and_mul=silu_and_mul, axpy=axpy, scale=scale, add3=add3, rowsum=rowsum,
                clamp=clamp, fill=fill)


def warmup_requests(k):
    """Per kernel: the jitwarm.triton bridge and the requests that warm every
    specialization the node launches (launches() below)."""
    import jitwarm
    import jitwarm.triton as jwt
    same = {"kind": "tensor", "same_dtype_as": "x_ptr"}
    aligned_f = {"dtype": ["float16", "float32"], "aligned": True}

    def bridge(name, **params):
        return jwt.TritonKernel(k[name], name=name, params=params)

    return {
        "silu_and_mul": (bridge("silu_and_mul", out_ptr=same), jitwarm.WarmupRequest(
            "silu_and_mul", params={
                "x_ptr": {"dtype": ["bfloat16", "float16", "float32"], "aligned": [True, False]},
                "H": [16, 17, 1], "T": [T], "BLOCK": [BLOCK]})),
        "axpy": (bridge("axpy", out_ptr=same, y_ptr=same), jitwarm.WarmupRequest("axpy", params={
            "x_ptr": {"dtype": ["float16", "float32"], "aligned": [True, False]},
            "a": 0.5, "n": [4096, 4097], "BLOCK": [BLOCK]})),
        "scale": (bridge("scale", out_ptr=same), jitwarm.WarmupRequest("scale", params={
            "x_ptr": {"dtype": "float32", "aligned": True}, "n": [SCALE_N]})),
        "add3": (bridge("add3", out_ptr={"kind": "tensor", "same_dtype_as": "a_ptr"},
                        b_ptr={"kind": "tensor", "same_dtype_as": "a_ptr"},
                        c_ptr={"kind": "tensor", "same_dtype_as": "a_ptr"}),
                 jitwarm.WarmupRequest("add3", params={
                     "a_ptr": aligned_f, "n": [4096], "BLOCK": [BLOCK]})),
        "rowsum": (bridge("rowsum", out_ptr={"kind": "tensor", "dtypes": ["float32"]}),
                   jitwarm.WarmupRequest("rowsum", params={
                       "x_ptr": aligned_f, "stride": [4096], "n": [4096], "BLOCK": [4096]})),
        "clamp": (bridge("clamp", out_ptr=same), jitwarm.WarmupRequest("clamp", params={
            "x_ptr": {"dtype": "float32", "aligned": True}, "lo": -1.0, "hi": 1.0,
            "n": [4096], "BLOCK": [BLOCK]})),
        "fill": (bridge("fill", out_ptr={"kind": "tensor", "dtypes": ["float32"]}),
                 jitwarm.WarmupRequest("fill", params={
                     "out_ptr": {"dtype": "float32", "aligned": True}, "n": [4096],
                     "K": list(range(FILL_VALUES)), "BLOCK": [BLOCK]})),
    }


def launches(k):
    """Every specialization launched once: (kernel, label, body) with body()
    raising on a wrong result."""
    import torch
    import triton

    def close(got, expected, tolerance):
        error = (got.float() - expected.float()).abs().max().item()
        if error > tolerance * max(1.0, expected.float().abs().max().item()):
            raise AssertionError(f"error {error:.3g}")

    tol = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}
    out = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for aligned in (True, False):
            for h in (16, 17, 1):
                def body(dtype=dtype, shift=0 if aligned else 1, h=h):
                    x = torch.randn(T * 2 * h + 8, dtype=dtype, device="cuda")[shift:shift + T * 2 * h]
                    o = torch.empty(T * h + 8, dtype=dtype, device="cuda")[shift:shift + T * h]
                    k["silu_and_mul"][(T, triton.cdiv(h, BLOCK))](o, x, T, h, BLOCK=BLOCK)
                    rows = x.view(T, 2 * h).float()
                    a, b = rows[:, :h], rows[:, h:]
                    close(o.view(T, h), a / (1.0 + torch.exp(-a)) * b, tol[dtype])
                out.append(("silu_and_mul", f"{dtype} aligned={aligned} H={h}", body))
    for dtype in (torch.float16, torch.float32):
        for aligned in (True, False):
            for n in (4096, 4097):
                def body(dtype=dtype, shift=0 if aligned else 1, n=n):
                    x, y = (torch.randn(n + 8, dtype=dtype, device="cuda")[shift:shift + n]
                            for _ in range(2))
                    o = torch.empty(n + 8, dtype=dtype, device="cuda")[shift:shift + n]
                    k["axpy"][(triton.cdiv(n, BLOCK),)](o, x, y, 0.5, n, BLOCK=BLOCK)
                    close(o, 0.5 * x.float() + y.float(), tol[dtype])
                out.append(("axpy", f"{dtype} aligned={aligned} n={n}", body))

    def scale_body():
        x = torch.randn(SCALE_N, device="cuda")
        o = torch.empty_like(x)
        k["scale"][lambda meta: (triton.cdiv(SCALE_N, meta["BLOCK"]),)](o, x, SCALE_N)
        close(o, x * 2, 0)
    out.append(("scale", f"n={SCALE_N} (autotuned)", scale_body))
    for dtype in (torch.float16, torch.float32):
        def add3_body(dtype=dtype):
            a, b, c = (torch.randn(4096, dtype=dtype, device="cuda") for _ in range(3))
            o = torch.empty_like(a)
            k["add3"][(4,)](o, a, b, c, 4096, BLOCK=BLOCK)
            close(o, a.float() + b.float() + c.float(), tol[dtype] * 2)
        out.append(("add3", str(dtype), add3_body))

        def rowsum_body(dtype=dtype):
            x = torch.randn(4, 4096, dtype=dtype, device="cuda")
            o = torch.empty(4, dtype=torch.float32, device="cuda")
            k["rowsum"][(4,)](o, x, 4096, 4096, BLOCK=4096)
            close(o, x.float().sum(dim=1), 1e-3 * 64)
        out.append(("rowsum", str(dtype), rowsum_body))

    def clamp_body():
        x = torch.randn(4096, device="cuda")
        o = torch.empty_like(x)
        k["clamp"][(4,)](o, x, -1.0, 1.0, 4096, BLOCK=BLOCK)
        close(o, x.clamp(-1.0, 1.0), 0)
    out.append(("clamp", "float32", clamp_body))
    fill_out = torch.empty(4096, device="cuda")
    for value in range(FILL_VALUES):
        def fill_body(value=value):
            k["fill"][(4,)](fill_out, 4096, K=value, BLOCK=BLOCK)
            if value in (0, FILL_VALUES - 1):
                close(fill_out, torch.full_like(fill_out, value), 0)
        out.append(("fill", f"K={value}", fill_body))
    return out


# ---------------------------------------------------------------------------
# The processes
# ---------------------------------------------------------------------------
def phase_tune(cache):
    """GPU: the autotuned kernel's choice for its shape, into jitwarm's cache."""
    import torch
    import jitwarm.triton as jwt
    jwt.use_jitwarm_cache({"cache_dir": cache})
    k = kernels()
    x = torch.randn(SCALE_N, device="cuda")
    out = torch.empty_like(x)
    k["scale"][lambda meta: ((SCALE_N + meta["BLOCK"] - 1) // meta["BLOCK"],)](out, x, SCALE_N)
    torch.cuda.synchronize()
    return {"tiers": jwt.cache_counters()}


def phase_build(cache, bundle):
    """No GPU: every Triton specialization and jitwarm's kernel set for the
    target, into jitwarm's cache; then one bundle of the target's entries."""
    import jitwarm
    import jitwarm.triton as jwt
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""
    rt = jitwarm.Runtime(cache_dir=cache)
    rt.load_plugins()
    start = time.perf_counter()
    ours = rt.warmup(manifest=os.path.join(ROOT, "manifests", "kernel-set.toml"), target=TARGET)
    report = {"jitwarm_keys": len(ours.keys), "jitwarm_seconds": time.perf_counter() - start,
              "triton": {}}
    jwt.use_jitwarm_cache(rt)
    for name, (bridge, request) in warmup_requests(kernels()).items():
        result = bridge.warmup(request, target=TARGET)
        report["triton"][name] = {"keys": len(result.keys), "compiled": result.compiled,
                                  "loaded": result.loaded, "seconds": round(result.seconds, 3)}
    summary = jitwarm.export_cache_bundle(bundle, [TARGET], cache_dir=cache)
    report.update(bundle_entries=summary.entries, bundle_bytes=summary.file_bytes,
                  tiers=jwt.cache_counters())
    return report


def phase_node(mode, cache):
    """A fresh serving process: import, then every specialization launched
    once; `mode` says where the kernels come from."""
    regions = Regions()
    # The cache directory the parent chose; nothing this process imports may
    # move it (the check below fails the run if something did).
    triton_dir = os.environ["TRITON_CACHE_DIR"]
    t0 = time.perf_counter()
    import torch
    import triton  # noqa: F401
    jitwarm_tiers = mode in ("jitwarm-disk", "jitwarm-bundle")
    if jitwarm_tiers:
        import jitwarm
        import jitwarm.triton as jwt
    regions.charge("import", time.perf_counter() - t0)
    # A serving process has its CUDA context before it loads kernels.
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    context_seconds = time.perf_counter() - t0 - regions.totals["import"]
    instrument(regions, jitwarm_tiers)
    compile_outcomes = {"cache_hit": 0, "compiled": 0}
    compilation = getattr(getattr(triton, "knobs", None), "compilation", None)
    if compilation is not None and hasattr(compilation, "listener"):
        def listener(*args, cache_hit=False, **kwargs):  # Triton's compilation listener
            compile_outcomes["cache_hit" if cache_hit else "compiled"] += 1
        compilation.listener = listener
    ready_start = time.perf_counter()
    report = {"mode": mode}
    if jitwarm_tiers:
        jwt.use_jitwarm_cache({"cache_dir": cache})
        jwt.seal("error")
        rt = jitwarm.Runtime(cache_dir=cache)
        rt.load_plugins()
        start = time.perf_counter()
        warm = rt.warmup(manifest=os.path.join(ROOT, "manifests", "kernel-set.toml"),
                         platform="cuda")
        rt.seal()
        spent = time.perf_counter() - start
        regions.charge("jitwarm-keys", spent)
        report["jitwarm_keys"] = {"keys": len(warm.keys), "compiled": warm.compiled,
                                  "seconds": spent}
    k = kernels()
    failures, per_kernel, spec_seconds = [], {}, []
    for kernel, label, body in launches(k):
        start = time.perf_counter()
        before = sum(regions.totals.values())
        try:
            body()
        except Exception as error:  # noqa: BLE001  (a refusal or a wrong result: reported)
            failures.append(f"{kernel} {label}: {type(error).__name__}: {error}"[:300])
        spent = time.perf_counter() - start
        nested = sum(regions.totals.values()) - before
        regions.charge("jit-and-launch", spent - nested)
        entry = per_kernel.setdefault(kernel, {"specializations": 0, "seconds": 0.0,
                                               "first_seconds": spent})
        entry["specializations"] += 1
        entry["seconds"] += spent
        spec_seconds.append(spent)
    torch.cuda.synchronize()
    report["ready_seconds"] = time.perf_counter() - ready_start
    report["import_seconds"] = regions.totals["import"]
    report["context_seconds"] = context_seconds
    report["total_seconds"] = report["import_seconds"] + report["ready_seconds"]
    report["regions"] = {name: round(value, 6) for name, value in regions.totals.items()}
    report["calls"] = regions.calls
    report["kernels"] = per_kernel
    report["specializations"] = sum(e["specializations"] for e in per_kernel.values())
    # What the process pays once (Triton hashing its own sources for its
    # cache key, its driver's set-up): the first specialization's time less
    # a typical one's.
    ordered = sorted(spec_seconds)
    report["median_spec_seconds"] = ordered[len(ordered) // 2]
    report["first_spec_seconds"] = spec_seconds[0]
    report["fixed_seconds"] = spec_seconds[0] - report["median_spec_seconds"]
    if jitwarm_tiers:
        tiers, monitor = jwt.cache_counters(), jwt.counters()
        report.update(tiers=tiers, monitor=monitor)
        stored = tiers["groups_stored"] + tiers["files_stored"] + tiers["autotune_stored"]
        if stored:
            failures.append(f"the node stored {stored} file(s) into the tiers while serving "
                            f"({tiers})")
        if report["jitwarm_keys"]["compiled"]:
            failures.append(f"jitwarm's kernel set: {report['jitwarm_keys']['compiled']} compiled")
    if os.environ["TRITON_CACHE_DIR"] != triton_dir:
        failures.append(f"TRITON_CACHE_DIR moved from {triton_dir} to "
                        f"{os.environ['TRITON_CACHE_DIR']} during the run")
    report["triton_cache_dir_files"] = sum(len(f) for _, _, f in os.walk(triton_dir))
    report["triton_compiles"] = dict(compile_outcomes)
    if mode == "triton-cache" and compile_outcomes["compiled"]:
        failures.append(f"Triton compiled {compile_outcomes['compiled']} kernel(s) from its "
                        "populated cache: (a) is not a warm start")
    report["failures"] = failures
    return report


def run_phase(name, env, *args):
    command = [sys.executable, os.path.abspath(__file__), "--phase", name, *args]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    wall = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(done.stdout[-3000:], done.stderr[-6000:])
        raise SystemExit(f"phase {name} {' '.join(args)} failed (exit code {done.returncode})")
    report = json.loads(lines[-1])
    report["process_wall_seconds"] = wall
    return report


def fresh(work, name):
    path = tempfile.mkdtemp(prefix=name + "-", dir=work)
    return path


SPLIT = ("import", "lookup", "staging", "compile-call", "launcher", "module-load",
         "jit-and-launch", "jitwarm-keys")


def table(rows):
    header = f"{'mode':16s} {'round':>5s} {'total ms':>9s} {'ready ms':>9s} {'ms/spec':>8s} " \
        f"{'fixed':>7s} {'median':>7s} " + \
        " ".join(f"{s:>14s}" for s in SPLIT)
    print(header)
    for row in rows:
        regions = row["regions"]
        n = row["specializations"]
        print(f"{row['mode']:16s} {row['round']:5d} {row['total_seconds'] * 1e3:9.1f} "
              f"{row['ready_seconds'] * 1e3:9.1f} {row['ready_seconds'] * 1e3 / n:8.3f} "
              f"{row['fixed_seconds'] * 1e3:7.1f} {row['median_spec_seconds'] * 1e3:7.3f} " +
              " ".join(f"{regions.get(s, 0.0) * 1e3:14.1f}" for s in SPLIT))


def profile(mode):
    """Where a node's time goes in `mode`, function by function (cProfile)."""
    import pstats
    work = tempfile.mkdtemp(prefix="jitwarm-fleet-profile-")
    base = dict(os.environ, TRITON_CACHE_AUTOTUNING="1")
    triton_warm = fresh(work, "triton-warm")
    populate = run_phase("node", dict(base, TRITON_CACHE_DIR=triton_warm), "cold", "-")
    print(f"populate (cold): ready {populate['ready_seconds'] * 1e3:.1f} ms")
    stats_file = os.path.join(work, "node.prof")

    def stamps():
        return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
                for d, _, files in os.walk(triton_warm) for f in files}
    before = stamps()
    row = run_phase("node", dict(base, TRITON_CACHE_DIR=triton_warm,
                                 JITWARM_FLEET_PROFILE=stats_file), mode, "-")
    print(f"{mode} under cProfile: ready {row['ready_seconds'] * 1e3:.1f} ms, "
          f"calls {row['calls']}, files in TRITON_CACHE_DIR {row['triton_cache_dir_files']}")
    after = stamps()
    print(f"TRITON_CACHE_DIR: {len(before)} files before, {len(after)} after, "
          f"{sum(1 for f, m in after.items() if before.get(f) != m)} new or rewritten")
    for order in ("cumulative", "tottime"):
        print(f"--- by {order}")
        pstats.Stats(stats_file).strip_dirs().sort_stats(order).print_stats(45)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if row["failures"] else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phase", choices=["tune", "build", "node"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json-file")
    parser.add_argument("--no-cold-rounds", action="store_true",
                        help="skip (d) in the rounds: the run that populates Triton's cache "
                        "(round 0, cold) stands for it")
    parser.add_argument("--profile", choices=["triton-cache"],
                        help="instead of the table: populate Triton's cache with a cold run, "
                        "then profile one node run of this mode (cProfile, top functions)")
    parser.add_argument("args", nargs="*")
    options = parser.parse_args()
    if options.phase:
        handler = {"tune": phase_tune, "build": phase_build, "node": phase_node}[options.phase]
        profile_file = os.environ.get("JITWARM_FLEET_PROFILE")
        if profile_file:  # --profile: this phase under cProfile
            import cProfile
            profiler = cProfile.Profile()
            report = profiler.runcall(handler, *options.args)
            profiler.dump_stats(profile_file)
        else:
            report = handler(*options.args)
        print(json.dumps(report))
        return 0
    if options.profile:
        return profile(options.profile)

    work = tempfile.mkdtemp(prefix="jitwarm-fleet-start-")
    base = dict(os.environ, TRITON_CACHE_AUTOTUNING="1")
    base.pop("JITWARM_NO_CACHE_DIR", None)
    base.pop("JITWARM_CACHE_DIR", None)
    build_cache, bundle = os.path.join(work, "build-cache"), os.path.join(work, "target.jwb")
    tuned = run_phase("tune", dict(base, TRITON_CACHE_DIR=fresh(work, "triton")), build_cache)
    print("tune (GPU):", json.dumps(tuned))
    built = run_phase("build", dict(base, CUDA_VISIBLE_DEVICES="",
                                    TRITON_CACHE_DIR=fresh(work, "triton")),
                      build_cache, bundle)
    print("build (CUDA_VISIBLE_DEVICES=):", json.dumps(built))
    # Triton's own cache as a cold run leaves it (launchers, autotune choice).
    triton_warm = fresh(work, "triton-warm")
    populate = run_phase("node", dict(base, TRITON_CACHE_DIR=triton_warm), "cold", "-")
    populate["round"] = 0
    rows, failures = [populate], list(populate["failures"])
    for round_number in range(1, options.rounds + 1):
        for mode in ("triton-cache", "jitwarm-disk", "jitwarm-bundle", "cold"):
            if mode == "cold" and options.no_cold_rounds:
                continue
            env = dict(base, TRITON_CACHE_DIR=fresh(work, "triton"))
            cache = "-"
            extra = {}
            if mode == "triton-cache":
                env["TRITON_CACHE_DIR"] = triton_warm
            elif mode == "jitwarm-disk":
                cache = os.path.join(fresh(work, "disk"), "cache")
                shutil.copytree(build_cache, cache)
            elif mode == "jitwarm-bundle":
                cache = os.path.join(fresh(work, "node"), "cache")
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c",
                                "import sys, jitwarm; jitwarm.import_cache_bundle(sys.argv[1], "
                                "cache_dir=sys.argv[2])", bundle, cache], check=True, env=env,
                               timeout=600)
                extra["import_process_seconds"] = time.perf_counter() - start
            row = run_phase("node", env, mode, cache)
            row.update(extra, round=round_number)
            rows.append(row)
            failures += [f"{mode} round {round_number}: {f}" for f in row["failures"]]
            print(json.dumps(row))
    print()
    print("Time from import to every specialization launched once (ms); the split is exclusive "
          "time per region (ms), summed over the run")
    table(rows)
    print()
    print("per kernel, ms per specialization (the first one in brackets):")
    measured = [r for r in rows
                if r["round"] > 0 or (options.no_cold_rounds and r["mode"] == "cold")]
    for kernel in rows[0]["kernels"]:
        cells = []
        for mode in ("triton-cache", "jitwarm-disk", "jitwarm-bundle", "cold"):
            mine = [r["kernels"][kernel] for r in measured if r["mode"] == mode]
            per = min(e["seconds"] / e["specializations"] for e in mine) * 1e3
            first = min(e["first_seconds"] for e in mine) * 1e3
            cells.append(f"{mode} {per:8.2f} [{first:8.1f}]")
        print(f"  {kernel:13s} " + "  ".join(cells))
    jw = [r for r in measured if "jitwarm_keys" in r]
    for row in jw:
        keys = row["jitwarm_keys"]
        print(f"jitwarm kernel set ({row['mode']}, round {row['round']}): {keys['keys']} keys in "
              f"{keys['seconds'] * 1e3:.1f} ms = {keys['seconds'] * 1e3 / max(1, keys['keys']):.3f} "
              f"ms/key, {keys['compiled']} compiled")
    best = {}
    for mode in ("triton-cache", "jitwarm-disk", "jitwarm-bundle", "cold"):
        best[mode] = min(r["ready_seconds"] - r["regions"].get("jitwarm-keys", 0.0)
                         for r in measured if r["mode"] == mode)
    print("best ready time without jitwarm's own keys (ms): " +
          ", ".join(f"{m} {s * 1e3:.1f}" for m, s in best.items()))
    for mode in ("jitwarm-disk", "jitwarm-bundle"):
        ratio = best[mode] / best["triton-cache"]
        print(f"  {mode} / triton-cache: {ratio:.2f}x")
    if options.json_file:
        with open(options.json_file, "w") as out:
            json.dump({"build": built, "tune": tuned, "rows": rows}, out, indent=1)
    for failure in failures:
        print("FAIL", failure)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
