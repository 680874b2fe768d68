#!/usr/bin/env python3
"""`pip install` of this checkout into a fresh virtualenv, as a user of a
torch environment would, then the package as installed there.

Usage: test_venv.py PYTHON SOURCE_ROOT BUILD_ROOT [MESON_SETUP_ARGS...]

PYTHON is the Python the package is built for (the one with NumPy, pytest
and meson-python: Debian's /usr/bin/python3 in CI); the virtualenv sees its
site-packages (--system-site-packages) only for those. Checks, in order:

- `pip install --no-build-isolation` of the checkout builds and installs;
  `python -m build --wheel --no-isolation` makes a wheel from the same build;
- `import jitwarm` resolves inside the virtualenv, and its install location
  (libjitwarm, plugins, kernels, data, program) lies inside the package;
- the bundled plugins load from there; the kernel set warms for cuda:sm_90
  compile-only (when the CUDA plugin is there); a kernel launches on the
  CPU reference and matches NumPy;
- the virtualenv's `jitwarm` command and `python -m jitwarm` answer
  `plugins` from the package;
- the installed package copied to another directory loads its own plugins
  from there (Python and the program);
- tests/python runs against the install (its plugins, not the build's).

The package's build takes MESON_SETUP_ARGS (the test's build passes its own
optimization, debug, warning and compiler options) in a directory of the
source tree beside the test's build, so with ccache (scripts/run.sh)
it compiles little again: the sources compile the same for either layout
but install_layout.cpp (core/meson.build).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


class Failure(Exception):
    pass


def run(command, *, env=None, cwd=None, timeout=1500):
    result = subprocess.run([str(c) for c in command], env=env, cwd=cwd,
                            capture_output=True, text=True, timeout=timeout,
                            check=False)
    if result.returncode != 0:
        raise Failure(f"exit {result.returncode}: {' '.join(map(str, command))}\n"
                      f"{result.stdout[-6000:]}{result.stderr[-6000:]}")
    return result.stdout


def check(what, condition, detail=""):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        raise Failure(f"{what}\n{detail}")


def clean_environment():
    """The environment of a user's shell: nothing of the build's test
    settings (plugin paths, PYTHONPATH) leaks in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("JITWARM_")
           and k not in ("PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH")}
    env["JITWARM_NO_CACHE_DIR"] = "1"
    env["JITWARM_LOG_LEVEL"] = "error"
    # The package's build differs from the test's in its directory alone
    # (scripts/run.sh says why ccache must not hash it).
    env["CCACHE_NOHASHDIR"] = "1"
    return env


INSPECT = r"""
import json, sys
import numpy as np
import jitwarm
out = {"file": jitwarm.__file__, "location": jitwarm.install_location()}
rt = jitwarm.Runtime()
report = rt.load_plugins()
out["loaded"] = [r.path for r in report.records if r.loaded]
out["platforms"] = [p.name for p in rt.platforms()]
out["searched"] = list(report.searched_directories)
if "cuda" in out["platforms"] and len(sys.argv) > 1:
    result = rt.warmup(manifest=sys.argv[1], target="cuda:sm_90", jobs=2)
    out["warmed"] = [len(result.keys), result.compiled, result.failed]
x = np.linspace(-3, 3, 2 * 8 * 16, dtype=np.float32).reshape(8, 32)
y = np.empty((8, 16), np.float32)
rt.kernel("vllm.model_executor.layers.activation.silu_and_mul")(y, x, 8, 16)
a = x[:, :16].astype(np.float64)
want = a / (1 + np.exp(-a)) * x[:, 16:]
out["silu_error"] = float(np.max(np.abs(y - want)))
print(json.dumps(out))
"""


def inspect(python, env, manifest=None):
    return json.loads(run([python, "-c", INSPECT] + ([manifest] if manifest else []),
                          env=env).strip().splitlines()[-1])


def check_inside(what, info, package_dir):
    package_dir = str(package_dir)
    location = info["location"]
    check(f"{what}: import jitwarm resolves in {package_dir}",
          info["file"] == os.path.join(package_dir, "__init__.py"), json.dumps(info))
    for key in ("library", "plugin_directory", "kernel_directory", "data_directory",
                "program"):
        check(f"{what}: the {key.replace('_', ' ')} lies inside the package",
              location[key].startswith(package_dir + "/"), json.dumps(location))
    check(f"{what}: found beside the library", location["found_beside_library"])
    check(f"{what}: the bundled plugins load from the package",
          len(info["loaded"]) >= 1 and all(p.startswith(location["plugin_directory"] + "/")
                                          for p in info["loaded"]),
          json.dumps(info))
    check(f"{what}: the CPU reference's silu_and_mul matches NumPy",
          info["silu_error"] < 1e-5, json.dumps(info))


