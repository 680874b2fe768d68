#!/usr/bin/env python3
"""The wheel of this checkout, installed into a fresh virtualenv as a user of
a torch environment would, then the package as installed there.

Usage: test_venv.py PYTHON SOURCE_ROOT BUILD_ROOT [MESON_SETUP_ARGS...]

PYTHON is the Python the package is built for (the one with NumPy, pytest
and meson-python: Debian's /usr/bin/python3 in CI); the virtualenv sees its
site-packages (--system-site-packages) only for those. Checks, in order:

- `python -m build --wheel --no-isolation` makes the wheel fit to ship
  (python/wheel_backend): tagged manylinux for this machine's glibc, its
  members compressed, its binaries stripped, each ELF file needing nothing
  but glibc, libstdc++ and libgcc_s (DT_NEEDED) and neither exporting nor
  importing a symbol of the libraries linked into it (zstd, hiredis, fmt,
  Boost);
- `pip install` of the wheel works with no build tool on PATH;
- `import jitwarm` resolves inside the virtualenv, and its install location
  (libjitwarm, plugins, kernels, data, program) lies inside the package;
- the bundled plugins load from there; the kernel set warms for cuda:sm_90
  compile-only (when the CUDA plugin is there); a kernel launches on the
  CPU reference and matches NumPy;
- the virtualenv's `jitwarm` command and `python -m jitwarm` answer
  `plugins` from the package;
- the installed package copied to another directory loads its own plugins
  from there (Python and the program);
- tests/python runs against the install (its plugins, not the build's);
- a process that loaded the system's libzstd and libfmt first imports the
  package and round-trips a zstd cache bundle with it;
- `pip install --no-build-isolation` of the checkout installs the same
  files as the wheel, stripped too.

LD_LIBRARY_PATH is unset throughout.

The package's build takes MESON_SETUP_ARGS (the test's build passes its own
optimization, debug, warning and compiler options) in a directory of the
source tree beside the test's build, so with ccache (scripts/run.sh)
it compiles little again: the sources compile the same for either layout
but install_layout.cpp (core/meson.build).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
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


# A process that holds other copies of libraries the package links in, loaded
# first and global (as torch's would be): the package still imports and its
# zstd bundles round-trip. argv: a scratch directory.
FOREIGN_LIBRARIES = r"""
import ctypes, json, sys
held = [ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)._name
        for name in ("libzstd.so.1", "libfmt.so.9")]
import jitwarm
tmp = sys.argv[1]
rt = jitwarm.Runtime(cache_dir=tmp + "/warm")
rt.load_plugins()
request = jitwarm.WarmupRequest("vllm.model_executor.layers.activation.silu_and_mul",
                                params={"x": "float32", "H": [16, 17]})
warmed = rt.warmup(request, platform="cpu")
exported = jitwarm.export_cache_bundle(tmp + "/b.jwb", cache_dir=tmp + "/warm")
imported = jitwarm.import_cache_bundle(tmp + "/b.jwb", cache_dir=tmp + "/new")
maps = open("/proc/self/maps").read()
print(json.dumps({"held": held, "compiled": warmed.compiled, "exported": exported.entries,
                  "written": imported.written,
                  "zstd_mapped": "libzstd.so.1" in maps, "fmt_mapped": "libfmt.so.9" in maps}))
