#!/usr/bin/env bash
# Builds .carry/baseline: the launch-overhead bench of an earlier commit with
# its own core and plugins (a release build like scripts/device-bundle.sh's),
# so that scripts/device-run.sh's 'turns' section can run the old and the new
# launch path in turns in one command on the GPU machine.
#
#   scripts/device-baseline.sh f415e4b     # here, after scripts/device-bundle.sh
#   bash scripts/device-run.sh turns       # there
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/device-baseline.sh REVISION}
commit=$(git rev-parse --verify "$rev^{commit}")
tree=/tmp/jitwarm-baseline-${commit:0:12}
[[ -d "$tree" ]] || git worktree add --detach "$tree" "$commit" >/dev/null
meson_options=(--buildtype=release -Db_ndebug=false -Dhip=disabled -Dtests=false
  -Dexamples=false -Dpython=disabled)
[[ -f "$tree/build-baseline/build.ninja" ]] || meson setup "$tree/build-baseline" "$tree" "${meson_options[@]}" >/dev/null
ninja -C "$tree/build-baseline" bench/jitwarm-bench-launch-overhead \
  plugins/cuda/libjitwarm-cuda.so plugins/reference-cpu/libjitwarm-reference-cpu.so
# The bench finds its libjitwarm through its build-tree rpath ($ORIGIN/..):
# keep the paths, leave out objects and Meson's state.
rm -rf .carry/baseline
mkdir -p .carry/baseline
(cd "$tree/build-baseline" && find bench core plugins \( -name '*.p' -o -name 'meson-*' \) -prune \
  -o \( -type f -o -type l \) \( -name '*.so*' -o -name 'jitwarm-bench-launch-overhead' \) -print0 |
  tar --null -T - -cf -) | tar -C .carry/baseline -xf -
echo "$commit" > .carry/baseline/COMMIT
du -sh .carry/baseline
