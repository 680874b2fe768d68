#!/usr/bin/env python3
"""The `jitwarm` command end to end: outputs, JSON, exit codes, warmup into a
persistent cache and the cache commands.

Usage: test_cli.py GROUP JITWARM FAKE_PLUGIN_DIR REFERENCE_PLUGIN_DIR MANIFEST [GPU_PLUGIN_DIR...]
GROUP is one of the groups below (meson runs each as its own test, so they run
in parallel). GPU_PLUGIN_DIRs are the build directories of the CUDA and HIP
plugins that were built; checks that need one are skipped without it. Prints
one line per check; exits 1 on failure."""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

GROUP, JITWARM, FAKES, REFERENCE, MANIFEST = sys.argv[1:6]
GPU_DIRS = [d for d in sys.argv[6:] if d]
CUDA_DIR = next((d for d in GPU_DIRS if os.path.basename(d) == "cuda"), None)
HIP_DIR = next((d for d in GPU_DIRS if os.path.basename(d) == "hip"), None)
SILU = "vllm.model_executor.layers.activation.silu_and_mul"
RMS_NORM = "vllm.model_executor.layers.layernorm.rms_norm"
VERBS = ("plugins", "kernels", "explain", "warmup", "cache", "conformance")
# One quick conformance case of the reference against itself.
ONE_CASE = ["--platform", "cpu", "--kernel", "silu_and_mul", "--case", "fp32/T=7,H=64"]
failures = []
# The per-user default cache of every command here: a directory of this run,
# never the user's own.
HOME_CACHE = tempfile.mkdtemp(prefix="jitwarm-cli-xdg-")
CACHE_VARIABLES = ("JITWARM_CACHE_DIR", "JITWARM_NO_CACHE_DIR", "JITWARM_SYSTEM_CACHE_DIR",
                   "JITWARM_CACHE_MAX_BYTES", "JITWARM_REMOTE_CACHE",
                   "JITWARM_REMOTE_CACHE_TIMEOUT_MS")


def run(*args, env_path=REFERENCE, env=None):
    environment = dict(os.environ, JITWARM_LOG_LEVEL="error", XDG_CACHE_HOME=HOME_CACHE)
    for variable in CACHE_VARIABLES:
        environment.pop(variable, None)
    environment.update(env or {})
    for variable in [v for v, value in environment.items() if value is None]:
        del environment[variable]
    args = list(args)
    if args and args[0] in VERBS and args[0] != "cache":
        # An explicit path, so plugins installed on this machine do not count.
        args[1:1] = ["--plugin-path", env_path]
    p = subprocess.run([JITWARM, *args], capture_output=True, text=True, env=environment,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"\n     {detail}"))
    if not condition:
        failures.append(name)


