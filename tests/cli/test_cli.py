#!/usr/bin/env python3
"""The `jitwarm` command end to end: outputs, JSON, exit codes, warmup into a
persistent cache, the cache commands, and warming a fleet through a shared
Redis (group "fleet", skipped without redis-server).

Usage: test_cli.py GROUP JITWARM FAKE_PLUGIN_DIR REFERENCE_PLUGIN_DIR MANIFEST [GPU_PLUGIN_DIR...]
GROUP is one of the groups below (meson runs each as its own test, so they run
in parallel). GPU_PLUGIN_DIRs are the build directories of the CUDA and HIP
plugins that were built; checks that need one are skipped without it. Prints
one line per check; exits 1 on failure."""
import json
import re
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

GROUP, JITWARM, FAKES, REFERENCE, MANIFEST = sys.argv[1:6]
# The built libjitwarm, and where an installation keeps its data relative to
# the library (meson.build's data_dir_from_libdir): an installation is laid
# out from them.
LIBRARY = os.environ.get("JITWARM_TEST_LIBRARY")
DATA_FROM_LIBDIR = os.environ.get("JITWARM_TEST_DATA_FROM_LIBDIR")
# MANIFEST is <source root>/manifests/kernel-set.toml.
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(MANIFEST)))
GPU_DIRS = [d for d in sys.argv[6:] if d]
CUDA_DIR = next((d for d in GPU_DIRS if os.path.basename(d) == "cuda"), None)
HIP_DIR = next((d for d in GPU_DIRS if os.path.basename(d) == "hip"), None)
SILU = "vllm.model_executor.layers.activation.silu_and_mul"
RMS_NORM = "vllm.model_executor.layers.layernorm.rms_norm"
VERBS = ("plugins", "kernels", "explain", "warmup", "cache", "conformance", "tune")
# One quick conformance case of the reference against itself.
ONE_CASE = ["--platform", "cpu", "--kernel", "silu_and_mul", "--case", "fp32/T=7,H=64"]
failures = []
# The per-user default cache of every command here: a directory of this run,
# never the user's own.
HOME_CACHE = tempfile.mkdtemp(prefix="jitwarm-cli-xdg-")
CACHE_VARIABLES = ("JITWARM_CACHE_DIR", "JITWARM_NO_CACHE_DIR", "JITWARM_SYSTEM_CACHE_DIR",
                   "JITWARM_CACHE_MAX_BYTES", "JITWARM_REMOTE_CACHE",
                   "JITWARM_REMOTE_CACHE_TIMEOUT_MS", "JITWARM_REMOTE_CACHE_MODE",
                   "JITWARM_SIGNING_KEY", "JITWARM_TRUSTED_KEYS")


