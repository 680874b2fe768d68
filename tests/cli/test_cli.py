#!/usr/bin/env python3
"""The `jitwarm` command end to end: outputs, JSON, exit codes, warmup into a
persistent cache and the cache commands. Usage: test_cli.py JITWARM FAKE_PLUGIN_DIR
REFERENCE_PLUGIN_DIR MANIFEST. Prints one line per check; exits 1 on failure."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

JITWARM, FAKES, REFERENCE, MANIFEST = sys.argv[1:5]
SILU = "vllm.model_executor.layers.activation.silu_and_mul"
failures = []


def run(*args, env_path=REFERENCE):
    env = dict(os.environ, JITWARM_LOG_LEVEL="error")
    env.pop("JITWARM_CACHE_DIR", None)
    args = list(args)
    if args and args[0] in ("plugins", "kernels", "explain", "warmup") and "--help" not in args:
        # An explicit path, so plugins installed on this machine do not count.
        args[1:1] = ["--plugin-path", env_path]
    p = subprocess.run([JITWARM, *args], capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"\n     {detail}"))
    if not condition:
        failures.append(name)


code, out, _ = run("--version")
check("--version prints the version", code == 0 and out.startswith("jitwarm "), out)
code, _, err = run("frobnicate")
check("an unknown command is a usage error (2)", code == 2 and "unknown command" in err, err)
for command in ("plugins", "kernels", "explain", "warmup", "cache", "conformance"):
    code, out, _ = run(command, "--help")
    check(f"{command} --help", code == 0 and "usage" in out.lower(), out[:200])
code, _, err = run("warmup", "--bogus")
check("an unknown option is a usage error (2)", code == 2, err)

# plugins: the reference loads, every fake is rejected with its reason.
code, out, _ = run("plugins", "--json", env_path=f"{REFERENCE}:{FAKES}")
report = json.loads(out)
by_file = {os.path.basename(p["path"]): p for p in report["plugins"]}
check("plugins --json exits 0", code == 0)
check("the reference plugin is loaded",
      by_file["libjitwarm-reference-cpu.so"]["status"] == "loaded")
expected = {
    "libjitwarm-fake-no-entry.so": "missing entry symbol",
    "libjitwarm-fake-abi-too-old.so": "ABI too old",
    "libjitwarm-fake-abi-too-new.so": "ABI too new",
    "libjitwarm-fake-registration-fails.so": "registration failed",
    "libjitwarm-fake-duplicate-schema.so": "registration failed",
    "libjitwarm-fake-missing-vendor.so": "missing dependency",
    "libjitwarm-fake-garbage.so": "not a shared object",
}
for file, reason in expected.items():
    check(f"plugins: {file} rejected as '{reason}'",
          by_file[file]["status"] == "rejected" and by_file[file]["reason"] == reason,
          by_file.get(file))
check("plugins: the platforms are listed",
      any(p["name"] == "cpu" and p["can_launch"] for p in report["platforms"]))
code, out, _ = run("plugins", env_path=f"{REFERENCE}:{FAKES}")
check("plugins (text) names each rejection",
      "plugin requires ABI version 2; this core speaks 1 to 1" in out and "7 rejected" in out, out)
code, _, _ = run("plugins", "--strict", env_path=f"{REFERENCE}:{FAKES}")
check("plugins --strict exits 1 when a plugin is rejected", code == 1)

# kernels and explain.
code, out, _ = run("kernels", "--json")
kernels = json.loads(out)
check("kernels --json lists the ten kernels on cpu",
      code == 0 and len(kernels) == 10 and all("cpu" in k["platforms"] for k in kernels))
code, out, _ = run("explain", SILU, env_path=f"{REFERENCE}:{FAKES}")
check("explain shows the override and what it replaced",
      code == 0 and "'fake-vendor-silu'" in out and "replaces 'reference-cpu'" in out, out)
code, _, err = run("explain", "vllm.nope")
check("explain of an unknown kernel exits 3", code == 3 and "unknown kernel" in err, err)

# warmup into a persistent cache, then the cache commands.
cache = tempfile.mkdtemp(prefix="jitwarm-cli-")
try:
    code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--cache-dir", cache,
                       "--json")
    result = json.loads(out)
    check("warmup compiles every key of the kernel set", code == 0 and result["keys"] == 169
          and result["compiled"] == 169 and result["failed"] == 0, out[:300])
    code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--cache-dir", cache,
                       "--jobs", "2")
    check("a second warmup (2 worker processes) finds everything cached",
          code == 0 and "0 compiled, 169 already cached, 0 failed" in out, out)
    code, out, _ = run("cache", "stats", "--cache-dir", cache, "--json")
    check("cache stats counts the entries", code == 0 and json.loads(out)["entries"] == 169, out)
    code, out, _ = run("cache", "verify", "--cache-dir", cache)
    check("cache verify finds no corrupt entry", code == 0 and "0 corrupt" in out, out)
    entry = next(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cache, "v1")) for f in fs)
    with open(entry, "r+b") as f:
        f.seek(20)
        f.write(b"\xff\xfe")
    code, out, _ = run("cache", "verify", "--cache-dir", cache, "--json")
    check("cache verify reports a corrupt entry and exits 1",
          code == 1 and json.loads(out)["corrupt"] == 1, out)
    code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--cache-dir", cache)
    check("warmup recompiles the corrupt entry instead of failing",
          code == 0 and "1 compiled, 168 already cached, 0 failed" in out, out)
    code, out, _ = run("cache", "prune", "--cache-dir", cache, "--max-bytes", "1", "--json")
    check("cache prune evicts down to the budget", code == 0 and json.loads(out)["entries"] == 0,
          out)
    code, _, err = run("cache", "stats")
    check("cache without a directory is a usage error", code == 2, err)

    bad = os.path.join(cache, "bad.toml")
    with open(bad, "w") as f:
        f.write('version = 1\n[[kernel]]\nname = "x"\nparams = { H = { range = [1] } }\n')
    code, _, err = run("warmup", "--manifest", bad, "--platform", "cpu")
    check("a malformed manifest exits 3 naming file and line",
          code == 3 and "bad.toml:4" in err and "range must be" in err, err)
    code, _, err = run("warmup", "--manifest", os.path.join(cache, "missing.toml"))
    check("a missing manifest exits 4 (I/O)", code == 4 and "missing.toml" in err, err)
    code, _, err = run("warmup", "--manifest", MANIFEST, "--target", "cpu:x86_64", "--platform", "fake")
    check("a target of another platform is refused (3)", code == 3, err)
finally:
    shutil.rmtree(cache, ignore_errors=True)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
