#!/usr/bin/env bash
# On the GPU machine: installs the jitwarm wheel built on the build machine
# (scripts/build-wheel.sh, carried in .carry/wheels) for this machine's
# python3 (the torch venv), as a user of that environment would:
#
#   pip install --no-index --no-deps --target DIR jitwarm-*.whl
#
# with no compiler, no build dependencies and no LD_LIBRARY_PATH: the
# wheel needs nothing but glibc and libstdc++ (docs/python.md,
# "Installing"). Prints DIR, for PYTHONPATH.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-/tmp/jitwarm-site}
py=${PYTHON:-python3}
# The wheel for this Python: cp312-cp312-manylinux_2_36_x86_64 for 3.12.
abi=$($py -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
wheels=(.carry/wheels/jitwarm-*-"$abi"-"$abi"-manylinux_*.whl)
if [[ ! -f "${wheels[0]}" ]]; then
  echo "no $abi wheel in .carry/wheels (scripts/build-wheel.sh makes them): $(ls .carry/wheels 2>&1)" >&2
  exit 1
fi
# pip refuses a manylinux_2_36 wheel below glibc 2.36: say what this has.
$py -c 'import platform, sys; print("python", sys.version.split()[0], "glibc", platform.libc_ver()[1])' >&2
rm -rf "$target"
env -u LD_LIBRARY_PATH $py -m pip install --no-index --no-deps --no-cache-dir \
  --target "$target" "${wheels[@]}" >&2
echo "$target"
