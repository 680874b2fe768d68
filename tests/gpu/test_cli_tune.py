#!/usr/bin/env python3
"""`jitwarm tune` end to end on the model driver (tests/gpu/model_libcuda:
device memory is host memory, launches run nothing), so every candidate is a
real NVRTC compile and a real plugin launch, and no GPU is needed.

Which config wins on the model is noise, except for the kernel from source
written here: its default config cannot compile (a static_assert), so its
only runnable candidate, threads=128, wins every time. That makes the
winner's path through --show, warmup --device-kind and conformance
--cache-dir checkable without depending on timing.

Usage: test_cli_tune.py JITWARM PLUGIN_DIR... (the reference and CUDA
plugins' build directories). Prints one line per check; exits 1 on failure."""
import json
import os
import re
import subprocess
import sys
import tempfile

JITWARM = sys.argv[1]
PLUGIN_PATH = ":".join(sys.argv[2:])
MODEL = "jitwarm model GPU"  # model_libcuda's device name
PICKY = "test.tune.picky"
RMS_NORM = "vllm.model_executor.layers.layernorm.rms_norm"
failures = []

PICKY_SOURCE = r"""
#include "portability.cuh"
namespace test {
template <typename T, int Threads>
__global__ void picky(T* out, const T* x, jw::i64 n) {
  static_assert(Threads != 256, "the default config never compiles");
  const jw::i64 i = static_cast<jw::i64>(jw::block_index_x()) * Threads +
                    jw::thread_index();
  if (i < n) out[i] = x[i];
}
}  // namespace test
"""

PICKY_DESCRIPTOR = f"""
[kernel]
name = "{PICKY}"
summary = "out = x, with a block size to tune whose default fails"
launch_rule = "one thread per element"
source = "picky.cu"
function = "test::picky"

[[param]]
name = "out"
kind = "tensor"
dtypes = ["float32"]
rank = 1
flags = ["output", "contiguous"]
same_dtype_as = "x"

[[param]]
name = "x"
kind = "tensor"
dtypes = ["float32"]
rank = 1
flags = ["contiguous"]

[[param]]
name = "n"
kind = "int"

[tune]
choices = [{{ name = "threads", values = [256, 128], default = 256 }}]

[compile]
template = ["element(x)", "threads"]

[launch]
check = ["n >= 0", "shape(x, 0) >= n", "shape(out, 0) >= n"]
block = ["threads"]
grid = ["ceil_div(n, threads)"]

[[case]]
name = "small"
args = {{ out = {{ shape = [100] }}, x = {{ shape = [100] }}, n = 100 }}
"""

MANIFEST = f"""
version = 1

[[kernel]]
name = "{PICKY}"
[kernel.params]
n = [1000]

[[tune]]
kernel = "picky"
args = {{ out = {{ shape = [1000] }}, x = {{ shape = [1000] }}, n = 1000 }}

[[tune]]
kernel = "rms_norm"
args = {{ out = {{ shape = [4, 64], dtype = "float32" }}, x = {{ shape = [4, 64], dtype = "float32" }}, x_stride = 64, weight = {{ shape = [64], dtype = "float32" }}, eps = 1e-6, T = 4, H = 64 }}

[[tune]]
kernel = "expand"
args = {{ output = {{ shape = [8], dtype = "int32" }}, x = {{ shape = [1], dtype = "int32" }}, cu_num_tokens = {{ shape = [1], values = [8] }}, replace_from = 0, replace_to = 0, MAX_NUM_TOKENS = 8 }}
"""