def run(*args, env_path=REFERENCE, env=None, cwd=None):
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
                       timeout=300, cwd=cwd)
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
    cache_line = next((line for line in out.splitlines() if line.strip().startswith("cache ")),
                      "")
    check("'jitwarm help' lists every cache action, why among them",
          all(action in cache_line for action in
              ("stats", "list", "verify", "prune", "clear", "export", "import", "why")),
          cache_line)
    code, out, _ = run("help", "warmup")
    usage_line = out.splitlines()[0] if out else ""
    loading = {"--plugin-path", "--plugin", "--kernel-path", "--strict", "--no-probe",
               "--probe-timeout", "--help", "--version"}
    options = set(re.findall(r"^  (?:-\w \[ )?(--[a-z-]+)", out, re.M)) - loading
    missing = sorted(o for o in options if not re.search(rf"{o}(?![-\w])", usage_line))
    check("warmup's usage line names each of its options (--parallel, --batch, --quiet, "
          "--no-cache-dir ...)", code == 0 and len(options) > 10 and not missing,
          f"missing {missing} in: {usage_line}")
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

        # The default --jobs is the CPUs the process may use: here the one
        # CPU of the affinity mask its children inherit from this test.
        cpus = os.sched_getaffinity(0)
        if len(cpus) > 1:
            os.sched_setaffinity(0, {min(cpus)})
            try:
                code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                                     "--no-cache-dir", "--quiet")
                _, listed, _ = run("plugins")
            finally:
                os.sched_setaffinity(0, cpus)
            check("with one CPU in its affinity mask, warmup runs one job by default and "
                  "says why, as `jitwarm plugins` does",
                  code == 0 and "\njobs: 1 (affinity mask 1 of " in out
                  and "CPUs for warmup jobs and compile threads: 1 (affinity mask 1 of "
                  in listed, out + err + listed)
            code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                                 "--no-cache-dir", "--quiet", "--jobs", "3")
            check("warmup --jobs 3 runs 3 jobs and says so", code == 0 and
                  "\njobs: 3 (--jobs)\n" in out, out + err)
        else:
            skip("the default --jobs from the affinity mask", "this machine has one CPU")

        # Exit code 0.
        code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                           "--cache-dir", cache, "--json")
        result = json.loads(out)
        check("warmup compiles every key of the kernel set (exit 0)", code == 0
              and result["keys"] == 169 and result["compiled"] == 169 and result["failed"] == 0,
              out[:300])
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                             "--cache-dir", cache, "--jobs", "2")
        check("a second warmup (2 worker processes) finds everything cached",
              code == 0 and "0 compiled, 169 already cached, 0 failed" in out, out)
        check("warmup's progress on a pipe is plain lines with the rate, the last one done",
              "warmup: 169/169 keys," in err and "keys/s, done" in err and "\r" not in err, err)
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

        # Kernels named in a manifest as everywhere: full or short names, and
        # a mistyped one says where and what was meant.
        short = os.path.join(cache, "short.toml")
        with open(short, "w") as f:
            f.write('version = 1\n[[kernel]]\nname = "silu_and_mul"\n'
                    '[kernel.params]\nx = "float32"\nH = [16, 17]\n')
        code, out, err = run("warmup", "--manifest", short, "--platform", "cpu", "--dry-run",
                             "--json")
        plan = (parse_json(out) or {}).get("plan", [])
        check("a manifest's [[kernel]] takes a short name, as explain does",
              code == 0 and len(plan) == 2 and {k["kernel"] for k in plan} == {SILU},
              out[:300] + err)
        with open(short, "w") as f:
            f.write('version = 1\n[[kernel]]\nname = "rms_nrom"\n')
        code, _, err = run("warmup", "--manifest", short, "--platform", "cpu", "--dry-run")
        check("a mistyped kernel in a manifest is bad input (3) naming file:line and the "
              "closest name", code == 3 and "short.toml:2: unknown kernel 'rms_nrom'" in err
              and f"did you mean '{RMS_NORM}'?" in err, err)

        # A remote cache that nothing reached is not reported as saved (4).
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            refused = f"redis://127.0.0.1:{s.getsockname()[1]}/0"
        small = os.path.join(cache, "small.toml")
        with open(small, "w") as f:
            f.write(f'version = 1\n[[kernel]]\nname = "{SILU}"\n'
                    '[kernel.params]\nx = "float32"\nH = [16, 17, 1]\n')
        for jobs in ("1", "2"):
            code, out, err = run("warmup", "--manifest", small, "--platform", "cpu",
                                 "--remote-cache", refused, "--no-cache-dir", "--jobs", jobs,
                                 "--json")
            result = parse_json(out) or {}
            check(f"warmup into a refused Redis alone (--jobs {jobs}): nothing saved, saved_to "
                  "empty, exit 4", code == 4 and result.get("saved_to") == []
                  and result.get("remote_answered") == 0 and result.get("remote_failed", 0) > 0
                  and "nothing was saved: nothing reached the remote cache" in err,
                  out[:400] + err)
        code, out, err = run("warmup", "--manifest", small, "--platform", "cpu",
                             "--remote-cache", refused, "--no-cache-dir", "--quiet")
        check("warmup into a refused Redis (text): no 'saved in', a warning, exit 4",
              code == 4 and "saved in" not in out and "warning: nothing was saved" in err,
              out + err)
        kept = os.path.join(cache, "kept")
        code, out, err = run("warmup", "--manifest", small, "--platform", "cpu",
                             "--remote-cache", refused, "--cache-dir", kept, "--json")
        result = parse_json(out) or {}
        check("warmup into a directory and a refused Redis: saved in the directory alone, "
              "the Redis named, exit 4", code == 4 and result.get("saved_to") == [kept]
              and "warning: nothing reached the remote cache" in err, out[:400] + err)

        installed_manifests(cache)

        # Exit code 4.
        not_a_dir = os.path.join(cache, "a-file")
        open(not_a_dir, "w").close()
        code, _, err = run("cache", "stats", "--cache-dir", not_a_dir)
        check("a cache directory that is a file is an I/O error (4)",
              code == 4 and "a-file" in err, err)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def installed_manifests(work):
    """The kernel-set manifest an installation ships, by name or by the path a
    clone has, from a directory that is no clone: a copy of libjitwarm laid
    out as an installation, beside its data."""
    if not LIBRARY or not DATA_FROM_LIBDIR:
        skip("installed manifests", "JITWARM_TEST_LIBRARY is not set (run through meson)")
        return
    prefix = os.path.join(work, "prefix")
    lib_dir = os.path.join(prefix, "a", "b", "c", "lib")
    os.makedirs(os.path.join(lib_dir, "jitwarm", "plugins"))
    shutil.copy(LIBRARY, os.path.join(lib_dir, "libjitwarm.so.0"))
    data = os.path.normpath(os.path.join(lib_dir, DATA_FROM_LIBDIR))
    os.makedirs(os.path.join(data, "manifests"))
    shutil.copy(MANIFEST, os.path.join(data, "manifests", "kernel-set.toml"))
    elsewhere = os.path.join(work, "elsewhere")
    os.makedirs(elsewhere)
    installed = {"LD_LIBRARY_PATH": lib_dir}
    for name in ("kernel-set", "manifests/kernel-set.toml"):
        code, out, err = run("warmup", "--manifest", name, "--platform", "cpu", "--dry-run",
                             env=installed, cwd=elsewhere)
        check(f"--manifest {name} outside a clone is the installed kernel set",
              code == 0 and "169 keys would be compiled" in out, out[-300:] + err)
    code, _, err = run("warmup", "--manifest", "kernel-sett", "--platform", "cpu",
                       "--dry-run", env=installed, cwd=elsewhere)
    check("a mistyped installed manifest is bad input (3) naming the installed ones",
          code == 3 and "cannot read manifest kernel-sett" in err
          and "did you mean 'kernel-set'?" in err and os.path.join(data, "manifests") in err,
          err)
    code, out, err = run("cache", "why", "kernel-set", "--plugin-path", REFERENCE,
                         "--platform", "cpu", "--cache-dir", elsewhere, env=installed,
                         cwd=elsewhere)
    check("cache why takes an installed manifest by name too",
          code == 1 and "169 keys: 0 would hit, 169 would miss" in out, out[-300:] + err)


