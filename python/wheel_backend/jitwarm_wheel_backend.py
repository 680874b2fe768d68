"""The PEP 517 backend of pyproject.toml: meson-python, whose wheel it then
makes fit to ship (meson-python 0.12, Debian 12's, does none of this):

- every ELF file in it is stripped of what a user does not need (its debug
  information and local symbols: `strip --strip-unneeded`);
- every ELF file needs nothing at run time but glibc, libstdc++ and
  libgcc_s, and the package's own libjitwarm (ALLOWED_NEEDED): the build
  links its other libraries in (-Dstatic_dependencies=true, which
  pyproject.toml passes), and a wheel that would need one is refused;
- its platform tag says which glibc it needs, as auditwheel names it
  (manylinux_2_36_x86_64 on Debian 12): platform_tag() says why that is the
  building machine's glibc;
- its members are compressed (deflate) and its RECORD lists them as they
  are now (wheel's WheelFile writes it).

So `python3 -m build --wheel --no-isolation` and `pip install .` give the
wheel that is shipped. Run as a program, it prints what wheel_report()
finds in a wheel: python3 jitwarm_wheel_backend.py WHEEL.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import mesonpy
from mesonpy import build_sdist, get_requires_for_build_sdist  # noqa: F401
from mesonpy import get_requires_for_build_wheel  # noqa: F401
from wheel.cli.pack import pack
from wheel.wheelfile import WheelFile

# What an ELF file of the wheel may name in DT_NEEDED: glibc's libraries,
# the C++ runtime, and the package's own library (beside it in lib/). The
# GPU vendors' libraries (libcuda, NVRTC, nvJitLink, libamdhip64, hiprtc,
# comgr) are opened at run time, never linked, so they are not here: a
# wheel that needed one would not even import on a machine without a GPU.
ALLOWED_NEEDED = frozenset({
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "ld-linux-x86-64.so.2", "libstdc++.so.6", "libgcc_s.so.1",
    "libjitwarm.so",
})

ELF_MAGIC = b"\x7fELF"


class WheelError(Exception):
    pass


def readelf(path, *options):
    result = subprocess.run(["readelf", "--wide", *options, str(path)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise WheelError(f"readelf {' '.join(options)} {path}: {result.stderr.strip()}")
    return result.stdout


def needed_libraries(path):
    """The DT_NEEDED entries of an ELF file."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                      readelf(path, "--dynamic"))


def glibc_versions_needed(path):
    """The GLIBC_x.y symbol versions an ELF file needs, as (x, y)."""
    return {(int(major), int(minor)) for major, minor in
            re.findall(r"Name: GLIBC_(\d+)\.(\d+)", readelf(path, "--version-info"))}


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == ELF_MAGIC


def elf_files(directory):
    return sorted(p for p in Path(directory).rglob("*")
                  if p.is_file() and not p.is_symlink() and is_elf(p))


def building_glibc():
    """The glibc of the machine that builds, as (major, minor)."""
    name, _, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    match = re.fullmatch(r"(\d+)\.(\d+).*", version)
    if name != "glibc" or not match:
        raise WheelError("a manylinux wheel is built with glibc; this machine's C "
                         f"library is '{name} {version}'")
    return int(match.group(1)), int(match.group(2))


def platform_tag(elf_paths, machine):
    """manylinux_X_Y_<machine>, with X.Y the building machine's glibc.

    Not the highest GLIBC_x.y symbol version the binaries need, which is
    lower (a few functions of 2.34 and before): the binaries also need the
    building machine's libstdc++ (GCC 12's GLIBCXX_3.4.30 on Debian 12),
    which is not linked in, and a system of an older glibc ships an older
    one (RHEL 9: glibc 2.34, GCC 11's libstdc++), so a tag from the glibc
    symbols alone would promise what does not load. Every glibc symbol
    version needed must lie at or below the tag, which is checked."""
    glibc = building_glibc()
    for path in elf_paths:
        too_new = [v for v in glibc_versions_needed(path) if v > glibc]
        if too_new:
            raise WheelError(f"{path.name} needs GLIBC_{max(too_new)[0]}.{max(too_new)[1]}, "
                             f"newer than the building machine's {glibc[0]}.{glibc[1]}")
    return f"manylinux_{glibc[0]}_{glibc[1]}_{machine}"


