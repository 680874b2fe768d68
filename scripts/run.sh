#!/usr/bin/env bash
# One entry point for the README's two commands and CI.
#
#   scripts/run.sh main   install what is missing, build, install, then load
#                         the bundled plugins, warm the kernel set and run
#                         conformance on what this machine supports
#   scripts/run.sh test   install what is missing, then build and run the
#                         whole suite: a warnings-as-errors build, an
#                         ASan+UBSan build (without suite 'heavy') that
#                         also fuzzes each fuzz target for a bounded time,
#                         and ThreadSanitizer on the concurrent modules;
#                         prints the time per build, then "N passed, N
#                         failed" last
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
# Meson compiles through ccache when it is installed: the test suite's pip
# build of the package (tests/install/test_venv.py) then reuses build-ci's
# objects. Its builds differ in their directory only, which debug
# information records: leave it out of ccache's hash.
export CCACHE_NOHASHDIR=1

install_packages() {
  local missing=()
  while read -r pkg; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done < scripts/debian-packages.txt
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

configure() {  # configure DIR [meson options...]
  local dir=$1
  shift
  if [[ -f "$dir/build.ninja" ]]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

main_job() {
  install_packages
  echo "== build (release) and install"
  configure build --buildtype=release --prefix=/usr/local -Dtests=false
  ninja -C build -j"$jobs"
  meson install -C build --quiet
  ldconfig
  local jw=/usr/local/bin/jitwarm
  echo "== jitwarm plugins"
  "$jw" plugins
  local platforms
  platforms=$("$jw" plugins --json | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["platforms"]))')
  echo "== warm the kernel set"
  for p in $platforms; do
    case $p in
      cpu) "$jw" warmup --manifest manifests/kernel-set.toml --platform cpu ;;
      cuda) "$jw" warmup --manifest manifests/kernel-set.toml --target "$(target_for cuda sm_90)" --jobs "$jobs" ;;
      hip) "$jw" warmup --manifest manifests/kernel-set.toml --target hip:gfx90a --target hip:gfx942 --jobs "$jobs" ;;
    esac
  done
  echo "== conformance (compile-only for platforms without a device here)"
  local targets
  targets=$("$jw" plugins --json | python3 -c '
import json, sys
defaults = {"cuda": ["sm_90"], "hip": ["gfx90a", "gfx942"]}
for p in json.load(sys.stdin)["platforms"]:
    if not (p["can_launch"] and p["devices"] > 0):
        for arch in defaults.get(p["name"], []):
            print("--target", p["name"] + ":" + arch)')
  # shellcheck disable=SC2086
  "$jw" conformance --jobs "$jobs" $targets
}

# The target of device 0 when the platform can launch, else the default.
target_for() {
  /usr/local/bin/jitwarm plugins --json | python3 -c '
import json, sys
name, fallback = sys.argv[1], sys.argv[2]
for p in json.load(sys.stdin)["platforms"]:
    if p["name"] == name and p["can_launch"] and p["devices"] > 0:
        print(""); sys.exit(0)
print(name + ":" + fallback)' "$1" "$2"
}

# What a build's ninja builds by default, less the programs that only tests
# of suite 'heavy' run (printed one per line, for ninja).
targets_but_heavy_only() {
  local dir=$1
  python3 - "$dir" <<'PY'
import json, os, subprocess, sys
build = os.path.abspath(sys.argv[1])
def introspect(what):
    return json.loads(subprocess.check_output(["meson", "introspect", build, what]))
heavy, light, needed = set(), set(), set()
for test in introspect("--tests"):
    if any(s.split(":")[-1] == "heavy" for s in test["suite"]):
        heavy.add(test["cmd"][0])
    else:
        light.add(test["cmd"][0])
        needed.update(test["depends"])
heavy_only = heavy - light
for target in introspect("--targets"):
    if not (target["build_by_default"] or target["id"] in needed):
        continue
    for path in target["filename"]:
        if path not in heavy_only:
            print(os.path.relpath(path, build))
PY
}

# "4m07s" for a number of seconds.
duration() {
  printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
}

