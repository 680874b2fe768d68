#!/usr/bin/env bash
# Builds the jitwarm Python package for the GPU machine's own python3 (its
# torch and triton live there, in another Python version than the Debian
# one this project builds for): the extension from python/src against the
# release build carried in build-device/ (scripts/device-bundle.sh, which
# also carries the fmt and DLPack headers it needs), and the pure-Python
# modules beside it, into build-device/python-device/jitwarm. Prints the
# PYTHONPATH to use. Runs there, from the repository root.
set -euo pipefail
py=${PYTHON:-python3}
suffix=$($py -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
py_include=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
pybind11_include=$($py -c 'import pybind11; print(pybind11.get_include())')
out=build-device/python-device/jitwarm
objects=build-device/python-device/objects
mkdir -p "$out" "$objects"
cp python/jitwarm/*.py python/jitwarm/*.pyi python/jitwarm/py.typed "$out/"
flags=(-std=c++20 -O2 -fPIC -fvisibility=hidden -DNDEBUG -Icore/include
       -I"$py_include" -I"$pybind11_include" -Ibuild-device/device-include)
# One compiler per source, all at once: the binding's files are heavy.
pids=()
for src in python/src/*.cpp; do
  g++ "${flags[@]}" -c "$src" -o "$objects/$(basename "$src" .cpp).o" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
g++ -shared -o "$out/_jitwarm$suffix" "$objects"/*.o \
  -Lbuild-device/core -ljitwarm build-device/runtime-libs/libfmt.so.9 \
  -Wl,-rpath,"$PWD/build-device/core" -Wl,-rpath,"$PWD/build-device/runtime-libs"
echo "$PWD/build-device/python-device"