def check_needed(root, elf_paths):
    for path in elf_paths:
        foreign = sorted(set(needed_libraries(path)) - ALLOWED_NEEDED)
        if foreign:
            raise WheelError(
                f"{path.relative_to(root)} needs {', '.join(foreign)} at run time, "
                "which a user's machine need not have: build with "
                "-Dstatic_dependencies=true (pyproject.toml's setup arguments) so "
                "they are linked in")


def strip(elf_paths):
    strip_program = shutil.which("strip")
    if strip_program is None:
        raise WheelError("strip (binutils) is needed to make the wheel")
    for path in elf_paths:
        mode = stat.S_IMODE(path.stat().st_mode)
        path.chmod(mode | stat.S_IWUSR)
        subprocess.run([strip_program, "--strip-unneeded", str(path)], check=True)
        path.chmod(mode)


def unpack(wheel_path, directory):
    """The wheel's members in `directory`, with their modes (a program stays
    executable); WheelFile checks each against RECORD as it reads."""
    with WheelFile(wheel_path) as wf:
        for info in wf.infolist():
            target = Path(wf.extract(info, directory))
            mode = info.external_attr >> 16
            if stat.S_ISREG(mode):
                target.chmod(stat.S_IMODE(mode))


def retag(directory, platform):
    """The WHEEL file's tags with `platform` for their platform."""
    (wheel_file,) = Path(directory).glob("*.dist-info/WHEEL")
    text = wheel_file.read_text()
    tags = re.findall(r"^Tag: (\S+)$", text, flags=re.M)
    if not tags or any(tag.count("-") != 2 for tag in tags):
        raise WheelError(f"{wheel_file}: no tags to retag ({tags})")
    text = re.sub(r"^Tag: ([^-\s]+)-([^-\s]+)-\S+$", rf"Tag: \1-\2-{platform}", text,
                  flags=re.M)
    wheel_file.write_text(text)


def finish_wheel(wheel_path):
    """meson-python's wheel at `wheel_path` made fit to ship; returns the new
    wheel's path (in the same directory: its name has the new tag)."""
    wheel_path = Path(wheel_path)
    machine = re.fullmatch(r".*-linux_(\w+)\.whl", wheel_path.name)
    if machine is None:
        raise WheelError(f"{wheel_path.name}: not a Linux platform wheel")
    with tempfile.TemporaryDirectory(prefix="jitwarm-wheel-") as tmp:
        unpacked = Path(tmp) / "unpacked"
        unpack(wheel_path, unpacked)
        binaries = elf_files(unpacked)
        check_needed(unpacked, binaries)
        strip(binaries)
        retag(unpacked, platform_tag(binaries, machine.group(1)))
        built = Path(tmp) / "built"
        built.mkdir()
        pack(str(unpacked), str(built), None)
        (result,) = built.glob("*.whl")
        wheel_path.unlink()
        return Path(shutil.move(str(result), wheel_path.parent / result.name))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = mesonpy.build_wheel(wheel_directory, config_settings, metadata_directory)
    try:
        return finish_wheel(Path(wheel_directory) / name).name
    except WheelError as error:
        raise SystemExit(f"jitwarm wheel: {error}") from None


def wheel_report(wheel_path):
    """What a wheel holds, for a person or a test: its size, how its members
    are stored, and each ELF file's DT_NEEDED (and which of those are not
    ALLOWED_NEEDED), highest glibc symbol version and whether it still has
    debug information."""
    report = {"wheel": Path(wheel_path).name, "bytes": os.path.getsize(wheel_path)}
    with tempfile.TemporaryDirectory(prefix="jitwarm-wheel-") as tmp:
        with WheelFile(wheel_path) as wf:
            infos = wf.infolist()
            report["members"] = len(infos)
            report["stored_uncompressed"] = [i.filename for i in infos
                                             if i.compress_type == 0 and i.file_size > 0]
            report["unpacked_bytes"] = sum(i.file_size for i in infos)
        unpack(wheel_path, tmp)
        report["elf"] = {}
        for path in elf_files(tmp):
            versions = glibc_versions_needed(path)
            top = max(versions) if versions else None
            needed = needed_libraries(path)
            report["elf"][str(path.relative_to(tmp))] = {
                "needed": needed,
                "not_allowed": sorted(set(needed) - ALLOWED_NEEDED),
                "glibc": f"{top[0]}.{top[1]}" if top else None,
                "debug_info": ".debug_info" in readelf(path, "--section-headers"),
            }
    return report


if __name__ == "__main__":
    print(json.dumps(wheel_report(sys.argv[1]), indent=2))
