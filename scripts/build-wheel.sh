#!/usr/bin/env bash
# Builds the jitwarm wheel (pyproject.toml: meson-python, then
# python/wheel_backend makes it fit to ship) for one Python, as
# `python3 -m build --wheel --no-isolation` does:
#
#   scripts/build-wheel.sh [PYTHON [OUTDIR]]
#
# PYTHON: /usr/bin/python3 (Debian 12's 3.11) by default. A wheel holds an
# extension module for one Python version, so the GPU machine's torch venv
# (Python 3.12) needs a wheel of its own: give another CPython of this
# machine (pyenv's: /root/.pyenv/versions/3.12.1/bin/python3.12), which
# brings its headers; the build tools it lacks (build, meson-python,
# wheel and what they import: pure Python) are Debian's, lent to it on
# PYTHONPATH, and so is distutils, which Python 3.12 no longer has and
# Debian 12's Meson (1.0) asks the Python for its paths with: setuptools'
# copy of it. OUTDIR: dist/ by default.
#
# The build directory is build-wheel-cpXY in the checkout, with
# pyproject.toml's options (a release build), so ccache (scripts/run.sh says
# how) makes the wheel of another Python mostly cache hits: only the
# extension module compiles again. Prints the wheel's path.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-/usr/bin/python3}
outdir=$(realpath -m "${2:-dist}")
abi=$("$py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
if ! "$py" -c 'import mesonpy, build, wheel' 2>/dev/null; then
  lent=$(mktemp -d)
  trap 'rm -rf "$lent"' EXIT
  # Each with its metadata, by which `build` checks pyproject.toml's requires.
  for package in build pep517 mesonpy meson_python pyproject_metadata packaging wheel \
                 tomli meson; do
    for path in /usr/lib/python3/dist-packages/{"$package","$package"-*.*-info}; do
      [[ -e "$path" ]] && ln -s "$path" "$lent/"
    done
  done
  if ! "$py" -c 'import distutils' 2>/dev/null; then
    ln -s /usr/lib/python3/dist-packages/setuptools/_distutils "$lent/distutils"
  fi
  export PYTHONPATH=$lent${PYTHONPATH:+:$PYTHONPATH}
fi
export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
builddir=$PWD/build-wheel-$abi
# The setup arguments of pyproject.toml and meson-python's (a release
# build): meson-python 0.12 reconfigures a named build directory, so it is
# set up first, for this Python.
setup_args=(-Dwheel=true -Dstatic_dependencies=true -Dtests=false -Dbench=false
            -Dexamples=false -Doptimization=2 -Ddebug=false)
if [[ ! -f "$builddir/build.ninja" ]]; then
  rm -rf "$builddir" && mkdir -p "$builddir"
  # Meson reads it again when it reconfigures: it stays in the build directory.
  printf "[binaries]\npython = '%s'\npython3 = '%s'\n" "$py" "$py" > "$builddir/python.ini"
  meson setup "$builddir" --native-file "$builddir/python.ini" "${setup_args[@]}" >&2
fi
mkdir -p "$outdir"
"$py" -m build --wheel --no-isolation --outdir "$outdir" -C"builddir=$builddir" . >&2
ls -t "$outdir"/jitwarm-*-"$abi"-"$abi"-*.whl | head -1