def main():
    python, source_root, build_root = sys.argv[1:4]
    setup_args = sys.argv[4:]
    env = clean_environment()
    with tempfile.TemporaryDirectory(prefix="jitwarm-venv-") as tmp:
        tmp = Path(tmp)
        venv = tmp / "venv"
        run([python, "-m", "venv", "--system-site-packages", venv], env=env)
        vpython = venv / "bin" / "python"
        # meson-python 0.12 (Debian 12) reconfigures a named build directory
        # and fails on one that does not exist yet: set it up first, so
        # pip and `python -m build` share one build (one compile).
        wheel_build = Path(source_root) / (Path(build_root).name + "-venv-wheel")
        shutil.rmtree(wheel_build, ignore_errors=True)
        run(["meson", "setup", wheel_build, source_root, "-Dwheel=true",
             "-Dtests=false", "-Dbench=false", "-Dexamples=false", *setup_args],
            env=env, cwd=source_root)
        settings = [f"builddir={wheel_build}"] + [f"setup-args={a}" for a in setup_args]
        run([vpython, "-m", "pip", "install", "--no-build-isolation", "--no-index",
             "--no-deps", *[f"--config-settings={s}" for s in settings], source_root],
            env=env, cwd=tmp)
        check("pip install --no-build-isolation of the checkout", True)
        dist = tmp / "dist"
        run([vpython, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist,
             *[f"-C{s}" for s in settings], source_root], env=env, cwd=tmp)
        wheels = list(dist.glob("jitwarm-*.whl"))
        check("python -m build --wheel --no-isolation makes a wheel for this "
              "Python and platform",
              len(wheels) == 1 and "-cp3" in wheels[0].name and "-linux_" in wheels[0].name,
              str(wheels))

        site = Path(run([vpython, "-c", "import sysconfig; "
                         "print(sysconfig.get_paths()['platlib'])"], env=env).strip())
        package_dir = site / "jitwarm"
        manifest = package_dir / "share" / "jitwarm" / "manifests" / "kernel-set.toml"
        check("the kernel-set manifest is installed in the package", manifest.is_file())
        info = inspect(vpython, env, str(manifest))
        check_inside("the virtualenv", info, package_dir)
        if "warmed" in info:
            keys, compiled, failed = info["warmed"]
            check(f"the kernel set warms for cuda:sm_90 compile-only ({keys} keys)",
                  keys > 100 and compiled == keys and failed == 0, json.dumps(info))

        for command in ([venv / "bin" / "jitwarm"], [vpython, "-m", "jitwarm"]):
            report = json.loads(run([*command, "plugins", "--json"], env=env))
            check(f"`{' '.join(str(c) for c in command[-2:])} plugins` loads the "
                  "package's plugins",
                  report["loaded"] >= 1 and all(
                      p["path"].startswith(str(package_dir) + "/") for p in report["plugins"]),
                  json.dumps(report)[:2000])

        moved = tmp / "moved"
        shutil.copytree(package_dir, moved / "jitwarm", symlinks=True)
        moved_env = dict(env, PYTHONPATH=str(moved))
        info = inspect(python, moved_env)
        check_inside("a copy of the installed package", info, moved / "jitwarm")
        report = json.loads(run([moved / "jitwarm" / "bin" / "jitwarm", "plugins", "--json"],
                                env=env))
        check("the copied package's program searched its own plugin directory",
              str(moved / "jitwarm" / "lib" / "jitwarm" / "plugins") in report["searched"]
              and report["loaded"] >= 1, json.dumps(report)[:2000])

        suite_env = dict(env)
        suite_env.update({
            "JITWARM_PLUGIN_PATH": info["location"]["plugin_directory"].replace(
                str(moved / "jitwarm"), str(package_dir)),
            "JITWARM_TEST_REFERENCE_PLUGIN_DIR": os.path.join(build_root, "plugins",
                                                              "reference-cpu"),
            "JITWARM_TEST_FAKE_PLUGIN_DIR": os.path.join(build_root, "tests", "plugins"),
            "JITWARM_TEST_SOURCE_ROOT": source_root,
            "PYTHONDONTWRITEBYTECODE": "1",
        })
        output = run([vpython, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                      os.path.join(source_root, "tests", "python")],
                     env=suite_env, cwd=tmp)
        check("tests/python passes against the install",
              " passed" in output and " failed" not in output, output[-3000:])
        shutil.rmtree(wheel_build, ignore_errors=True)
    print("venv install: all checks passed")


if __name__ == "__main__":
    try:
        main()
    except (Failure, subprocess.TimeoutExpired) as error:
        print(error, file=sys.stderr)
        sys.exit(1)
