#!/usr/bin/env bash
# Builds build-device/: a release build of jitwarm (CLI, plugins, tests,
# benchmarks) plus the few shared libraries it needs from this machine
# (libfmt, libstdc++, libgcc_s), so the build can be copied to a GPU machine
# that has a CUDA driver but none of our build dependencies, and run there:
#
#   export LD_LIBRARY_PATH=$PWD/build-device/runtime-libs:$LD_LIBRARY_PATH
#   export JITWARM_PLUGIN_PATH=$PWD/build-device/plugins/reference-cpu:$PWD/build-device/plugins/cuda
#   build-device/tools/jitwarm conformance --platform cuda
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build-device/build.ninja ]]; then
  meson setup build-device --buildtype=release -Db_ndebug=false -Dhip=disabled >/dev/null
fi
ninja -C build-device
mkdir -p build-device/runtime-libs
for lib in libfmt.so.9 libstdc++.so.6 libgcc_s.so.1; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" build-device/runtime-libs/
done
du -sh build-device