"""

# Symbols of the libraries linked into the package; none may be exported
# (another copy in the process would take its calls, or it theirs) or
# imported (it would bind to whatever copy the process has).
LINKED_IN_SYMBOL = re.compile(r"^(ZSTD_|ZDICT_|ZBUFF_|HUF_|FSE_|redis|sds|XXH|"
                              r"_ZN\w*3fmt|_ZN\w*5boost)")
# But for zstd's tracing hooks, weak and undefined in its archive as in
# libzstd.so: an application may define them to trace zstd's calls (none of
# torch's libraries does); undefined, zstd calls nothing.
ZSTD_TRACE_HOOK = re.compile(r"^ZSTD_trace_\w+ w\b")


def linked_in_symbols(path):
    symbols = run(["nm", "--dynamic", "--format=posix", path]).splitlines()
    return [line for line in symbols
            if LINKED_IN_SYMBOL.match(line) and not ZSTD_TRACE_HOOK.match(line)]


# What the wheel's ELF files may need at run time: glibc, libstdc++ and
# libgcc_s, and the package's own libjitwarm; the GPU vendors' libraries are
# dlopened, never linked.
NEEDED_ALLOWED = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                  "ld-linux-x86-64.so.2", "libstdc++.so.6", "libgcc_s.so.1", "libjitwarm.so"}


def check_wheel(vpython, wheel, source_root, env):
    """The wheel as python/wheel_backend made it, read with readelf and nm
    (the backend's report, from the virtualenv's Python, which has the
    backend's imports)."""
    report = json.loads(run([vpython, os.path.join(source_root, "python", "wheel_backend",
                                                   "jitwarm_wheel_backend.py"), wheel],
                            env=env))
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")
    platform = f"manylinux_{glibc[0]}_{glibc[1]}_x86_64"
    check(f"the wheel is tagged {platform} (this machine's glibc)",
          wheel.name.endswith(f"-{platform}.whl"), wheel.name)
    print(f"      wheel {wheel.name}: {report['bytes']} bytes "
          f"({report['unpacked_bytes']} unpacked, {report['members']} members)", flush=True)
    check("every member of the wheel is compressed", not report["stored_uncompressed"],
          json.dumps(report["stored_uncompressed"]))
    elf = report["elf"]
    names = sorted(elf)
    check("the wheel's ELF files: the extension, libjitwarm, the plugins, the program",
          any(re.fullmatch(r"jitwarm/_jitwarm\.cpython-.*\.so", n) for n in names)
          and "jitwarm/lib/libjitwarm.so" in names and "jitwarm/bin/jitwarm" in names
          and "jitwarm/lib/jitwarm/plugins/libjitwarm-reference-cpu.so" in names, names)
    for name, info in elf.items():
        # The test's own list, not the backend's: a library added to the
        # backend's allowed set would still fail here.
        outside = set(info["needed"]) - NEEDED_ALLOWED
        check(f"{name} needs only glibc, libstdc++ and libgcc_s: {' '.join(info['needed'])}",
              "libc.so.6" in info["needed"] and not outside and not info["not_allowed"],
              json.dumps(info))
        check(f"{name} is stripped (no debug information), needs glibc {info['glibc']}",
              not info["debug_info"] and info["glibc"] is not None, json.dumps(info))
    with tempfile.TemporaryDirectory(prefix="jitwarm-wheel-") as unpacked:
        with zipfile.ZipFile(wheel) as members:
            members.extractall(unpacked)
        for name in names:
            leaked = linked_in_symbols(os.path.join(unpacked, name))
            check(f"{name} exports and imports no symbol of a library linked into it",
                  not leaked, "\n".join(leaked[:40]))
        # The export-list checks of the build's own tests, on the wheel's
        # libjitwarm and plugins (linked otherwise: static archives).
        plugins = [os.path.join(unpacked, n) for n in names if "/plugins/" in n]
        run([sys.executable, os.path.join(source_root, "core", "check_exports.py"),
             os.path.join(unpacked, "jitwarm", "lib", "libjitwarm.so")])
        run(["sh", os.path.join(source_root, "plugins", "check_exports.sh"), *plugins])
        check("the wheel's libjitwarm exports its API only, each plugin its entry point "
              f"only ({len(plugins)} plugins)", len(plugins) >= 1)
    return names


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
        # `python -m build` and pip share one build (one compile), with the
        # setup arguments of pyproject.toml.
        wheel_build = Path(source_root) / (Path(build_root).name + "-venv-wheel")
        shutil.rmtree(wheel_build, ignore_errors=True)
        run(["meson", "setup", wheel_build, source_root, "-Dwheel=true",
             "-Dstatic_dependencies=true", "-Dtests=false", "-Dbench=false",
             "-Dexamples=false", *setup_args], env=env, cwd=source_root)
        settings = [f"builddir={wheel_build}"] + [f"setup-args={a}" for a in setup_args]
        dist = tmp / "dist"
        started = time.monotonic()
        run([vpython, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist,
             *[f"-C{s}" for s in settings], source_root], env=env, cwd=tmp)
        print(f"      the wheel built in {time.monotonic() - started:.0f} s", flush=True)
        wheels = list(dist.glob("jitwarm-*.whl"))
        check("python -m build --wheel --no-isolation makes a wheel for this Python",
              len(wheels) == 1 and "-cp3" in wheels[0].name, str(wheels))
        wheel_members = check_wheel(vpython, wheels[0], source_root, env)

        # pip installs a wheel with nothing but itself: no compiler, no
        # Meson, no ninja on PATH.
        bare_path = str(venv / "bin")
        check("the install's PATH holds no build tool",
              not any(shutil.which(tool, path=bare_path)
                      for tool in ("cc", "c++", "gcc", "meson", "ninja", "ld")))
        run([vpython, "-m", "pip", "install", "--no-index", "--no-deps", wheels[0]],
            env=dict(env, PATH=bare_path), cwd=tmp)
        check("pip install of the wheel, no build tool on PATH", True)

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

        foreign = json.loads(run([vpython, "-c", FOREIGN_LIBRARIES, tmp],
                                 env=env).strip().splitlines()[-1])
        check("with the system's libzstd and libfmt loaded first, the package imports "
              "and round-trips a zstd bundle",
              foreign["zstd_mapped"] and foreign["fmt_mapped"] and foreign["compiled"] == 2
              and foreign["exported"] == 2 and foreign["written"] == 2, json.dumps(foreign))

        # `pip install .` of the checkout goes through the same backend, in
        # the same build directory. Debian 12's pip (23.0) keeps one value
        # of a repeated --config-settings key, so it passes the one setup
        # argument meson-python would change (its default -Doptimization=2);
        # the build keeps the others from its configuration.
        from_source = tmp / "from-source"
        kept = [a for a in setup_args if a.startswith("-Doptimization=")]
        run([vpython, "-m", "pip", "install", "--no-build-isolation", "--no-index",
             "--no-deps", "--target", from_source, f"--config-settings=builddir={wheel_build}",
             *[f"--config-settings=setup-args={a}" for a in kept], source_root],
            env=env, cwd=tmp)
        installed = sorted(str(p.relative_to(from_source)) for p in
                           (from_source / "jitwarm").rglob("*") if p.is_file())
        check("pip install --no-build-isolation of the checkout installs the wheel's "
              "binaries, stripped",
              set(wheel_members) <= set(installed) and not any(
                  ".debug_info" in run(["readelf", "--wide", "--section-headers",
                                        from_source / m]) for m in wheel_members),
              str(installed))
        shutil.rmtree(wheel_build, ignore_errors=True)
    print("venv install: all checks passed")


if __name__ == "__main__":
    try:
        main()
    except (Failure, subprocess.TimeoutExpired) as error:
        print(error, file=sys.stderr)
        sys.exit(1)