def cpu_fallback(directory):
    """With a GPU plugin loaded and no GPU here, a warmup without --platform or
    --target warms the CPU reference, and says so; --platform cpu is quiet."""
    path = f"{REFERENCE}:{directory}"
    code, out, _ = run("plugins", "--json", env_path=path)
    platforms = (parse_json(out) or {}).get("platforms", [])
    if any(p["devices"] > 0 and p["name"] != "cpu" for p in platforms) or not any(
            p["can_compile"] and p["name"] != "cpu" for p in platforms):
        skip("warmup without a target on a GPU-less machine", "a GPU is here, or no compiler")
        return
    work = tempfile.mkdtemp(prefix="jitwarm-cli-")
    try:
        small = os.path.join(work, "small.toml")
        with open(small, "w") as f:
            f.write(f'version = 1\n[[kernel]]\nname = "{SILU}"\n'
                    '[kernel.params]\nx = "float32"\nH = [16, 17]\n')
        code, out, err = run("warmup", "--manifest", small, "--no-cache-dir", "--quiet",
                             env_path=path)
        check("warmup without a target on a GPU-less machine names the CPU reference and why",
              code == 0 and "2 keys for cpu:x86_64: 2 compiled" in out
              and "note: cpu:x86_64 is the CPU reference" in out and "no device here" in out
              and "--platform cpu" in out, out + err)
        code, out, err = run("warmup", "--manifest", small, "--dry-run", "--json",
                             env_path=path)
        check("warmup --dry-run --json says it too (cpu_fallback)",
              code == 0 and "no device here" in (parse_json(out) or {}).get("cpu_fallback", ""),
              out[:300] + err)
        code, out, err = run("warmup", "--manifest", small, "--no-cache-dir", "--quiet",
                             "--platform", "cpu", env_path=path)
        check("warmup --platform cpu: the CPU is meant, nothing more to say",
              code == 0 and "2 keys for cpu:x86_64" in out and "note:" not in out, out + err)
        os.mkdir(os.path.join(work, "cache"))
        code, out, err = run("cache", "why", small, "--plugin-path", path, "--cache-dir",
                             os.path.join(work, "cache"))
        check("cache why without a target says the keys are the CPU reference's",
              code == 1 and "note: cpu:x86_64 is the CPU reference" in out, out + err)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def group_targets():
    """Targets through the GPU plugins: shorthand and unsupported targets, and
    what a warmup without a target warms on a GPU-less machine."""
    if CUDA_DIR or HIP_DIR:
        cpu_fallback(CUDA_DIR or HIP_DIR)
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
        # A refused target next to a good one: the good one is warmed and
        # summed up, the refused one is one error, and the exit code says so.
        work = tempfile.mkdtemp(prefix="jitwarm-cli-")
        try:
            one_key = os.path.join(work, "one.toml")
            with open(one_key, "w") as f:
                f.write('version = 1\n[[kernel]]\n'
                        'name = "vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens"\n')
            code, out, err = run("warmup", "--manifest", one_key, "--target", good,
                                 "--target", bad, "--cache-dir", os.path.join(work, "cache"),
                                 "--jobs", "2", "--quiet", env_path=path)
            check(f"an unsupported target next to {good}: {good} is warmed, {bad} one error, "
                  "exit 4",
                  code == 4 and err.count("nothing was compiled") == 1 and bad in err
                  and "FAILED" not in err
                  and f"1 keys for {good}: 1 compiled, 0 already cached, 0 failed" in out,
                  out + err[:600])
            if name == "CUDA":
                code, out, err = run("warmup", "--manifest", one_key, "--target", good,
                                     "--cache-dir", os.path.join(work, "threads"), "--quiet",
                                     env_path=path,
                                     env={"JITWARM_CUDA_COMPILE_THREADS": "lots",
                                          "JITWARM_LOG_LEVEL": "warning"})
                warnings = [line for line in err.splitlines()
                            if "JITWARM_CUDA_COMPILE_THREADS" in line]
                check("a bad JITWARM_CUDA_COMPILE_THREADS warns once, and the warmup compiles "
                      "with the default",
                      code == 0 and len(warnings) == 1 and "is 'lots'" in warnings[0]
                      and warnings[0].endswith("using 0")
                      and f"1 keys for {good}: 1 compiled, 0 already cached, 0 failed" in out,
                      out + err[:600])
        finally:
            shutil.rmtree(work, ignore_errors=True)
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


def two_targets(*extra):
    return ["warmup", "--manifest", MANIFEST, "--target", "cpu:x86_64", "--target",
            "cpu:aarch64", "--quiet", *extra]


