#!/usr/bin/env python3
"""Installs this build into a temporary DESTDIR and checks the installed
package.

Usage:
  test_install.py layout   MESON BUILD_ROOT SOURCE_ROOT [CXX...]
  test_install.py examples MESON BUILD_ROOT SOURCE_ROOT meson|cmake

layout: every file lands where docs/plugin-sdk.md says (benchmarks in
libexec, not bin; headers, docs, manifest, man page, version script, export
check, pkg-config and CMake files), the pkg-config variables point at
installed files, find_package(jitwarm) gives the imported targets, the
variables and the version answers the CMake package promises, and (given a
compiler command) every installed plugin SDK header compiles on its own
with nothing but the installed include directory.

examples: builds examples/host-app and examples/vendor-plugin out of tree
with the named build system against the installed copy only, then runs
them: the host application warms, seals and launches with the installed
plugins; the vendor plugin exports one symbol (the installed
check-plugin-exports says so) and passes the installed `jitwarm
conformance` with its expectations file. With Meson, also a kernel of the
user's own (examples/kernels/scale copied into a directory): the installed
jitwarm lists it, warms it for every GPU target it has a plugin for, and
tests it with conformance, its CPU oracle built out of tree.

Each run installs into its own temporary directory (`meson install
--destdir`), so runs do not interfere; nothing outside it is written.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


class Failure(Exception):
    pass


def run(command, *, cwd=None, env=None, what=None):
    """Runs a command; a failure raises with its output."""
    result = subprocess.run([str(part) for part in command], cwd=cwd, env=env,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise Failure(f"{what or command[0]} failed (exit {result.returncode}):\n"
                      f"$ {' '.join(str(part) for part in command)}\n"
                      f"{result.stdout}{result.stderr}")
    return result.stdout


class Install:
    """This build installed under a temporary DESTDIR."""

    def __init__(self, meson, build_root, destdir):
        self.meson = meson
        self.destdir = Path(destdir)
        options = {o["name"]: o["value"] for o in json.loads(
            run([meson, "introspect", build_root, "--buildoptions"],
                what="meson introspect"))}
        self.options = options
        self.options_version = json.loads(
            run([meson, "introspect", build_root, "--projectinfo"],
                what="meson introspect"))["version"]
        # {file in the build tree: where it is installed}
        self.installed = json.loads(
            run([meson, "introspect", build_root, "--installed"],
                what="meson introspect"))
        self.build_root = Path(build_root).resolve()
        run([meson, "install", "-C", build_root, "--no-rebuild", "--quiet",
             "--destdir", self.destdir], what="meson install")
        # The prefix as installed: DESTDIR + prefix.
        self.prefix = self.destdir / options["prefix"].lstrip("/")

    def dir(self, option):
        """An install directory option, as installed."""
        value = self.options[option]
        if value.startswith("/"):  # outside the prefix
            return self.under_destdir(value)
        return self.prefix / value

    def under_destdir(self, absolute):
        return self.destdir / str(absolute).lstrip("/")

    def environment(self):
        """What a user of the installed copy sets: the library and plugin
        directories, and where pkg-config and CMake look."""
        env = dict(os.environ)
        libdir = self.dir("libdir")
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            filter(None, [str(libdir), env.get("LD_LIBRARY_PATH")]))
        env["JITWARM_PLUGIN_PATH"] = str(libdir / "jitwarm" / "plugins")
        env["JITWARM_NO_CACHE_DIR"] = "1"
        env["JITWARM_LOG_LEVEL"] = "error"
        env["PKG_CONFIG_PATH"] = str(libdir / "pkgconfig")
        env.pop("PKG_CONFIG_LIBDIR", None)
        # .pc files find their prefix from their own place when the build
        # was configured with pkgconfig.relocatable (the default since the
        # project set it; older build directories keep their setting); else
        # pkg-config is told the DESTDIR as its sysroot.
        with open(libdir / "pkgconfig" / "jitwarm.pc", encoding="utf-8") as pc:
            if "${pcfiledir}" not in pc.read():
                env["PKG_CONFIG_SYSROOT_DIR"] = str(self.destdir)
        env["CMAKE_PREFIX_PATH"] = str(self.prefix)
        return env


def same_file(installed, source, problems):
    if not installed.is_file():
        problems.append(f"missing: {installed}")
    elif installed.read_bytes() != Path(source).read_bytes():
        problems.append(f"differs from {source}: {installed}")


def check_layout(install, source_root, cxx):
    problems = []
    prefix = install.prefix
    bindir, libdir = install.dir("bindir"), install.dir("libdir")
    libexec = install.dir("libexecdir") / "jitwarm"
    datadir = install.dir("datadir")
    source_root = Path(source_root)

    if not (bindir / "jitwarm").is_file():
        problems.append(f"missing: {bindir / 'jitwarm'}")
    # Every program built in bench/ goes to <libexecdir>/jitwarm.
    bench_build = install.build_root / "bench"
    benches = [Path(target) for built, target in install.installed.items()
               if Path(built).resolve().parent == bench_build]
    if install.options.get("bench") and not benches:
        problems.append("no benchmark is installed")
    libexec_as_configured = Path(install.options["prefix"]) / \
        install.options["libexecdir"] / "jitwarm"
    for bench in benches:
        if bench.parent != libexec_as_configured:
            problems.append(f"{bench.name} is installed to {bench.parent}, "
                            f"not {libexec_as_configured}")
        elif not (libexec / bench.name).is_file():
            problems.append(f"missing: {libexec / bench.name}")

    docdir = datadir / "doc" / "jitwarm"
    for page in sorted((source_root / "docs").glob("*.md")) + \
            [source_root / "README.md"]:
        same_file(docdir / page.name, page, problems)
    same_file(datadir / "jitwarm" / "manifests" / "kernel-set.toml",
              source_root / "manifests" / "kernel-set.toml", problems)
    same_file(datadir / "jitwarm" / "plugin.map",
              source_root / "plugins" / "plugin.map", problems)

    # The public headers, as in the tree (the SDK among them).
    includedir = install.dir("includedir")
    public = source_root / "core" / "include"
    headers = sorted(p.relative_to(public) for p in public.rglob("*.h*"))
    for header in headers:
        same_file(includedir / header, public / header, problems)
    problems += check_headers_alone(includedir, headers, cxx,
                                    install.destdir.parent)

    checker = libexec / "check-plugin-exports"
    if not os.access(checker, os.X_OK):
        problems.append(f"missing or not executable: {checker}")
    else:
        plugin = libdir / "jitwarm" / "plugins" / "libjitwarm-reference-cpu.so"
        accepted = subprocess.run([checker, plugin], capture_output=True,
                                  check=False).returncode == 0
        refused = subprocess.run([checker, libdir / "libjitwarm.so"],
                                 capture_output=True, check=False).returncode
        if not accepted or refused != 1:
            problems.append(f"{checker} does not tell a plugin (accepted: "
                            f"{accepted}) from libjitwarm (exit {refused})")

    man_page = install.dir("mandir") / "man1" / "jitwarm.1"
    if not man_page.is_file() or \
            not man_page.read_text(encoding="utf-8").startswith(".TH JITWARM 1"):
        problems.append(f"missing or not a man page: {man_page}")

    for cmake_file in ("jitwarmConfig.cmake", "jitwarmConfigVersion.cmake"):
        if not (libdir / "cmake" / "jitwarm" / cmake_file).is_file():
            problems.append(f"missing: {libdir / 'cmake' / 'jitwarm' / cmake_file}")

    # pkg-config: each variable names an installed file or directory.
    env = install.environment()
    for package, variable, expected in (
            ("jitwarm", "plugindir", libdir / "jitwarm" / "plugins"),
            ("jitwarm-plugin", "plugindir", libdir / "jitwarm" / "plugins"),
            ("jitwarm-plugin", "version_script",
             datadir / "jitwarm" / "plugin.map"),
            ("jitwarm-plugin", "check_exports", checker)):
        value = run(["pkg-config", f"--variable={variable}", package],
                    env=env, what="pkg-config").strip()
        if not value or Path(value).resolve() != expected.resolve():
            problems.append(f"pkg-config {package} {variable} is '{value}', "
                            f"not {expected}")
    cflags = run(["pkg-config", "--cflags", "jitwarm-plugin"], env=env,
                 what="pkg-config").split()
    include_dirs = [Path(flag[2:]).resolve() for flag in cflags
                    if flag.startswith("-I")]
    if install.dir("includedir").resolve() not in include_dirs:
        problems.append(f"pkg-config --cflags jitwarm-plugin is {cflags}")
    if not (libdir / "jitwarm" / "plugins" /
            "libjitwarm-reference-cpu.so").is_file():
        problems.append("the CPU reference plugin is not in the plugin directory")

    problems += check_cmake_package(install)
    problems += check_moved_prefix(install)

    for problem in problems:
        print(f"FAIL {problem}")
    if problems:
        raise Failure(f"{len(problems)} problem(s) in the installed layout "
                      f"under {prefix}")
    print(f"ok   install layout under {prefix}")


def check_moved_prefix(install):
    """The installed tree lies under DESTDIR, not at the prefix it was built
    for, as a prefix copied elsewhere does: its program, with nothing set
    (no LD_LIBRARY_PATH, no plugin path), finds its own library, plugins,
    kernel directory and conformance expectations."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("JITWARM_") and k != "LD_LIBRARY_PATH"}
    env["JITWARM_NO_CACHE_DIR"] = "1"
    program = install.dir("bindir") / "jitwarm"
    result = subprocess.run([program, "plugins", "--json"], env=env,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return [f"{program} plugins failed in the moved prefix:\n"
                f"{result.stdout}{result.stderr}"]
    report = json.loads(result.stdout)
    plugin_dir = install.dir("libdir") / "jitwarm" / "plugins"
    kernel_dir = install.dir("datadir") / "jitwarm" / "kernels"
    problems = []
    if str(plugin_dir) not in report["searched"]:
        problems.append(f"the moved prefix's program searched {report['searched']}, "
                        f"not {plugin_dir}")
    loaded = [p["path"] for p in report["plugins"] if p["status"] == "loaded"]
    if not loaded or not all(p.startswith(str(plugin_dir) + "/") for p in loaded):
        problems.append(f"the moved prefix loaded {loaded}, not its own plugins")
    if str(kernel_dir) not in report["kernel_directories"]:
        problems.append(f"the moved prefix read kernels from "
                        f"{report['kernel_directories']}, not {kernel_dir}")
    listed = subprocess.run([program, "conformance", "--list", "--platform", "cpu"],
                            env=env, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        problems.append(f"conformance --list in the moved prefix failed:\n"
                        f"{listed.stdout}{listed.stderr}")
    if not problems:
        print(f"ok   the installed tree, moved from its prefix, loads its own plugins")
    return problems


def check_headers_alone(includedir, headers, cxx, scratch):
    """Each header compiles as the only include of a translation unit, with
    nothing but the installed include directory: it includes what it uses,
    and only installed headers."""
    if not cxx:
        print("skip the headers-alone check: no compiler given")
        return []
    if not any(h.as_posix() == "jitwarm/plugin.hpp" for h in headers):
        return ["the plugin SDK (jitwarm/plugin.hpp) is not among the headers"]
    problems = []
    for header in headers:
        source = scratch / "header-alone.cpp"
        source.write_text(f"#include <{header.as_posix()}>\n", encoding="utf-8")
        result = subprocess.run(
            [*cxx, "-std=c++20", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
             "-I" + str(includedir), str(source)],
            capture_output=True, text=True, check=False)
        if result.returncode != 0:
            problems.append(f"<{header.as_posix()}> does not compile alone:\n"
                            f"{result.stderr}")
    if not problems:
        print(f"ok   {len(headers)} public headers compile alone")
    return problems


# find_package(jitwarm) from a CMake project: the imported targets and
# variables, and which version requests the install satisfies.
CMAKE_PROBE = """
cmake_minimum_required(VERSION 3.16)
project(jitwarm_probe LANGUAGES CXX)
find_package(jitwarm @SERIES@ REQUIRED)
foreach(target jitwarm::jitwarm jitwarm::plugin)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "no imported target ${target}")
  endif()
endforeach()
get_target_property(library jitwarm::jitwarm IMPORTED_LOCATION)
get_target_property(link_options jitwarm::plugin INTERFACE_LINK_OPTIONS)
get_target_property(includes jitwarm::plugin INTERFACE_INCLUDE_DIRECTORIES)
message(STATUS "probe library=${library}")
message(STATUS "probe link_options=${link_options}")
message(STATUS "probe includes=${includes}")
message(STATUS "probe plugin_dir=${jitwarm_PLUGIN_DIR}")
message(STATUS "probe version_script=${jitwarm_VERSION_SCRIPT}")
message(STATUS "probe check_exports=${jitwarm_CHECK_EXPORTS}")
message(STATUS "probe version=${jitwarm_VERSION}")
foreach(request IN ITEMS @VERSION@ 0.0 0.999 1.0 0.0...9.0 @SERIES@...<9.0)
  unset(jitwarm_FOUND)
  find_package(jitwarm ${request} QUIET)
  message(STATUS "probe request ${request}=${jitwarm_FOUND}")
endforeach()
"""


def check_cmake_package(install):
    if shutil.which("cmake") is None:
        print("skip the CMake package: cmake not found")
        return []
    problems = []
    probe = install.destdir.parent / "cmake-probe"
    probe.mkdir()
    version = install.options_version
    # Before 1.0 a series is a major.minor (cmake/jitwarmConfigVersion.cmake.in).
    if not version.startswith("0."):
        raise Failure(f"update the CMake version checks for version {version}")
    series = ".".join(version.split(".")[:2])
    (probe / "CMakeLists.txt").write_text(
        CMAKE_PROBE.replace("@VERSION@", version).replace("@SERIES@", series),
        encoding="utf-8")
    output = run(["cmake", "-S", probe, "-B", probe / "build"],
                 env=install.environment(), what="cmake (find_package probe)")
    found = dict(re.findall(r"-- probe (.+?)=(.*)", output))
    libdir = install.dir("libdir")
    expect_paths = {
        "check_exports": install.dir("libexecdir") / "jitwarm" /
        "check-plugin-exports",
        "library": libdir / "libjitwarm.so",
        "includes": install.dir("includedir"),
        "plugin_dir": libdir / "jitwarm" / "plugins",
        "version_script": install.dir("datadir") / "jitwarm" / "plugin.map",
    }
    for name, path in expect_paths.items():
        if Path(found.get(name, "")).resolve() != path.resolve():
            problems.append(f"CMake {name} is '{found.get(name)}', not {path}")
    if found.get("link_options") != \
            f"LINKER:--version-script={found.get('version_script')}":
        problems.append("jitwarm::plugin links with "
                        f"'{found.get('link_options')}', not the version script")
    if found.get("version") != version:
        problems.append(f"CMake jitwarm_VERSION is '{found.get('version')}'")
    # This series only; a version range whose lower end is in it.
    expected = {version: "1", "0.0": "0", "0.999": "0", "1.0": "0",
                "0.0...9.0": "0", f"{series}...<9.0": "1"}
    for request, want in expected.items():
        got = found.get(f"request {request}", "")
        if (got.upper() in ("1", "TRUE", "ON", "YES")) != (want == "1"):
            problems.append(f"find_package(jitwarm {request}) gave "
                            f"'{got}', expected {'found' if want == '1' else 'not found'}")
    # A partial install: the package is not found, and says what is missing.
    version_script = Path(expect_paths["version_script"])
    saved = version_script.read_bytes()
    version_script.unlink()
    try:
        partial = subprocess.run(
            ["cmake", "-S", probe, "-B", probe / "build-partial"],
            env=install.environment(), capture_output=True, text=True,
            check=False)
    finally:
        version_script.write_bytes(saved)
    # (CMake wraps the message: any whitespace between the words.)
    if partial.returncode == 0 or not re.search(
            r"plugin\.map\s+is\s+missing", partial.stdout + partial.stderr):
        problems.append("find_package(jitwarm) with plugin.map missing did not "
                        "fail naming it:\n" + partial.stdout + partial.stderr)
    if not problems:
        print("ok   find_package(jitwarm): targets, variables, versions, "
              "a partial install refused")
    return problems


# --- the examples, built out of tree against the install --------------------

def configure_and_build(tool, source, build, install):
    env = install.environment()
    if tool == "meson":
        run([install.meson, "setup", build, source], env=env,
            what=f"meson setup {source.name}")
        run([install.meson, "compile", "-C", build], env=env,
            what=f"meson compile {source.name}")
    else:
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        run(["cmake", "-S", source, "-B", build, *generator], env=env,
            what=f"cmake configure {source.name}")
        run(["cmake", "--build", build], env=env,
            what=f"cmake --build {source.name}")


def build_examples(install, source_root, work, tool):
    examples = source_root / "examples"
    env = install.environment()

    host_build = work / f"{tool}-host-app"
    configure_and_build(tool, examples / "host-app", host_build, install)
    output = run([host_build / "jitwarm-example-host"], env=env,
                 what="the example host")
    loaded = re.search(r"(\d+) plugin\(s\) loaded", output)
    if not loaded or int(loaded.group(1)) == 0 or \
            "compiles during serving: 0" not in output:
        raise Failure(f"the example host did not warm and serve from the "
                      f"installed plugins:\n{output}")
    print(f"ok   {tool}: examples/host-app built and served "
          f"({loaded.group(1)} installed plugin(s))")

    plugin_build = work / f"{tool}-vendor-plugin"
    configure_and_build(tool, examples / "vendor-plugin", plugin_build, install)
    plugin = plugin_build / "libjitwarm-example-vendor.so"
    if not plugin.is_file():
        raise Failure(f"{tool} built no {plugin}")
    # Its own test: the installed check-plugin-exports, found through the
    # package (pkg-config check_exports, CMake jitwarm_CHECK_EXPORTS).
    if tool == "meson":
        run([install.meson, "test", "-C", plugin_build], env=env,
            what="meson test (the plugin's export check)")
    else:
        run(["ctest", "--test-dir", plugin_build, "--output-on-failure"],
            env=env, what="ctest (the plugin's export check)")
    # The installed tool and reference plugin test it; its rms_norm is wrong
    # on purpose and declared so in its expectations file.
    output = run([install.dir("bindir") / "jitwarm", "conformance",
                  "--plugin", plugin, "--expectations",
                  examples / "vendor-plugin" / "expected-failures.toml"],
                 env=env, what="jitwarm conformance of the example plugin")
    summary = re.search(r"conformance: (\d+) passed, (\d+) failed", output)
    if not summary or int(summary.group(1)) == 0:
        raise Failure(f"conformance of the example plugin ran nothing:\n{output}")
    print(f"ok   {tool}: examples/vendor-plugin built, exports one symbol, "
          f"conformance {summary.group(1)} passed, {summary.group(2)} failed")


def check_kernel_from_source(install, source_root, work):
    """A new user's kernel with the installed package only: a descriptor and
    its source dropped into a directory of their own; the installed jitwarm
    lists it, warms it for sm_90, gfx90a and gfx942, and tests it with
    `jitwarm conformance` (its CPU oracle built out of tree with Meson)."""
    env = install.environment()
    env["JITWARM_NO_CACHE_DIR"] = "1"
    jitwarm = install.dir("bindir") / "jitwarm"
    kernels = work / "my-kernels"
    kernels.mkdir()
    for name in ("scale.toml", "scale.cu"):
        shutil.copy(source_root / "examples" / "kernels" / "scale" / name, kernels)
    listed = run([jitwarm, "kernels", "--kernel-path", kernels], env=env,
                 what="jitwarm kernels")
    if "example.kernels.scale" not in listed:
        raise Failure(f"jitwarm kernels does not list the kernel:\n{listed}")
    platforms = json.loads(run([jitwarm, "plugins", "--json"], env=env,
                               what="jitwarm plugins --json"))["platforms"]
    targets = [t for t, platform in (("cuda:sm_90", "cuda"), ("hip:gfx90a", "hip"),
                                     ("hip:gfx942", "hip"))
               if any(p["name"] == platform for p in platforms)]
    if not targets:
        raise Failure("the installed package has neither the CUDA nor the HIP plugin")
    manifest = work / "scale.toml"
    manifest.write_text('version = 1\n[[kernel]]\nname = "example.kernels.scale"\n'
                        '[kernel.params]\nn = [1, 256, 1000]\n')
    warmup = ["warmup", "--kernel-path", kernels, "--manifest", manifest, "--json"]
    for target in targets:
        warmup += ["--target", target]
    result = json.loads(run([jitwarm] + warmup, env=env, what="jitwarm warmup"))
    if result["failed"] != 0 or result["compiled"] != 3 * len(targets):
        raise Failure(f"warming the kernel for {targets} gave {result}")
    # Its CPU implementation, the oracle, built out of tree against the
    # installed plugin SDK.
    oracle = work / "kernels-oracle"
    configure_and_build("meson", source_root / "examples" / "kernels", oracle, install)
    env["JITWARM_PLUGIN_PATH"] += os.pathsep + str(oracle)
    conformance = [jitwarm, "conformance", "--kernel-path", kernels,
                   "--kernel", "example.kernels.scale", "--json"]
    for target in targets:
        conformance += ["--target", target]
    report = json.loads(run(conformance, env=env, what="jitwarm conformance"))
    ran = [r for r in report["results"] if r["status"] == "pass"]
    wrong = [r for r in report["results"] if r["status"] not in ("pass", "skip")]
    compiled = {r["target"] for r in ran if r["check"] == "compile"}
    if wrong or set(targets) - compiled or not any(r["platform"] == "cpu" for r in ran):
        raise Failure(f"conformance of the kernel from source: {report['results']}")
    print(f"ok   a kernel from source with the installed package: listed, warmed and "
          f"tested for {', '.join(targets)} and cpu ({len(ran)} passed)")


def main():
    modes = {"layout": range(5, 1000), "examples": [6]}
    if len(sys.argv) < 2 or sys.argv[1] not in modes or \
            len(sys.argv) not in modes[sys.argv[1]]:
        print(__doc__)
        return 2
    mode, meson, build_root, source_root = sys.argv[1:5]
    if mode == "examples" and sys.argv[5] not in ("meson", "cmake"):
        print(__doc__)
        return 2
    if mode == "examples" and sys.argv[5] == "cmake" and \
            shutil.which("cmake") is None:
        print("cmake not found (Debian package cmake)")
        return 77
    work = Path(tempfile.mkdtemp(prefix="jitwarm-install-test-"))
    try:
        install = Install(meson, build_root, work / "destdir")
        if mode == "layout":
            check_layout(install, Path(source_root), sys.argv[5:])
        else:
            build_examples(install, Path(source_root), work, sys.argv[5])
            if sys.argv[5] == "meson":
                check_kernel_from_source(install, Path(source_root), work)
        return 0
    except Failure as e:
        print(f"FAIL {e}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