def parse_json(text):
    """The JSON in `text`, or None: a check then fails instead of the script."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def cache_files(directory):
    return [f for _, _, files in os.walk(directory) for f in files]


def skip(name, why):
    print(f"skip {name} ({why})")


def group_usage():
    """Parsing: suggestions, help, version, positionals, counts, targets."""
    code, out, _ = run("--version")
    check("--version prints the version", code == 0 and out.startswith("jitwarm "), out)
    code, _, err = run("frobnicate")
    check("an unknown command is a usage error (2)",
          code == 2 and "'frobnicate' is not a jitwarm command" in err, err)
    code, _, err = run("warmp")
    check("a mistyped command suggests the closest (warmp -> warmup)",
          code == 2 and "did you mean 'warmup'?" in err, err)
    code, _, err = run("warmup", "--manifest", MANIFEST, "--platfrom", "cpu")
    check("a mistyped option suggests the closest (--platfrom -> --platform)",
          code == 2 and "unknown option '--platfrom'; did you mean '--platform'?" in err, err)
    code, _, err = run("cache", "stat")
    check("a mistyped cache action suggests the closest (stat -> stats)",
          code == 2 and "did you mean 'stats'?" in err, err)
    code, out, _ = run("help", "warmup")
    check("'jitwarm help warmup' prints warmup's help",
          code == 0 and out.startswith("usage: jitwarm warmup") and "--manifest" in out, out[:300])
    code, out, _ = run("help")
    check("'jitwarm help' prints the commands", code == 0 and "commands:" in out, out[:300])
    for command in VERBS:
        code, out, _ = run(command, "--help")
        check(f"{command} --help", code == 0 and out.startswith(f"usage: jitwarm {command}"),
              out[:200])
        code, out, err = run(command, "--version")
        check(f"{command} --version prints the version",
              code == 0 and out.startswith("jitwarm ") and "C ABI" in out, out + err)

    # Positionals are shown and reported by their names, never as options.
    code, _, err = run("explain")
    check("explain without a kernel names KERNEL, not an internal option",
          code == 2 and "missing KERNEL" in err and "--kernel" not in err, err)
    code, _, err = run("cache")
    check("cache without an action names ACTION, not an internal option",
          code == 2 and "missing ACTION" in err and "--action" not in err, err)
    code, out, _ = run("explain", "--help")
    check("explain --help shows KERNEL as an argument, not as an option",
          code == 0 and "usage: jitwarm explain KERNEL" in out and "\n  KERNEL " in out
          and re.search(r"--kernel(?![-\w])", out) is None and "positional" not in out, out)
    code, out, _ = run("cache", "--help")
    check("cache --help shows ACTION as an argument",
          code == 0 and "\n  ACTION " in out and "--action" not in out, out)

    # Nothing the user typed is silently dropped.
    stray = {
        "plugins": ["plugins", "extra-arg"],
        "kernels": ["kernels", "extra-arg"],
        "explain": ["explain", "rms_norm", "extra-arg"],
        "warmup": ["warmup", "--manifest", MANIFEST, "extra-arg"],
        "cache": ["cache", "stats", "--cache-dir", "/nonexistent", "extra-arg"],
        "conformance": ["conformance", "--list", "extra-arg"],
    }
    for command, args in stray.items():
        code, _, err = run(*args)
        check(f"{command} refuses a stray argument (2)",
              code == 2 and "unexpected argument 'extra-arg'" in err, err)
    code, _, err = run("conformance", "--list", "--", "--platform", "cpu")
    check("arguments after -- are refused, not dropped (conformance)",
          code == 2 and "unexpected arguments '--platform' 'cpu'" in err, err)
    code, _, err = run("plugins", "--", "--json")
    check("arguments after -- are refused, not dropped (plugins)",
          code == 2 and "unexpected argument '--json'" in err, err)

    for value in ("0", "-1", "1x", "99999999999"):
        code, _, err = run("warmup", "--manifest", MANIFEST, "--jobs", value)
        check(f"warmup --jobs {value} is a usage error (2)",
              code == 2 and "takes a whole number from 1 to 1024" in err, err)
        code, _, err = run("conformance", "--list", "--jobs", value)
        check(f"conformance --jobs {value} is a usage error (2)",
              code == 2 and "takes a whole number from 1 to 1024" in err, err)

    code, _, err = run("warmup", "--manifest", MANIFEST, "--target", "ampere")
    check("an unknown target shorthand is a usage error naming the forms",
          code == 2 and "unknown target 'ampere'" in err and "PLATFORM:ARCH" in err, err)
    code, _, err = run("conformance", "--list", "--target", "ampere")
    check("conformance: an unknown target shorthand is a usage error",
          code == 2 and "unknown target 'ampere'" in err, err)


def group_inspect():
    """plugins, kernels and explain: load report, JSON, short names, logging."""
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
          "plugin requires ABI version 2; this core speaks 1 to 1" in out and "7 rejected" in out,
          out)
    code, _, _ = run("plugins", "--strict", env_path=f"{REFERENCE}:{FAKES}")
    check("plugins --strict exits 1 when a plugin is rejected", code == 1)
    if GPU_DIRS:
        code, out, _ = run("plugins", env_path=":".join([REFERENCE, *GPU_DIRS]))
        repeated = [line for line in out.splitlines() if line.count("compile-only") > 1]
        check("plugins: a platform's state is said once per line (no 'compile-only (... "
              "compile-only (...))')", code == 0 and not repeated, "\n".join(repeated))
    else:
        skip("plugins: a platform's state is said once per line", "no GPU plugin built")

    code, out, _ = run("explain", SILU, env_path=f"{REFERENCE}:{FAKES}")
    check("explain shows the override and what it replaced",
          code == 0 and "'fake-vendor-silu'" in out and "replaces 'reference-cpu'" in out, out)
    code, out, err = run("explain", "rms_norm")
    check("explain takes a kernel's short name", code == 0 and RMS_NORM in out, out + err)
    code, out, err = run("explain", "rms_norm", "--json")
    check("explain --json takes a short name too",
          code == 0 and (parse_json(out) or {}).get("name") == RMS_NORM, out + err)
    code, _, err = run("explain", "vllm.nope")
    check("explain of an unknown kernel exits 3", code == 3 and "unknown kernel" in err, err)
    code, _, err = run("explain", "rms_nrom")
    check("explain of a mistyped kernel suggests the closest",
          code == 3 and f"did you mean '{RMS_NORM}'?" in err, err)

    code, _, err = run("kernels", env={"JITWARM_LOG_LEVEL": "verbose"})
    warnings = [line for line in err.splitlines() if "JITWARM_LOG_LEVEL" in line]
    check("an invalid JITWARM_LOG_LEVEL warns, once",
          code == 0 and len(warnings) == 1 and "'verbose' is not a log level" in warnings[0], err)
    code, _, err = run("kernels", env={"JITWARM_LOG_LEVEL": "info"})
    check("a valid JITWARM_LOG_LEVEL does not warn", code == 0 and "JITWARM_LOG_LEVEL" not in err,
          err)

    code, out, _ = run("kernels", "--json")
    kernels = json.loads(out)
    check("kernels --json lists the ten kernels on cpu",
          code == 0 and len(kernels) == 10 and all("cpu" in k["platforms"] for k in kernels))
    rms = next(k for k in kernels if k["name"] == RMS_NORM)
    structured = all(isinstance(p, dict) for k in kernels for p in k["params"])
    check("kernels --json: parameters are objects, in schema order", structured
          and [p["name"] for p in rms["params"]] == ["out", "x", "x_stride", "weight", "eps", "T",
                                                     "H"], rms["params"])
    if not structured:
        return
    params = {p["name"]: p for p in rms["params"]}
    check("kernels --json: a tensor has kind, dtypes, rank, flags and its dtype source",
          params["out"]["kind"] == "tensor"
          and sorted(params["out"]["dtypes"]) == ["bfloat16", "float16", "float32"]
          and params["out"]["rank"] == 2 and "output" in params["out"]["flags"]
          and params["out"]["same_dtype_as"] == "x" and params["out"]["default"] is None,
          params["out"])
    check("kernels --json: a do_not_specialize int says so in its flags",
          params["T"]["kind"] == "int" and params["T"]["flags"] == ["do_not_specialize"]
          and "dtypes" not in params["T"], params["T"])
    slot = next(k for k in kernels if k["name"].endswith(".compute_slot_mapping"))
    defaults = {p["name"]: p["default"] for p in slot["params"]}
    check("kernels --json: constexpr defaults are numbers",
          defaults["blocks_per_kv_block"] == 1 and defaults["cp_rank"] == 0
          and defaults["block_size"] is None, defaults)


def group_warmup():
    """warmup into a persistent cache, the cache commands, and every exit code."""
    cache = tempfile.mkdtemp(prefix="jitwarm-cli-")
    try:
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                             "--cache-dir", cache, "--dry-run")
        lines = out.splitlines()
        check("warmup --dry-run prints every key and compiles nothing",
              code == 0 and len(lines) == 170 and lines[-1].startswith("169 keys would be")
              and lines[0].startswith("compute_slot_mapping[cpu:") and not cache_files(cache),
              out[-300:] + err)
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                             "--cache-dir", cache, "--dry-run", "--json")
        plan = parse_json(out) or {}
        check("warmup --dry-run --json gives the plan as data",
              code == 0 and plan.get("dry_run") and plan["keys"] == 169 and len(plan["plan"]) == 169
              and set(plan["plan"][0]) == {"key", "hash", "kernel", "implementation", "target"}
              and plan["plan"][0]["implementation"] == "reference-cpu"
              and not cache_files(cache), out[:300] + err)

        # Exit code 0.
        code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                           "--cache-dir", cache, "--json")
        result = json.loads(out)
        check("warmup compiles every key of the kernel set (exit 0)", code == 0
              and result["keys"] == 169 and result["compiled"] == 169 and result["failed"] == 0,
              out[:300])
        code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                           "--cache-dir", cache, "--jobs", "2")
        check("a second warmup (2 worker processes) finds everything cached",
              code == 0 and "0 compiled, 169 already cached, 0 failed" in out, out)
        code, out, _ = run("cache", "stats", "--cache-dir", cache, "--json")
        check("cache stats counts the entries", code == 0 and json.loads(out)["entries"] == 169,
              out)
        code, out, _ = run("cache", "verify", "--cache-dir", cache)
        check("cache verify finds no corrupt entry", code == 0 and "0 corrupt" in out, out)

        # Exit code 1.
        entry = next(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cache, "v1"))
                     for f in fs)
        with open(entry, "r+b") as f:
            f.seek(20)
            f.write(b"\xff\xfe")
        code, out, _ = run("cache", "verify", "--cache-dir", cache, "--json")
        check("cache verify reports a corrupt entry and exits 1",
              code == 1 and json.loads(out)["corrupt"] == 1, out)
        code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                           "--cache-dir", cache)
        check("warmup recompiles the corrupt entry instead of failing",
              code == 0 and "1 compiled, 168 already cached, 0 failed" in out, out)
        code, out, _ = run("cache", "prune", "--cache-dir", cache, "--max-bytes", "1", "--json")
        check("cache prune evicts down to the budget",
              code == 0 and json.loads(out)["entries"] == 0, out)

        # Exit code 2.
        code, _, err = run("cache", "stats", env={"JITWARM_NO_CACHE_DIR": "1"})
        check("cache with no directory at all is a usage error (2)",
              code == 2 and "no cache directory (disabled (JITWARM_NO_CACHE_DIR))" in err, err)
        code, _, err = run("cache", "prune", "--cache-dir", cache)
        check("cache prune without a budget is a usage error (2)",
              code == 2 and "--max-bytes" in err, err)

        # Exit code 3.
        bad = os.path.join(cache, "bad.toml")
        with open(bad, "w") as f:
            f.write('version = 1\n[[kernel]]\nname = "x"\nparams = { H = { range = [1] } }\n')
        code, _, err = run("warmup", "--manifest", bad, "--platform", "cpu")
        check("a malformed manifest exits 3 naming file and line",
              code == 3 and "bad.toml:4" in err and "range must be" in err, err)
        code, _, err = run("warmup", "--manifest", os.path.join(cache, "missing.toml"))
        check("a missing manifest is bad input (3), as docs/cli.md says",
              code == 3 and "missing.toml" in err, err)
        code, _, err = run("warmup", "--manifest", MANIFEST, "--target", "cpu:x86_64",
                           "--platform", "fake")
        check("a target of another platform is refused (3)", code == 3, err)
        code, _, err = run("warmup", "--manifest", MANIFEST, "--target", "sm_90", "--dry-run")
        check("--target sm_90 is CUDA's: with the reference alone, no implementation (3)",
              code == 3 and "no implementation for platform cuda" in err, err)

        # Exit code 4.
        not_a_dir = os.path.join(cache, "a-file")
        open(not_a_dir, "w").close()
        code, _, err = run("cache", "stats", "--cache-dir", not_a_dir)
        check("a cache directory that is a file is an I/O error (4)",
              code == 4 and "a-file" in err, err)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def group_targets():
    """Targets through the GPU plugins: shorthand and unsupported targets."""
    for name, directory, good, shorthand, bad in (
            ("CUDA", CUDA_DIR, "cuda:sm_90", "sm_90", "cuda:sm_999"),
            ("HIP", HIP_DIR, "hip:gfx942", "gfx942", "hip:gfx9999")):
        if directory is None:
            skip(f"{name} targets", f"the {name} plugin is not built")
            continue
        path = f"{REFERENCE}:{directory}"
        code, out, err = run("warmup", "--manifest", MANIFEST, "--target", shorthand,
                             "--dry-run", "--json", env_path=path)
        targets = {k["target"] for k in (parse_json(out) or {}).get("plan", [])}
        check(f"--target {shorthand} means {good}", code == 0 and targets == {good}, err)
        for jobs in ("1", "2"):
            code, out, err = run("warmup", "--manifest", MANIFEST, "--target", bad,
                                 "--jobs", jobs, env_path=path)
            check(f"an unsupported target ({bad}, --jobs {jobs}) is one error, exit 4",
                  code == 4 and err.count("nothing was compiled") == 1
                  and "FAILED" not in err and out == "", err[:600])
        code, out, err = run("conformance", "--platform", name.lower(), "--kernel", "rms_norm",
                             "--target", shorthand, "--list", env_path=path)
        check(f"conformance --target {shorthand} compiles for {good}",
              code == 0 and f"{good} " in out, out[:300] + err)


def group_conformance():
    """jitwarm conformance: the --json convention, --kernel names and filters."""
    work = tempfile.mkdtemp(prefix="jitwarm-cli-")
    try:
        code, out, err = run("conformance", *ONE_CASE, "--target", "sm_90", "--json")
        report = parse_json(out) or {}
        check("conformance --json prints the JSON report alone on stdout",
              code == 0 and report.get("tool") == "jitwarm conformance"
              and report["totals"]["pass"] == 1, out[:300] + err)
        check("conformance --target sm_90 is cuda:sm_90",
              report.get("options", {}).get("targets") == ["cuda:sm_90"], report.get("options"))
        json_file = os.path.join(work, "report.json")
        junit_file = os.path.join(work, "report.xml")
        code, out, err = run("conformance", *ONE_CASE, "--json-file", json_file,
                             "--junit", junit_file)
        check("conformance --json-file and --junit write files; the table stays on stdout",
              code == 0 and "conformance: 1 passed" in out
              and os.path.exists(json_file)
              and json.load(open(json_file))["totals"]["pass"] == 1
              and "<testsuites" in open(junit_file).read(), out + err)
        code, _, err = run("conformance", *ONE_CASE, "--json", json_file)
        check("conformance --json FILE (the old form) is refused, pointing at --json-file",
              code == 2 and "--json-file" in err, err)

        code, out, err = run("conformance", "--platform", "cpu", "--kernel", "rms_norm", "--list")
        check("conformance --kernel takes a short name", code == 0 and "rms_norm" in out, err)
        code, out, err = run("conformance", "--platform", "cpu", "--kernel", RMS_NORM, "--list")
        check("conformance --kernel takes a full name", code == 0 and "rms_norm" in out, err)
        code, _, err = run("conformance", "--platform", "cpu", "--kernel", "rms_nrom", "--list")
        check("conformance --kernel with a mistyped name is bad input (3)",
              code == 3 and "unknown kernel 'rms_nrom'" in err, err)
        code, _, err = run("conformance", "--platform", "cpu", "--kernel", "rms_norm",
                           "--kernel", "nothing*", "--list")
        check("conformance: a --kernel glob that matches nothing is an error, even beside "
              "one that matches", code == 3 and "no kernel matches 'nothing*'" in err, err)
    finally:
        shutil.rmtree(work, ignore_errors=True)


GROUPS = {
    "usage": group_usage,
    "inspect": group_inspect,
    "warmup": group_warmup,
    "targets": group_targets,
    "conformance": group_conformance,
}
try:
    GROUPS[GROUP]()
finally:
    shutil.rmtree(HOME_CACHE, ignore_errors=True)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