def run(*args, kernels):
    environment = dict(os.environ, JITWARM_LOG_LEVEL="error")
    for variable in ("JITWARM_CACHE_DIR", "JITWARM_NO_CACHE_DIR", "JITWARM_REMOTE_CACHE"):
        environment.pop(variable, None)
    p = subprocess.run([JITWARM, *args, "--plugin-path", PLUGIN_PATH, "--kernel-path", kernels],
                       capture_output=True, text=True, env=environment, timeout=600)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"\n     {detail}"))
    if not condition:
        failures.append(name)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    root = tempfile.mkdtemp(prefix="jitwarm-tune-cli-")
    kernels = os.path.join(root, "kernels")
    os.mkdir(kernels)
    write(os.path.join(kernels, "picky.cu"), PICKY_SOURCE)
    write(os.path.join(kernels, "picky.toml"), PICKY_DESCRIPTOR)
    manifest = write(os.path.join(root, "tune.toml"), MANIFEST)
    cache = os.path.join(root, "cache")

    # Without a stored winner the default config runs, and it cannot compile.
    code, _, err = run("warmup", "--manifest", manifest, "--cache-dir", cache, "--target",
                       "sm_90", "--quiet", kernels=kernels)
    check("before tuning, a warmup compiles the default config (here: it fails)",
          code == 1 and "the default config never compiles" in err, err)

    code, out, err = run("tune", "--manifest", manifest, "--cache-dir", cache,
                         "--timed-launches", "2", kernels=kernels)
    check("tune exits 0 and says what it did per kind of key",
          code == 0 and f"2 keys tuned on {MODEL} (cuda device 0), 1 not tunable, 0 failed" in out,
          out + err)
    check("tune says where the results went", f"saved in {cache}" in out, out)
    lines = err.splitlines()
    first_tune_line = MANIFEST.splitlines().index("[[tune]]") + 1
    check("a progress line per key, in manifest order, naming the table's line",
          [l.split(":")[0] for l in lines if l.startswith("tune ")] ==
          ["tune 1/3", "tune 2/3", "tune 3/3"] and f"({manifest}:{first_tune_line})" in lines[0],
          err)
    check("the picky kernel's only runnable config wins, and the failed default is counted",
          "best {threads=128}" in err and "2 configs, 1 failed" in err, err)
    check("rms_norm competes with its 24 configs", "24 configs" in err, err)
    check("a kernel that is not tunable is skipped, said so", "expand" in err and
          "not tunable, skipped" in err, err)

    code, out, err = run("tune", "--show", "--manifest", manifest, "--cache-dir", cache, "--json",
                         kernels=kernels)
    shown = json.loads(out) if code == 0 else {}
    statuses = [r["status"] for r in shown.get("results", [])]
    check("tune --show --json: every key's stored result or why there is none",
          code == 0 and shown["device_kind"] == MODEL and shown["found"] == 2 and
          statuses == ["tuned", "tuned", "not tunable"], out + err)
    picky = shown["results"][0] if statuses else {}
    check("the stored picky result names the winner and the default's error",
          picky.get("best") == "{threads=128}" and
          "never compiles" in picky["timings"][0].get("error", ""), json.dumps(picky))

    code, out, err = run("tune", "--show", "--manifest", manifest, "--cache-dir", cache,
                         "--target", "sm_90", "--device-kind", "another GPU", kernels=kernels)
    check("tune --show for another kind: no result, the default runs",
          code == 0 and "on another GPU: no result (its default config runs)" in out and
          "0 of 3 keys have a result for another GPU" in out, out + err)

    # The winner is what a warmup for the model's kind compiles.
    code, out, err = run("warmup", "--manifest", manifest, "--cache-dir", cache, "--target",
                         "sm_90", "--device-kind", MODEL, "--device-kind", "another GPU",
                         "--dry-run", "--json", kernels=kernels)
    plan = [k["key"] for k in json.loads(out)["plan"]] if code == 0 else []
    check("warmup --device-kind plans the winner of each kind (the default for a kind "
          "without a result)",
          len(plan) == 2 and sum("{threads=128}" in k for k in plan) == 1, out + err)
    code, out, err = run("warmup", "--manifest", manifest, "--cache-dir", cache, "--target",
                         "sm_90", "--device-kind", MODEL, "--quiet", kernels=kernels)
    check("warmup --device-kind compiles the winner", code == 0 and "0 failed" in out, out + err)
    code, out, err = run("warmup", "--manifest", manifest, "--cache-dir", cache, "--quiet",
                         kernels=kernels)
    check("warmup on the device itself (no --target) takes its kind and compiles the winner",
          code == 0 and re.search(r"^1 keys for cuda:\S+: 0 compiled, 1 already cached, 0 failed",
                                  out, re.M), out + err)

    # Conformance from the tuned cache runs the winner; without it, the
    # default (which cannot compile).
    code, out, err = run("conformance", "--platform", "cuda", "--kernel", "picky", "--json",
                         "--cache-dir", cache, kernels=kernels)
    report = json.loads(out) if out.startswith("{") else {"results": []}
    check("conformance --cache-dir runs the stored winner",
          code == 0 and [r["key"].count("{threads=128}") for r in report["results"]
                         if r["check"] == "run"] == [1], out + err)
    code, out, err = run("conformance", "--platform", "cuda", "--kernel", "picky", "--json",
                         kernels=kernels)
    report = json.loads(out) if out.startswith("{") else {"results": []}
    check("conformance without the cache runs the default config",
          code == 1 and [r["status"] for r in report["results"] if r["check"] == "run"] ==
          ["fail"] and
          "never compiles" in json.dumps(report), out + err)

    # Arguments given on the command line, and their errors.
    code, out, err = run("tune", "picky", "--args", "{ out = { shape = [64] }, x = { shape = "
                         "[64] }, n = 64 }", "--no-cache-dir", "--json", kernels=kernels)
    given = json.loads(out) if code == 0 else {}
    check("tune KERNEL --args tunes the arguments given",
          code == 0 and given["tuned"] == 1 and given["results"][0]["origin"] == "--args:1" and
          given["results"][0]["best"] == "{threads=128}" and given["saved_to"] == [], out + err)
    code, _, err = run("tune", "picky", "--args", "shape = [64]", "--no-cache-dir",
                       kernels=kernels)
    check("--args that is not an inline table is bad input (3)",
          code == 3 and "is not an inline table" in err, err)
    code, _, err = run("tune", "--args", "{}", kernels=kernels)
    check("--args without KERNEL is a usage error (2)",
          code == 2 and "KERNEL and --args go together" in err, err)
    code, _, err = run("tune", kernels=kernels)
    check("tune with nothing to tune is a usage error (2)",
          code == 2 and "nothing to tune" in err, err)
    code, _, err = run("tune", "--manifest", manifest, "--device-kind", MODEL, kernels=kernels)
    check("--device-kind without --show is a usage error (2)",
          code == 2 and "go with --show" in err, err)
    for label, tables, message in [
        ("a table with an unknown key", '[[tune]]\nkernel = "picky"\nargs = {}\nshape = 1\n',
         "unknown key 'shape'"),
        ("a table without args", '[[tune]]\nkernel = "picky"\n', "needs a kernel"),
        ("a parameter the kernel lacks",
         '[[tune]]\nkernel = "picky"\nargs = { out = { shape = [8] }, x = { shape = [8] }, '
         'n = 8, m = 2 }\n', "'m' is not a parameter of test.tune.picky"),
        ("a tensor without a shape",
         '[[tune]]\nkernel = "picky"\nargs = { out = { dtype = "float32" }, x = { shape = [8] '
         '}, n = 8 }\n', "'out' needs a shape"),
    ]:
        bad = write(os.path.join(root, "bad.toml"), "version = 1\n" + tables)
        code, _, err = run("tune", "--manifest", bad, "--no-cache-dir", kernels=kernels)
        check(f"a manifest with {label} is bad input (3), naming its line",
              code == 3 and message in err and f"{bad}:" in err, err)
    for label, shape, message in [
        ("a shape past any memory", "[4294967296, 4294967296]", "holds more than"),
        ("more extents than a tensor has", "[1, 1, 1, 1, 1, 1, 1, 1, 1]", "9 extents"),
    ]:
        bad = write(os.path.join(root, "bad.toml"),
                    'version = 1\n[[tune]]\nkernel = "picky"\nargs = { out = { shape = '
                    + shape + ' }, x = { shape = [8] }, n = 8 }\n')
        code, _, err = run("tune", "--manifest", bad, "--no-cache-dir", kernels=kernels)
        check(f"arguments with {label} are bad input (3)", code == 3 and message in err, err)
    # A bad table anywhere stops the run before any tuning.
    good_then_bad = write(os.path.join(root, "bad.toml"), MANIFEST +
                          '[[tune]]\nkernel = "picky"\nargs = { out = {}, x = { shape = [8] }, '
                          'n = 8 }\n')
    code, _, err = run("tune", "--manifest", good_then_bad, "--no-cache-dir", kernels=kernels)
    check("a malformed last table stops the run before the first is tuned (3)",
          code == 3 and "needs a shape" in err and "tune 1/" not in err, err)
    # A table whose launch is refused fails alone; the others are tuned.
    strided = write(os.path.join(root, "strided.toml"), MANIFEST.replace(
        "x_stride = 64", "x_stride = 100"))
    code, out, err = run("tune", "--manifest", strided, "--no-cache-dir", kernels=kernels)
    check("a table whose x_stride is not x's row stride fails alone (exit 1), said why",
          code == 1 and "2 keys tuned" not in out and "1 keys tuned" in out and "1 failed" in out
          and "stride(x, 0) == x_stride" in err, out + err)
    code, _, err = run("tune", "--show", "--manifest", manifest, "--platform", "hip", "--target",
                       "sm_90", kernels=kernels)
    check("--show with a --target of another platform is a usage error (2)",
          code == 2 and "is not a hip target" in err, err)
    code, _, err = run("tune", "--show", "--manifest", manifest, "--target", "sm_80",
                       kernels=kernels)
    check("--show --target of another device without --device-kind is a usage error (2)",
          code == 2 and "give --device-kind" in err, err)
    code, out, err = run("tune", "--show", "--manifest", manifest, "--platform", "cpu",
                         kernels=kernels)
    check("--show of a table whose kernel the platform lacks fails that table (exit 1)",
          code == 1 and "has no implementation for platform cpu" in err, out + err)
    bad = write(os.path.join(root, "bad.toml"), "version = 1\ntune = 3\n")
    code, _, err = run("warmup", "--manifest", bad, "--target", "sm_90", kernels=kernels)
    check("a warmup of a manifest whose tune is not a list of tables is bad input (3)",
          code == 3 and "tune must be a list of tables" in err, err)
    code, _, err = run("tune", "--manifest", os.path.join(root, "missing.toml"), kernels=kernels)
    check("a manifest that cannot be read is bad input (3)", code == 3, err)
    code, _, err = run("tune", "--manifest", write(os.path.join(root, "none.toml"), "version = 1\n"),
                       kernels=kernels)
    check("a manifest without [[tune]] tables is bad input (3), pointing at the docs",
          code == 3 and "has no [[tune]] tables" in err, err)
    code, out, err = run("tune", "--manifest", manifest, "--platform", "cpu", "--no-cache-dir",
                         kernels=kernels)
    check("on the CPU reference nothing is tunable, and a kernel it lacks fails (exit 1)",
          code == 1 and "0 keys tuned on cpu:x86_64" in out and "2 not tunable, 1 failed" in out
          and "has no implementation for platform cpu" in err, out + err)
    code, _, err = run("tune", "--manifest", manifest, "--platform", "hip", kernels=kernels)
    check("a platform that is not loaded is an environment error (4)",
          code == 4 and "platform hip" in err, err)

    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