test_job() {
  install_packages
  # file:line in the sanitizers' reports (llvm-19, scripts/debian-packages.txt).
  local symbolizer=/usr/lib/llvm-19/bin/llvm-symbolizer
  local logs=() times=() start
  rm -f build-{ci,asan,tsan}/meson-logs/testlog.json  # never count an old run
  echo "== build-ci: warnings as errors"
  # -Og -g1: GCC's warnings that need optimization (-Wmaybe-uninitialized)
  # at a fifth less compile time than -O1 on the CI's 2 cores, with line
  # tables left for crash reports. The heavy tests' time is NVRTC's,
  # hiprtc's and clang's, which this does not change.
  start=$SECONDS
  configure build-ci -Dwerror=true -Doptimization=g -Ddebug=false -Dcpp_args=-g1 ||
    echo "== build-ci: CONFIGURE FAILED"
  # A failed build still ends in the counts line: its missing log counts as
  # a failure.
  ninja -C build-ci -j"$jobs" || echo "== build-ci: BUILD FAILED"
  local built=$SECONDS
  # Twice the cores: a few tests mostly wait (a plugin probe's deadline, a
  # child that hangs on purpose) and would hold a slot.
  meson test -C build-ci --num-processes $((2 * jobs)) --print-errorlogs || true
  logs+=(build-ci/meson-logs/testlog.json)
  times+=("build-ci    build $(duration $((built - start))), tests $(duration $((SECONDS - built)))")

  echo "== build-asan: AddressSanitizer + UndefinedBehaviorSanitizer, and the fuzzers"
  # clang 19 (half GCC's compile time under these sanitizers) at -O0 (half
  # clang's -O1), linked by lld. Its core is also instrumented for
  # libFuzzer's coverage (-Dfuzz=enabled, fuzz/meson.build), so the same
  # objects serve the tests and the fuzzers, each fuzzed for 20 s (suite
  # fuzz-run). Suite 'heavy' (the NVRTC and HIP kernel matrices, the CUDA
  # and HIP compile-only conformance runs, the conformance runner's --large
  # cases) spends its time inside NVRTC, hiprtc and clang, which ASan does
  # not instrument, or in filling large buffers: it ran in build-ci above,
  # is not run again here, and the programs only it runs are not built. The
  # plugin code it drives runs under ASan in the lighter gpu-compile tests.
  # No Python extension: its tests cannot run under ASan
  # (tests/python/meson.build says why).
  start=$SECONDS
  # clang's UBSan runs two checks GCC's (this build's compiler until now)
  # never ran: function (off only for the two tests that call the CUDA
  # driver through pointer types of their own, tests/gpu/meson.build) and
  # enum (jitwarm.h's enums have a fixed underlying type in C++, so the
  # tests' out-of-range values in the C ABI's enum fields are values of
  # their types).
  CC=clang-19 CXX=clang++-19 CC_LD=lld CXX_LD=lld configure build-asan -Dwerror=true \
    -Doptimization=0 -Ddebug=false \
    -Dcpp_args=-g1 -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbench=false -Dexamples=false -Dpython=disabled \
    -Dfuzz=enabled -Dfuzz_seconds=20 || echo "== build-asan: CONFIGURE FAILED"
  local asan_targets
  mapfile -t asan_targets < <(targets_but_heavy_only build-asan)
  ninja -C build-asan -j"$jobs" "${asan_targets[@]}" || echo "== build-asan: BUILD FAILED"
  built=$SECONDS
  # intercept_tls_get_addr=0: the sanitizer runtime takes a dynamic TLS
  # block that happens to start 16 bytes past a page boundary for a pre-2.19
  # glibc header and reads a bogus range from before it; LeakSanitizer's
  # tracer then faults scanning it at exit ("Tracer caught signal 11"), a
  # SIGABRT after every test case passed, now and then, in the tests that
  # load NVRTC and comgr; tests/sanitizer meets it every time. Leaks are
  # still found: glibc mallocs those blocks and each thread's DTV points at
  # them (the suite reports no new leak).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 \
  LSAN_OPTIONS=suppressions=$here/tests/lsan.supp:print_suppressions=0 \
  ASAN_SYMBOLIZER_PATH=$symbolizer \
  UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_summary=1:print_stacktrace=1:external_symbolizer_path=$symbolizer \
    meson test -C build-asan --no-rebuild --num-processes $((2 * jobs)) --print-errorlogs \
      --timeout-multiplier 3 --no-suite heavy || true
  logs+=(build-asan/meson-logs/testlog.json)
  times+=("build-asan  build $(duration $((built - start))), tests $(duration $((SECONDS - built)))")

  echo "== build-tsan: ThreadSanitizer on the registry, compile cache, remote cache, runtime and launch memo"
  # clang 19 at -O0, linked by lld, as build-asan.
  start=$SECONDS
  CC=clang-19 CXX=clang++-19 CC_LD=lld CXX_LD=lld configure build-tsan -Doptimization=0 \
    -Ddebug=false -Dcpp_args=-g1 -Db_sanitize=thread -Db_lundef=false \
    -Dbench=false -Dexamples=false -Dpython=disabled || echo "== build-tsan: CONFIGURE FAILED"
  # The remote cache's tests warm the kernel set on the CPU reference too.
  local tsan_tests=(unit-registry unit-compile_cache unit-runtime unit-remote_cache
    unit-last_result_memo)
  ninja -C build-tsan -j"$jobs" tests/unit/test_registry tests/unit/test_compile_cache \
    tests/unit/test_runtime tests/unit/test_remote_cache tests/unit/test_last_result_memo \
    tests/plugins/libjitwarm-fake-good.so \
    tests/plugins/batches/libjitwarm-fake-batches.so \
    plugins/reference-cpu/libjitwarm-reference-cpu.so || echo "== build-tsan: BUILD FAILED"
  built=$SECONDS
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:external_symbolizer_path=$symbolizer \
    meson test -C build-tsan --no-rebuild --print-errorlogs --timeout-multiplier 4 "${tsan_tests[@]}" || true
  logs+=(build-tsan/meson-logs/testlog.json)
  times+=("build-tsan  build $(duration $((built - start))), tests $(duration $((SECONDS - built)))")

  echo "== time per build"
  printf '%s\n' "${times[@]}"
  python3 scripts/count_results.py "${logs[@]}"
}

case "${1:-}" in
  main) main_job ;;
  test) test_job ;;
  *) echo "usage: scripts/run.sh main|test" >&2; exit 2 ;;
esac