def group_cache():
    """The per-user default cache, several targets in one warmup, shards, and
    cache stats/list/clear/export/import with their errors."""
    work = tempfile.mkdtemp(prefix="jitwarm-cli-")
    default = os.path.join(HOME_CACHE, "jitwarm")
    try:
        code, _, err = run("cache", "stats")
        check("cache stats before anything was cached: the per-user cache does not exist (3)",
              code == 3 and f"no cache directory {default} (it does not exist)" in err
              and "per-user default" in err and not os.path.exists(default), err)
        code, _, err = run("cache", "list", "--cache-dir", os.path.join(work, "nope"))
        check("cache list of a missing directory is an error (3) and makes nothing",
              code == 3 and "does not exist" in err
              and not os.path.exists(os.path.join(work, "nope")), err)

        # Several targets in one warmup, into the per-user default.
        code, out, err = run(*two_targets("--json"))
        result = parse_json(out) or {}
        targets = {t["target"]: t for t in result.get("targets", [])}
        check("warmup of two targets: one plan, one summary per target, saved in the "
              "per-user cache", code == 0 and result.get("keys") == 338
              and set(targets) == {"cpu:x86_64", "cpu:aarch64"}
              and all(t["keys"] == 169 and t["compiled"] == 169 for t in targets.values())
              and result.get("saved_to") == [default], out[:400] + err)
        code, out, err = run(*two_targets())
        check("warmup of two targets (text): a line per target, then the total",
              code == 0 and "cpu:x86_64: 169 keys: 0 compiled, 169 already cached" in out
              and "cpu:aarch64: 169 keys: 0 compiled, 169 already cached" in out
              and "338 keys: 0 compiled, 338 already cached" in out, out + err)
        code, out, err = run("cache", "stats", "--json")
        stats = parse_json(out) or {}
        check("cache stats reads the per-user cache by default",
              code == 0 and stats.get("entries") == 338 and stats.get("cache_dir") == default
              and "per-user default" in stats.get("source", ""), out + err)
        code, out, err = run("cache", "stats", "--json",
                             env={"JITWARM_CACHE_DIR": work, "JITWARM_SYSTEM_CACHE_DIR": default})
        stats = parse_json(out) or {}
        check("cache stats follows JITWARM_CACHE_DIR and counts JITWARM_SYSTEM_CACHE_DIR",
              code == 0 and stats.get("cache_dir") == work and stats.get("entries") == 0
              and stats.get("system_entries") == 338,
              out + err)

        # list and clear, per target.
        code, out, err = run("cache", "list", "--json")
        listing = parse_json(out) or {}
        check("cache list --json: every entry and a breakdown per target",
              code == 0 and len(listing.get("list", [])) == 338
              and {t["target"]: t["entries"] for t in listing.get("targets", [])}
              == {"cpu:x86_64": 169, "cpu:aarch64": 169}
              and set(listing["list"][0]) >= {"key", "target", "bytes", "kernel"}, out[:300] + err)
        code, out, err = run("cache", "list", "--target", "cpu:aarch64")
        check("cache list --target: that target's entries and its total",
              code == 0 and "cpu:aarch64: 169 entries" in out and "cpu:x86_64" not in out
              and out.splitlines()[-1].startswith("169 entries"), out[-300:] + err)

        # Bundles.
        bundle = os.path.join(work, "aarch64.jwb")
        code, out, err = run("cache", "export", "--target", "cpu:aarch64", "-o", bundle, "--json")
        exported = parse_json(out) or {}
        check("cache export --target -o: one file with that target's entries and a manifest",
              code == 0 and exported.get("entries") == 169 and os.path.isfile(bundle)
              and exported.get("targets") == [{"target": "cpu:aarch64", "entries": 169}]
              and len(exported.get("manifest", [])) == 169, out[:300] + err)
        fresh = os.path.join(work, "fresh")
        code, out, err = run("cache", "import", bundle, "--cache-dir", fresh)
        check("cache import into a missing --cache-dir is bad input (3) and makes nothing",
              code == 3 and f"no cache directory {fresh} (it does not exist)" in err
              and not os.path.exists(fresh) and out == "", out + err)
        os.mkdir(fresh)
        code, out, err = run("cache", "import", bundle, "--cache-dir", fresh, "--json")
        imported = parse_json(out) or {}
        check("cache import: every entry written into the (empty) directory",
              code == 0 and imported.get("written") == 169 and imported.get("present") == 0,
              out[:300] + err)
        code, out, err = run("cache", "import", bundle, "--cache-dir", fresh)
        check("cache import again: everything already there",
              code == 0 and "169 written" not in out and "169 already there" in out, out + err)
        name = os.path.basename(bundle)
        code, out, err = run("cache", "stats", "--cache-dir", fresh)
        check("cache stats: a line per imported bundle, none of its entries hit yet",
              code == 0 and re.search(rf"^bundle {re.escape(name)} \(imported "
                                      r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\): 169 entries, "
                                      r"0 ever hit$", out, re.M), out + err)
        code, out, err = run("warmup", "--manifest", MANIFEST, "--target", "cpu:aarch64",
                             "--cache-dir", fresh, "--quiet")
        check("a warmup from an imported bundle compiles nothing",
              code == 0 and "0 compiled, 169 already cached" in out, out + err)
        code, out, err = run("cache", "stats", "--cache-dir", fresh, "--json")
        bundles = (parse_json(out) or {}).get("bundles", [])
        check("cache stats --json after a warmup in another process: every entry of the "
              "bundle ever hit",
              code == 0 and len(bundles) == 1 and bundles[0].get("name") == name
              and bundles[0].get("entries") == 169
              and bundles[0].get("entries_ever_hit") == 169
              and len(bundles[0].get("id", "")) == 32, out + err)
        code, out, err = run("cache", "verify", "--cache-dir", fresh)
        check("cache verify does not take the bundles' records for entries",
              code == 0 and "169 entries checked, 0 corrupt" in out
              and "corrupt " not in out, out + err)
        with open(bundle, "rb") as f:
            data = f.read()
        truncated = os.path.join(work, "truncated.jwb")
        with open(truncated, "wb") as f:
            f.write(data[:len(data) // 2])
        empty = os.path.join(work, "empty-import")
        os.mkdir(empty)
        code, out, err = run("cache", "import", truncated, "--cache-dir", empty)
        # (Where it stopped depends on zstd's blocks: tests/unit names entries.)
        check("a truncated bundle imports nothing and says where it stopped (3)",
              code == 3 and "is truncated: " in err and "is incomplete" in err
              and "nothing was imported" in err
              and not cache_files(empty) and out == "", err)
        code, _, err = run("cache", "import", os.path.join(work, "missing.jwb"))
        check("a missing bundle is bad input (3)", code == 3 and "missing.jwb" in err, err)
        code, _, err = run("cache", "export", "--target", "hip:gfx942", "-o",
                           os.path.join(work, "x.jwb"))
        check("export of a target the cache lacks says what it holds (3)",
              code == 3 and "no entry for hip:gfx942" in err and "cpu:aarch64 (169)" in err, err)
        for args, message in ((["export", "--target", "cpu:aarch64"], "--output"),
                              (["import"], "missing BUNDLE"),
                              (["stats", "file.jwb"], "unexpected argument 'file.jwb'"),
                              (["stats", "--target", "cpu:aarch64"], "--target is for")):
            code, _, err = run("cache", *args)
            check(f"cache {' '.join(args)} is a usage error (2)", code == 2 and message in err, err)

        code, out, err = run("cache", "clear", "--target", "cpu:x86_64", "--json")
        cleared = parse_json(out) or {}
        check("cache clear --target removes that target's entries only",
              code == 0 and cleared.get("removed") == 169 and cleared.get("entries") == 169
              and cleared.get("targets") == [{"target": "cpu:x86_64", "removed": 169}], out + err)
        code, out, err = run("cache", "clear")
        check("cache clear removes the rest", code == 0 and "removed 169 entries" in out
              and "0 remain" in out, out + err)

        # Shards: disjoint, together the plan.
        code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--dry-run",
                           "--json")
        plan = {k["hash"] for k in (parse_json(out) or {}).get("plan", [])}
        seen = []
        for i in range(1, 4):
            code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                                 "--shard", f"{i}/3", "--dry-run", "--json")
            seen += [k["hash"] for k in (parse_json(out) or {}).get("plan", [])]
        check("--shard 1/3, 2/3, 3/3: disjoint, and together the plan",
              len(plan) == 169 and len(seen) == 169 and set(seen) == plan, f"{len(seen)} keys")
        for value in ("0/3", "4/3", "3", "a/b", "1/0"):
            code, _, err = run("warmup", "--manifest", MANIFEST, "--shard", value)
            check(f"--shard {value} is a usage error (2)",
                  code == 2 and "takes I/N" in err, err)

        # Warmup that cannot persist says so.
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                             "--no-cache-dir", "--quiet")
        check("warmup --no-cache-dir says nothing was saved (and exits 0: it was asked)",
              code == 0 and "nothing was saved" in err and "--no-cache-dir" in err, err)
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--quiet",
                             env={"HOME": None, "XDG_CACHE_HOME": None})
        check("warmup with no home for the default cache warns that nothing was saved (4)",
              code == 4 and "warning: nothing was saved" in err, err)

        # cache why: a cache warmed for x86_64, keys for aarch64 name the target.
        why_dir = os.path.join(work, "why")
        why = ["cache", "why", "--plugin-path", REFERENCE, "--cache-dir", why_dir]
        code, _, err = run(*why, MANIFEST)
        check("cache why of a missing directory is an error (3)",
              code == 3 and "does not exist" in err, err)
        code, _, err = run("warmup", "--manifest", MANIFEST, "--target", "cpu:x86_64",
                           "--quiet", "--cache-dir", why_dir)
        code, out, err = run(*why, MANIFEST, "--target", "cpu:x86_64")
        check("cache why after the warmup: every key would hit (0)",
              code == 0 and "169 keys: 169 would hit, 0 would miss" in out, out + err)
        code, out, err = run(*why, MANIFEST, "--target", "cpu:aarch64", "--json")
        result = parse_json(out) or {}
        check("cache why for another target: every key misses, the factor is target (1)",
              code == 1 and result.get("would_miss") == 169
              and result.get("factors") == [{"name": "target", "keys": 169}], out + err)
        bad = os.path.join(work, "bad.toml")
        with open(bad, "w") as f:
            f.write("not a manifest\n")
        code, _, err = run(*why, bad)
        check("cache why of a malformed manifest is an error (3)", code == 3, err)
        code, _, err = run(*why, "no_such_key[cpu:x86_64]()", "--manifest", MANIFEST)
        check("cache why of a key text no manifest makes is an error (3)",
              code == 3 and "no key of" in err, err)
        if CUDA_DIR is None:
            skip("cache why on NVRTC fingerprints", "the CUDA plugin is not built")
        else:
            why_on_nvrtc_fingerprints(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def why_on_nvrtc_fingerprints(work):
    """cache why on the fingerprints NVRTC's compiles really write (no GPU
    needed): the example kernel scale from a kernel directory of this test's
    own, so its source can be edited, warmed for cuda:sm_90 and asked about
    on that target, another, other compile options and an edited source."""
    kernels = os.path.join(work, "scale")
    shutil.copytree(os.path.join(SOURCE_ROOT, "examples", "kernels", "scale"), kernels)
    manifest = os.path.join(work, "scale.toml")
    with open(manifest, "w") as f:
        f.write('version = 1\n[[kernel]]\nname = "example.kernels.scale"\n'
                '[kernel.params]\nn = [256, 7]\n')
    cache = os.path.join(work, "nvrtc")
    # The CUDA plugin's settings are part of every fingerprint: the warmup's
    # are the defaults whatever this shell has set.
    defaults = {"JITWARM_CUDA_COMPILE_THREADS": None, "JITWARM_CUDA_FAST_COMPILE": None}
    code, out, err = run("warmup", "--manifest", manifest, "--target", "cuda:sm_90",
                         "--kernel-path", kernels, "--cache-dir", cache, "--quiet",
                         env_path=CUDA_DIR, env=defaults)
    check("warmup of scale for cuda:sm_90 with NVRTC and no GPU",
          code == 0 and "2 keys for cuda:sm_90: 2 compiled" in out, out + err)

    def why(target, env=defaults):
        code, out, err = run("cache", "why", manifest, "--plugin-path", CUDA_DIR,
                             "--kernel-path", kernels, "--cache-dir", cache,
                             "--target", target, "--json", env=env)
        return code, parse_json(out) or {}, out + err

    def nearest_factors(result):
        """The factors of each key's nearest entry, by name."""
        return [[f["name"] for f in r["neighbours"][0]["factors"]] if r["neighbours"] else []
                for r in result.get("results", [])]

    code, result, detail = why("cuda:sm_90")
    check("cache why on the warmed CUDA target: every key would hit (0)",
          code == 0 and result.get("would_hit") == 2 and result.get("would_miss") == 0,
          detail)
    # The options spell the architecture too (--gpu-architecture=sm_90):
    # they differ only because the target does, so the target alone is named.
    code, result, detail = why("cuda:sm_80")
    check("cache why for cuda:sm_80 against sm_90 entries: the factor is target alone (1)",
          code == 1 and result.get("would_miss") == 2
          and result.get("factors") == [{"name": "target", "keys": 2}]
          and nearest_factors(result) == [["target"], ["target"]], detail)

    # Threads per compile set NVRTC's --split-compile, which NVRTC 12.8 and
    # later are given (the plugin's detail says which NVRTC it loaded).
    code, out, err = run("plugins", "--json", env_path=CUDA_DIR)
    detail = next((p["detail"] for p in (parse_json(out) or {}).get("platforms", [])
                   if p["name"] == "cuda"), "")
    version = re.search(r"nvrtc (\d+)\.(\d+)", detail)
    if version is None or tuple(map(int, version.groups())) < (12, 8):
        skip("cache why names changed compile options", f"NVRTC before 12.8 ({detail})")
    else:
        code, result, detail = why("cuda:sm_90",
                                   dict(defaults, JITWARM_CUDA_COMPILE_THREADS="2"))
        wanted = [f for r in result.get("results", []) for f in r["neighbours"][0]["factors"]]
        check("cache why with other compile options: the factor is options, with both "
              "values (1)",
              code == 1 and result.get("factors") == [{"name": "options", "keys": 2}]
              and nearest_factors(result) == [["options"], ["options"]]
              and all("--split-compile=2" in f["wanted"] and "--split-compile=0" in f["found"]
                      for f in wanted), detail)

    # An edited source: the implementation's name carries a hash of the
    # kernel's files, and the fingerprint the source's own.
    with open(os.path.join(kernels, "scale.cu"), "a") as f:
        f.write("// edited after the warmup\n")
    code, result, detail = why("cuda:sm_90")
    check("cache why after the source was edited: the factors are implementation and "
          "source (1)",
          code == 1 and result.get("factors") == [{"name": "implementation", "keys": 2},
                                                  {"name": "source", "keys": 2}]
          and nearest_factors(result) == [["implementation", "source"]] * 2, detail)


class RedisServer:
    """A redis-server of this test's own on a free loopback port, no
    persistence; stopped on exit, also on failure."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="jitwarm-cli-redis-")
        for _ in range(5):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir, "--daemonize", "no"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1) as c:
                        c.sendall(b"PING\r\n")
                        if c.recv(16).startswith(b"+PONG"):
                            return
                except OSError:
                    time.sleep(0.01)
            self.stop()
        raise RuntimeError("redis-server did not start")

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def keys(self):
        p = subprocess.run(["redis-cli", "-p", str(self.port), "--raw", "DBSIZE"],
                           capture_output=True, text=True, timeout=30)
        return int(p.stdout.strip() or -1)

    def kill(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def group_fleet():
    """Eight processes as eight machines, each with its own disk cache, warm
    one plan through --shard i/8 into one Redis: every key compiled exactly
    once; then a fresh machine starts warm from Redis alone."""
    if shutil.which("redis-server") is None:
        print("skip: redis-server is not installed (Debian package redis-server)")
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="jitwarm-cli-")
    server = RedisServer()
    try:
        code, out, _ = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--dry-run",
                           "--json")
        plan = {k["hash"] for k in (parse_json(out) or {}).get("plan", [])}
        environment = dict(os.environ, JITWARM_LOG_LEVEL="error", XDG_CACHE_HOME=HOME_CACHE)
        for variable in CACHE_VARIABLES:
            environment.pop(variable, None)
        machines = [subprocess.Popen(
            [JITWARM, "warmup", "--plugin-path", REFERENCE, "--manifest", MANIFEST,
             "--platform", "cpu", "--shard", f"{i}/8", "--remote-cache", server.url,
             "--cache-dir", os.path.join(work, f"machine{i}"), "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
            for i in range(1, 9)]
        outputs = [m.communicate(timeout=300) + (m.returncode,) for m in machines]
        compiled, codes = [], [rc for _, _, rc in outputs]
        for out, err, _ in outputs:
            result = parse_json(out) or {}
            compiled += [k["hash"] for k in result.get("results", [])
                         if k["status"] == "compiled"]
        check("8 shards into one Redis: every key of the plan compiled exactly once",
              codes == [0] * 8 and len(plan) == 169 and len(compiled) == 169
              and set(compiled) == plan, f"codes {codes}, {len(compiled)} compiled, "
              f"{len(set(compiled))} distinct; {outputs[0][1][:300]}")
        check("the shared tier holds every key", server.keys() == 169, server.keys())

        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                             "--remote-cache", server.url, "--cache-dir",
                             os.path.join(work, "fresh"), "--json")
        result = parse_json(out) or {}
        check("a fresh machine with an empty disk cache compiles nothing: Redis has it all",
              code == 0 and result.get("compiled") == 0 and result.get("cached") == 169, out[:300])
        check("a Redis that answered is among saved_to",
              result.get("saved_to") == [os.path.join(work, "fresh"), server.url]
              and result.get("remote_answered", 0) > 0 and result.get("remote_failed") == 0,
              out[:300])
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--quiet",
                             "--cache-dir", os.path.join(work, "env"),
                             env={"JITWARM_REMOTE_CACHE": server.url})
        check("JITWARM_REMOTE_CACHE is the same as --remote-cache",
              code == 0 and "0 compiled, 169 already cached" in out, out + err)

        server.kill()
        # One process (each worker process finds the server gone for itself).
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--quiet",
                             "--jobs", "1", "--remote-cache", server.url, "--cache-dir",
                             os.path.join(work, "after"), env={"JITWARM_LOG_LEVEL": "warning"})
        check("with the server gone, warmup compiles locally, warns once and says nothing "
              "reached it (exit 4)",
              code == 4 and "169 compiled" in out and err.count("is unavailable") == 1
              and "nothing reached the remote cache" in err
              and f"saved in {os.path.join(work, 'after')}\n" in out, out + err)
        code, _, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu",
                           "--remote-cache", "redis://127.0.0.1:99999/0")
        check("a bad --remote-cache URL is bad input (3) that names it",
              code == 3 and "--remote-cache 'redis://127.0.0.1:99999/0' is not a Redis URL"
              in err, err)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def group_trust():
    """Signed caches from the command line (docs/operators.md, "Trust"): keygen,
    a signed warmup, verify's signers, a signed bundle refused by another key,
    a wrong --sha256, imported and loaded under the right ones; a read-only
    node that never writes to Redis."""
    work = tempfile.mkdtemp(prefix="jitwarm-cli-")
    try:
        key = os.path.join(work, "build.key")
        code, out, err = run("cache", "keygen", "-o", key, "--json")
        pair = parse_json(out) or {}
        check("cache keygen: a 0600 secret key and a one-line public key",
              code == 0 and os.stat(key).st_mode & 0o777 == 0o600
              and open(key + ".pub").read() == pair.get("public_key", "") + "\n"
              and len(pair.get("key_id", "")) == 16, out + err)
        code, _, err = run("cache", "keygen", "-o", key)
        check("cache keygen onto an existing key is refused (3)",
              code == 3 and "never overwritten" in err, err)
        other = os.path.join(work, "other.key")
        run("cache", "keygen", "-o", other)

        build = os.path.join(work, "build")
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--quiet",
                             "--cache-dir", build, "--signing-key", key)
        code, out, err = run("cache", "verify", "--cache-dir", build, "--trusted-key", key + ".pub")
        check("cache verify: every entry signed by the build key, none refused (0)",
              code == 0 and f"169 entries signed by key {pair.get('key_id')}" in out
              and "0 untrusted" in out, out + err)
        code, out, err = run("cache", "verify", "--cache-dir", build,
                             "--trusted-key", other + ".pub", "--json")
        verified = parse_json(out) or {}
        check("cache verify under another key: every entry untrusted (1)",
              code == 1 and len(verified.get("untrusted", [])) == 169
              and "not trusted" in verified["untrusted"][0]["why"], out[:300] + err)

        bundle = os.path.join(work, "cpu.jwb")
        code, out, err = run("cache", "export", "-c", build, "-o", bundle, "--signing-key", key,
                             "--json")
        exported = parse_json(out) or {}
        check("cache export --signing-key: the bundle names its signer and digest",
              code == 0 and exported.get("signer") == pair.get("key_id")
              and len(exported.get("sha256", "")) == 64, out[:300] + err)
        node = os.path.join(work, "node")
        os.mkdir(node)  # cache commands make no directory
        code, _, err = run("cache", "import", bundle, "-c", node, "--trusted-key", other + ".pub")
        check("cache import of a bundle another key signed is refused (3), nothing written",
              code == 3 and "not trusted" in err and "nothing was imported" in err
              and not os.listdir(node), err)
        code, _, err = run("cache", "import", bundle, "-c", node, "--sha256", "0" * 64)
        check("cache import --sha256 of another digest is refused (3), nothing written",
              code == 3 and "pinned" in err and not os.listdir(node), err)
        public = open(key + ".pub").read().strip()
        code, out, err = run("cache", "import", bundle, "-c", node, "--trusted-key", public,
                             "--trusted-key", other + ".pub", "--sha256", exported.get("sha256"))
        check("cache import under the right key and digest (a key's text works too)",
              code == 0 and "169 written" in out, out + err)
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--quiet",
                             "--cache-dir", node, "--trusted-key", key + ".pub",
                             "--jobs", "2")
        check("a warmup trusting the key loads every imported entry (in worker processes)",
              code == 0 and "0 compiled, 169 already cached" in out, out + err)
        code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--quiet",
                             "--cache-dir", node, "--trusted-key", other + ".pub",
                             "--jobs", "2", env={"JITWARM_LOG_LEVEL": "warning"})
        check("a warmup trusting another key refuses every entry and compiles it",
              code == 0 and "169 compiled" in out and "not trusted" in err, out + err[:300])
        check("... its workers' unsigned compiles are not refused by the warmup itself",
              "not signed" not in err, err[:300])
        why = ["cache", "why", "--plugin-path", REFERENCE, "-c", node, MANIFEST,
               "--target", "cpu:x86_64", "--json"]
        code, out, err = run(*why, "--trusted-key", other + ".pub")
        result = parse_json(out) or {}
        check("cache why under another key: every key misses for its signature (1)",
              code == 1 and result.get("would_miss") == 169
              and result.get("factors") == [{"name": "signature", "keys": 169}], out[:300] + err)
        code, out, err = run(*why, "--trusted-key", key + ".pub")
        check("cache why under the build key: every key would hit (0)",
              code == 0 and (parse_json(out) or {}).get("would_miss") == 0, out[:300] + err)
        # conformance --trusted-key: under the build key it loads the signed entries (every
        # entry stays the build's); under another it refuses them and compiles its own
        # (unsigned: the build key then finds them untrusted).
        conformance = ["conformance", "--platform", "cpu", "--kernel", "silu_and_mul",
                       "--no-isolation", "--cache-dir", node]
        verify = ["cache", "verify", "--cache-dir", node, "--trusted-key", key + ".pub"]
        code, out, err = run(*conformance, "--trusted-key", key + ".pub")
        code_verify, verified, _ = run(*verify)
        check("conformance trusting the build key passes on the signed entries, rewriting none",
              code == 0 and code_verify == 0 and "0 untrusted" in verified,
              out[-300:] + err[:300] + verified)
        code, out, err = run(*conformance, "--trusted-key", other + ".pub")
        code_verify, verified, _ = run(*verify)
        check("conformance trusting another key refuses them, compiles its own and passes",
              code == 0 and code_verify == 1 and "0 untrusted" not in verified,
              out[-300:] + err[:300] + verified)
        for args, message in ((["export", "-o", bundle, "--sha256", "00"], "--sha256 is for"),
                              (["import", bundle, "--signing-key", key], "--signing-key is for"),
                              (["keygen"], "keygen needs --output")):
            code, _, err = run("cache", *args)
            check(f"cache {' '.join(args)} is a usage error (2)", code == 2 and message in err, err)

        if shutil.which("redis-server") is None:
            skip("a read-only node", "redis-server is not installed")
            return
        server = RedisServer()
        try:
            code, out, err = run("warmup", "--manifest", MANIFEST, "--platform", "cpu", "--quiet",
                                 "--remote-cache", server.url, "--remote-read-only",
                                 "--cache-dir", os.path.join(work, "reader"))
            stats = subprocess.run(["redis-cli", "-p", str(server.port), "--raw", "INFO",
                                    "commandstats"], capture_output=True, text=True,
                                   timeout=30).stdout
            check("warmup --remote-read-only compiles, and no SET reaches Redis",
                  code == 0 and "169 compiled" in out and server.keys() == 0
                  and "cmdstat_set:" not in stats and "cmdstat_getrange:" in stats,
                  out + err + stats)
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


GROUPS = {
    "usage": group_usage,
    "inspect": group_inspect,
    "warmup": group_warmup,
    "targets": group_targets,
    "conformance": group_conformance,
    "cache": group_cache,
    "fleet": group_fleet,
    "trust": group_trust,
}
try:
    GROUPS[GROUP]()
finally:
    shutil.rmtree(HOME_CACHE, ignore_errors=True)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
