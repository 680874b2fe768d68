#!/usr/bin/env python3
"""The plugin boundary through the `jitwarm` command: conformance tests the
plugin it is given (or refuses, saying why) whatever else is on the path;
`plugins` probes a directory of crashing plugins and lists them; `explain` shows
why the winner wins. Usage: test_plugin_cli.py JITWARM REFERENCE_PLUGIN_DIR
WRONG_RMS_NORM_PLUGIN ZOO_DIR ZOO_CRASH_DIR FAKE_PLUGIN_DIR. Prints one line
per check; exits 1 on failure."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

JITWARM, REFERENCE, WRONG, ZOO, ZOO_CRASH, FAKES = sys.argv[1:7]
RMS_NORM = "vllm.model_executor.layers.layernorm.rms_norm"
SILU = "vllm.model_executor.layers.activation.silu_and_mul"
failures = []


def run(*args, plugin_path):
    env = dict(os.environ, JITWARM_LOG_LEVEL="error", JITWARM_PLUGIN_PATH=plugin_path)
    env.pop("JITWARM_CACHE_DIR", None)
    env["JITWARM_NO_CACHE_DIR"] = "1"  # no per-user cache either
    p = subprocess.run([JITWARM, *args], capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"\n     {detail}"))
    if not condition:
        failures.append(name)


work = tempfile.mkdtemp(prefix="jitwarm-plugin-cli-")
try:
    # conformance --plugin: the named plugin's implementation is what runs,
    # whether or not JITWARM_PLUGIN_PATH holds it too.
    report = os.path.join(work, "report.json")
    for name, path in (("without it on JITWARM_PLUGIN_PATH", REFERENCE),
                       ("with it on JITWARM_PLUGIN_PATH too", f"{REFERENCE}:{WRONG}")):
        if os.path.exists(report):
            os.remove(report)
        code, out, err = run("conformance", "--plugin", WRONG, "--kernel", "rms_norm",
                             "--json-file", report, plugin_path=path)
        results = json.load(open(report))["results"] if os.path.exists(report) else []
        check(f"conformance fails an rms_norm off by 1% {name} (exit 1)",
              code == 1 and results, out[-500:] + err)
        check(f"conformance tested the named plugin's rms_norm, {name}",
              results and all(r["impl"] == "fake-rms-norm-off-by-1-percent"
                              and r["platform"] == "cpu" for r in results),
              sorted({r["impl"] for r in results}))
    # The same file first on the path, another user plugin after it: the
    # other one's rms_norm is what launches reach, so the run refuses.
    code, out, err = run("conformance", "--plugin", WRONG, "--kernel", "rms_norm",
                         plugin_path=f"{WRONG}:{REFERENCE}")
    check("conformance refuses when another plugin's rms_norm wins over the named one",
          code == 4 and "cannot be tested on cpu" in err and "'reference-cpu'" in err
          and "wins over it" in err, out[-300:] + err)
    # Another copy of the named plugin on the path would be the one loaded.
    copy_dir = os.path.join(work, "copy")
    os.mkdir(copy_dir)
    shutil.copy(WRONG, copy_dir)
    code, out, err = run("conformance", "--plugin", WRONG, "--kernel", "rms_norm",
                         plugin_path=f"{REFERENCE}:{copy_dir}")
    check("conformance refuses when another copy of the named plugin is on the path",
          code == 4 and "another copy of jitwarm-rms-norm-off-by-1-percent" in err,
          out[-300:] + err)

    # plugins: every candidate is probed in a child process first (the
    # default): plugins that crash, exit or spin in negotiate or
    # register_all are reported with what happened and where, the listing
    # goes on, and the rest loads as it would in-process. (The exact texts
    # are tests/plugins/test_plugin_probe.cpp's; a sanitizer build ends a
    # crashing child its own way.)
    code, out, err = run("plugins", "--json", "--probe-timeout", "5",
                         "--plugin-path", f"{ZOO_CRASH}:{ZOO}:{REFERENCE}", plugin_path="")
    listing = json.loads(out) if code == 0 else {"plugins": []}
    by_file = {os.path.basename(p["path"]): p for p in listing["plugins"]}
    check("plugins lists every candidate and exits 0",
          code == 0 and len(by_file) == 8 + 15 + 1, err)
    for variant, where in (("entry-segfaults", "jitwarm_plugin_negotiate"),
                           ("entry-aborts", "jitwarm_plugin_negotiate"),
                           ("entry-exits", "jitwarm_plugin_negotiate"),
                           ("entry-spins", "jitwarm_plugin_negotiate"),
                           ("register-segfaults", "register_all"),
                           ("register-aborts", "register_all"),
                           ("register-exits", "register_all"),
                           ("register-spins", "register_all")):
        p = by_file.get(f"libjitwarm-zoo-{variant}.so", {})
        how = {"spins": "timed out after 5 s while loading",
               "exits": "exited with status ",
               "segfaults": "killed by signal ",
               "aborts": "killed by signal 6 (SIGABRT) while loading"}[variant.split("-")[1]]
        check(f"plugins: {variant} rejected, saying how and in {where}",
              p.get("status") == "rejected" and p.get("reason") == "crashed in probe"
              and how in p.get("detail", "") and p.get("detail", "").endswith(f" in {where}"),
              p)
    p = by_file.get("libjitwarm-zoo-register-all-throws-int.so", {})
    check("plugins: a throwing register_all is rejected with its exception",
          p.get("reason") == "registration failed"
          and "exception of type int" in p.get("detail", ""), p)
    check("plugins: the reference still loads",
          by_file.get("libjitwarm-reference-cpu.so", {}).get("status") == "loaded")
    segfaults = f"{ZOO_CRASH}/libjitwarm-zoo-entry-segfaults.so"
    code, out, err = run("plugins", "--plugin-path", f"{segfaults}:{REFERENCE}",
                         plugin_path="")
    check("plugins (text) names the crash",
          code == 0 and "crashed in probe: killed by signal " in out
          and "1 loaded, 1 rejected" in out, out + err)
    code, out, err = run("plugins", "--strict", "--plugin-path", f"{segfaults}:{REFERENCE}",
                         plugin_path="")
    check("plugins --strict exits 1", code == 1, out + err)
    # --no-probe: the documented behaviour, the command dies with the plugin.
    code, out, err = run("plugins", "--no-probe", "--plugin-path",
                         f"{ZOO_CRASH}/libjitwarm-zoo-entry-aborts.so", plugin_path="")
    check("plugins --no-probe dies with a plugin that aborts in its entry point",
          code != 0 and "1 rejected" not in out, f"exit {code}: {out}{err}")

    # explain: the winner, what it replaced, and why.
    code, out, err = run("explain", SILU, "--plugin-path",
                         f"{REFERENCE}:{FAKES}/libjitwarm-fake-override-reference.so",
                         plugin_path="")
    check("explain says which source each implementation has and why the winner wins",
          code == 0 and "'fake-vendor-silu' from" in out and "(user plugin)" in out
          and "registered earlier; among user plugins the newest wins" in out, out + err)
    code, out, err = run("explain", SILU, "--json", "--plugin-path", REFERENCE, plugin_path="")
    cpu = json.loads(out)["platforms"]["cpu"] if code == 0 else {}
    check("explain --json gives the precedence", cpu.get("precedence") == "user plugin", out + err)
finally:
    shutil.rmtree(work, ignore_errors=True)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
