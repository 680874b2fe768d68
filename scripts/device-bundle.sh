#!/usr/bin/env bash
# Builds build-device/: a release build of jitwarm (CLI, plugins, tests,
# benchmarks) plus the few shared libraries it needs from this machine
# (libfmt, libhiredis, libzstd, libsodium, libstdc++, libgcc_s), so the build can be
# copied to a GPU machine that has a CUDA driver but none of our build
# dependencies, and run there. Also .carry/wheels: the package's wheel for
# that machine's Python (scripts/device-pip.sh installs it there).
#
#   export LD_LIBRARY_PATH=$PWD/build-device/runtime-libs:$LD_LIBRARY_PATH
#   export JITWARM_PLUGIN_PATH=$PWD/build-device/plugins/reference-cpu:$PWD/build-device/plugins/cuda
#   build-device/tools/jitwarm conformance --platform cuda
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build-device/build.ninja ]]; then
  meson setup build-device --buildtype=release -Db_ndebug=false -Dhip=disabled >/dev/null
fi
# What the GPU run uses: everything but the fuzz replays and the tests, of
# which only these travel (217 of the build's 376 steps).
device_tests=(tests/gpu/test_cuda_launch tests/gpu/test_cuda_fork_after_warmup tests/plugins)
travels=$(IFS='|'; echo "^(${device_tests[*]})(/|\$)")
mapfile -t wanted < <(ninja -C build-device -t targets all |
  awk -F': ' -v travels="$travels" '$2 ~ /^((c|cpp)_LINKER|CUSTOM_COMMAND)$/ &&
    $1 !~ /^(meson-internal__|fuzz\/)/ && ($1 !~ /^tests\// || $1 ~ travels) {print $1}')
ninja -C build-device "${wanted[@]}"
mkdir -p build-device/runtime-libs
for lib in libfmt.so.9 libhiredis.so.0.14 libzstd.so.1 libsodium.so.23 libstdc++.so.6 libgcc_s.so.1; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" build-device/runtime-libs/
done
# What travels (the device tool carries at most 64 MiB with the tree): the
# built programs and libraries, without objects, static archives, Meson's
# state or the tests the GPU run does not use. There: ln -sfn
# .carry/build-device build-device.
rm -rf .carry/build-device
mkdir -p .carry/build-device
copy_built() {  # copy_built FIND-ARGS...: the matching files, paths kept
  (cd build-device && find "$@" -print0 | tar --null -T - -cf -) | tar -C .carry/build-device -xf -
}
copy_built . \( -name '*.p' -o -name 'meson-*' -o -name fuzz -o -path ./tests \) -prune -o \
  \( -type f -o -type l \) ! -name '*.a' ! -name '*.o' ! -name build.ninja ! -name '.ninja*' \
  ! -name compile_commands.json
copy_built "${device_tests[@]}" -name '*.p' -prune -o -type f ! -name '*.a'
du -sh build-device .carry/build-device

# The jitwarm wheel for the GPU machine's python3 (the torch venv, Python
# 3.12), which scripts/device-pip.sh installs there with pip alone: no
# build there, no compiler, no LD_LIBRARY_PATH. DEVICE_PYTHON names this machine's
# CPython of that version (pyenv's by default).
rm -rf .carry/wheels .carry/sysroot
scripts/build-wheel.sh "${DEVICE_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python3.12}" .carry/wheels
du -sh .carry/wheels/*
