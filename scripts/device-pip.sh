#!/usr/bin/env bash
# On the GPU machine: builds the jitwarm package with pip for its own python3
# (the torch venv), from this checkout, as a user of that environment would:
#
#   pip install --no-build-isolation --no-index --target DIR .
#
# then prints DIR, for PYTHONPATH. The machine has none of the build's
# dependencies, so they come from .carry/sysroot (scripts/device-bundle.sh):
# headers, libraries, pkg-config files, pkgconf, and meson-python (Debian's,
# pure Python). The installed package needs libfmt, libzstd and libhiredis
# at run time: LD_LIBRARY_PATH=$(scripts/device-pip.sh --libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
sys=$PWD/.carry/sysroot
libs=$sys/usr/lib/x86_64-linux-gnu
if [[ "${1:-}" == --libraries ]]; then echo "$libs"; exit 0; fi
target=${1:-/tmp/jitwarm-site}
py=${PYTHON:-python3}
# The pkg-config files, pointed at the sysroot.
pc=/tmp/jitwarm-pkgconfig
rm -rf "$pc" && mkdir -p "$pc"
for file in "$libs"/pkgconfig/*.pc; do
  sed -E "s#(=|-I|-L)/usr#\\1$sys/usr#g" "$file" > "$pc/$(basename "$file")"
done
pybind11_pc=$($py -c 'import os, pybind11; print(os.path.join(os.path.dirname(pybind11.__file__), "share", "pkgconfig"))')
export PKG_CONFIG=$sys/bin/pkgconf
export PKG_CONFIG_LIBDIR=$pc:$pybind11_pc
export BOOST_INCLUDEDIR=$sys/usr/include BOOST_LIBRARYDIR=$libs
# Headers found without a pkg-config file (DLPack's).
export CPATH=$sys/usr/include${CPATH:+:$CPATH}
export LIBRARY_PATH=$libs${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$sys/python${PYTHONPATH:+:$PYTHONPATH}
rm -rf "$target"
$py -m pip install --no-build-isolation --no-index --no-deps --target "$target" . >&2
echo "$target"
