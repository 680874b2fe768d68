#!/usr/bin/env python3
"""Where a vendor compiler library is found (plugins/common/vendor_library.hpp),
each step of the order on its own, with a stand-in library copied into
directories that stand in for a CUDA toolkit and for the nvidia pip packages;
then the CUDA plugin's load report for NVRTC itself.

Usage: test_vendor_library.py PROBE FAKE_LIBRARY FAKE_LIBRARY_WITHOUT_ENTRY
                              [JITWARM PLUGIN_DIR NVRTC]

PROBE is vendor_library_probe; the fake libraries come from fake_vendor/.
With the last three (the CLI, the CUDA plugin's directory and a real
libnvrtc), the plugin's report names the NVRTC that JITWARM_NVRTC_LIBRARY
points at, and refuses a JITWARM_NVRTC_LIBRARY that does not open.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = "libjwfake.so.1"
failures = []


def check(what, condition, detail=""):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        failures.append(f"{what}\n{detail}")


def base_environment():
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "JITWARM_NVRTC_LIBRARY",
                        "JITWARM_NVJITLINK_LIBRARY", "JITWARM_VENDOR_LIBRARY_PATH",
                        "JITWARM_FAKE_VENDOR_LIBRARY")}
    return env


def probe(probe_path, env_changes, preload=None, names=(NAME,)):
    env = base_environment()
    env.update(env_changes)
    command = [probe_path] + (["--preload", str(preload)] if preload else []) + list(names)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60,
                            check=False)
    if result.returncode != 0:
        return f"exit {result.returncode}: {result.stderr}"
    return result.stdout.strip()


def place(library, directory, name=NAME):
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(library, directory / name)
    return directory / name


def check_search_order(probe_path, library, without_entry, root):
    explicit = place(library, root / "explicit")
    loaded = place(library, root / "loaded")
    loader = place(library, root / "loader")
    cuda_home = place(library, root / "cuda-home" / "lib64")
    cuda_path = place(library, root / "cuda-path" / "lib")
    wheels = place(library, root / "site-packages" / "nvidia" / "cu13" / "lib")
    everywhere = {
        "JITWARM_FAKE_VENDOR_LIBRARY": str(explicit),
        "LD_LIBRARY_PATH": str(loader.parent),
        "CUDA_HOME": str(root / "cuda-home"),
        "CUDA_PATH": str(root / "cuda-path"),
        "JITWARM_VENDOR_LIBRARY_PATH": str(wheels.parent),
    }
    # Each step wins over every later one: take the earlier ones away in turn.
    steps = [
        ("the named file", {}, None, explicit, "named by JITWARM_FAKE_VENDOR_LIBRARY"),
        ("a copy already loaded", {"JITWARM_FAKE_VENDOR_LIBRARY": None}, loaded, loaded,
         "already loaded in the process"),
        ("the dynamic loader", {"JITWARM_FAKE_VENDOR_LIBRARY": None}, None, loader,
         "found by the dynamic loader"),
        ("$CUDA_HOME", {"JITWARM_FAKE_VENDOR_LIBRARY": None, "LD_LIBRARY_PATH": None}, None,
         cuda_home, "found in $CUDA_HOME"),
        ("$CUDA_PATH", {"JITWARM_FAKE_VENDOR_LIBRARY": None, "LD_LIBRARY_PATH": None,
                        "CUDA_HOME": None}, None, cuda_path, "found in $CUDA_PATH"),
        ("the nvidia packages' directories", {"JITWARM_FAKE_VENDOR_LIBRARY": None,
                                               "LD_LIBRARY_PATH": None, "CUDA_HOME": None,
                                               "CUDA_PATH": None}, None, wheels,
         "found in JITWARM_VENDOR_LIBRARY_PATH"),
    ]
    for label, removed, preload, want_path, want_how in steps:
        env = {k: v for k, v in everywhere.items() if removed.get(k, "") is not None}
        out = probe(probe_path, env, preload)
        check(f"{label}: found {want_path.relative_to(root)} ({want_how})",
              out == f"found {want_path} | {want_how} | 42", out)

    out = probe(probe_path, {})
    check("nothing anywhere: not found, naming the file and every place",
          out.startswith("not found | the fake vendor library not found (libjwfake.so.1:")
          and "$CUDA_HOME, $CUDA_PATH, /usr/local/cuda or JITWARM_VENDOR_LIBRARY_PATH" in out,
          out)

    out = probe(probe_path, dict(everywhere, JITWARM_FAKE_VENDOR_LIBRARY=str(root / "none.so")))
    check("a named file that does not open is an error, with no fallback",
          out.startswith("not found | the fake vendor library not found: "
                         f"JITWARM_FAKE_VENDOR_LIBRARY={root / 'none.so'} does not open"), out)

    lacking = place(without_entry, root / "lacking")
    out = probe(probe_path, {"LD_LIBRARY_PATH": str(lacking.parent),
                             "JITWARM_VENDOR_LIBRARY_PATH": str(wheels.parent)})
    check("a library without the entry point is passed over for the next place",
          out == f"found {wheels} | found in JITWARM_VENDOR_LIBRARY_PATH | 42", out)
    out = probe(probe_path, {"LD_LIBRARY_PATH": str(lacking.parent)})
    check("... and named with what it lacks when nothing else is found",
          out.startswith("not found | ") and "lacks jw_fake_vendor_entry" in out, out)
    out = probe(probe_path, {"JITWARM_FAKE_VENDOR_LIBRARY": str(lacking)})
    check("a named file without the entry point is an error",
          out.startswith("not found | JITWARM_FAKE_VENDOR_LIBRARY=") and
          "lacks jw_fake_vendor_entry" in out, out)

    versioned = place(library, root / "versioned", NAME + ".2.3")
    out = probe(probe_path, {}, versioned)
    check("a loaded copy with more version digits counts as loaded",
          out == f"found {versioned} | already loaded in the process | 42", out)
    out = probe(probe_path, {"JITWARM_VENDOR_LIBRARY_PATH": f"::{root / 'none'}::"
                                                            f"{wheels.parent}:"})
    check("empty and missing entries of JITWARM_VENDOR_LIBRARY_PATH are skipped",
          out == f"found {wheels} | found in JITWARM_VENDOR_LIBRARY_PATH | 42", out)


def check_cuda_plugin(jitwarm, plugin_dir, nvrtc, root):
    copy = root / "nvrtc-copy" / os.path.basename(nvrtc)
    copy.parent.mkdir()
    shutil.copy(nvrtc, copy)
    # libnvrtc loads its builtins from its own directory.
    for builtins in Path(nvrtc).parent.glob("libnvrtc-builtins.so*"):
        shutil.copy(builtins, copy.parent / builtins.name)
    env = base_environment()
    env.update({"JITWARM_PLUGIN_PATH": plugin_dir, "JITWARM_NVRTC_LIBRARY": str(copy),
                "JITWARM_LOG_LEVEL": "error"})
    result = subprocess.run([jitwarm, "plugins", "--json"], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    report = json.loads(result.stdout) if result.returncode == 0 else {}
    platforms = [p for r in report.get("plugins", []) for p in r["platforms"]
                 if p.startswith("cuda:")]
    check("the CUDA plugin's report names the NVRTC it opened and how",
          len(platforms) == 1 and
          f"({copy}, named by JITWARM_NVRTC_LIBRARY)" in platforms[0],
          result.stdout[-3000:] + result.stderr[-3000:])
    env["JITWARM_NVRTC_LIBRARY"] = str(root / "no-such-libnvrtc.so")
    result = subprocess.run([jitwarm, "plugins", "--json"], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    text = result.stdout + result.stderr
    check("a JITWARM_NVRTC_LIBRARY that does not open is said in the report",
          f"JITWARM_NVRTC_LIBRARY={root / 'no-such-libnvrtc.so'} does not open" in text,
          text[-3000:])


def main():
    probe_path, library, without_entry = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="jitwarm-vendor-") as tmp:
        root = Path(tmp)
        check_search_order(probe_path, library, without_entry, root)
        if len(sys.argv) >= 7:
            check_cuda_plugin(*sys.argv[4:7], root)
    if failures:
        print("\n\n".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
