#!/usr/bin/env bash
# What the H200 run executes (build-device/ from scripts/device-bundle.sh is
# carried over). Writes its outputs under $OUT (at most 8 files come back);
# docs/results/cuda-h200.md records what it printed.
#
#   bash scripts/device-run.sh [SECTION...]   (default: all sections)
#
# Sections: check conformance example bandwidth tune tune-cli launch turns bandwidth-turns
# token-variants python fleet-start warmup trust ('turns' and 'bandwidth-turns'
# need .carry/baseline from scripts/device-baseline.sh; they, 'token-variants',
# 'fleet-start' and 'trust' are not in the default list; FLEET_ROUNDS sets
# fleet-start's rounds, 3 by default; FLEET_NO_COLD_ROUNDS=1 leaves
# the cold mode out of them)
set -u
# The slim copy scripts/device-bundle.sh carries (.carry/build-device).
[[ -e build-device ]] || ln -s .carry/build-device build-device
export LD_LIBRARY_PATH=$PWD/build-device/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export JITWARM_PLUGIN_PATH=$PWD/build-device/plugins/reference-cpu:$PWD/build-device/plugins/cuda
export PYTHONUNBUFFERED=1
# No per-user cache: every run compiles what it measures (warmups name their
# own --cache-dir, which wins over this).
export JITWARM_NO_CACHE_DIR=1
OUT=${OUT:-/tmp/jitwarm-out}
mkdir -p "$OUT"
J=build-device/tools/jitwarm
TIMEFORMAT='%R s'
sections=${*:-check conformance example bandwidth launch python warmup}
want() { [[ " $sections " == *" $1 "* ]]; }

if want check; then
  nvidia-smi -L; echo "cores: $(nproc)"; ldd $J | grep -i 'not found'
  $J plugins 2>&1 | grep -E 'platform|loaded|rejected'
  echo "== launch tests (tests/gpu)"
  build-device/tests/gpu/test_cuda_launch > "$OUT/cuda-launch-test.txt" 2>&1
  grep -B2 -A8 "ERROR" "$OUT/cuda-launch-test.txt" | head -40; tail -2 "$OUT/cuda-launch-test.txt"
  echo "== a child forked after a compile-only warmup uses CUDA"
  build-device/tests/gpu/test_cuda_fork_after_warmup; echo "exit code $?"
fi

if want conformance; then
  echo "== conformance"
  $J conformance --platform cuda --jobs 4 --json-file "$OUT/conformance-cuda.json" \
    > "$OUT/conformance-cuda.txt" 2>&1
  echo "exit code $?"; tail -3 "$OUT/conformance-cuda.txt"
  $J conformance --platform cuda --large --case '*large*' --jobs 2 \
    >> "$OUT/conformance-cuda.txt" 2>&1
  echo "exit code $?"; tail -3 "$OUT/conformance-cuda.txt"
fi

if want example; then
  # The example kernel from source (examples/kernels/scale), for real: its
  # descriptor's cases on the GPU against its CPU plugin, the oracle.
  echo "== the example kernel from source"
  JITWARM_PLUGIN_PATH=$JITWARM_PLUGIN_PATH:$PWD/build-device/examples/kernels \
    $J conformance --kernel-path examples/kernels/scale --kernel example.kernels.scale \
    --platform cuda --platform cpu -v > "$OUT/example-kernel.txt" 2>&1
  echo "exit code $?"; tail -12 "$OUT/example-kernel.txt"
fi

if want bandwidth; then
  # Kernels compiled the default way (NVRTC's --split-compile over every
  # thread) and on one thread each, side by side: splitting a compile must
  # not cost bandwidth.
  echo "== bandwidth (the defaults: each compile split over every thread)" | tee "$OUT/bench.txt"
  build-device/bench/jitwarm-bench-bandwidth --platform cuda --iterations 30 \
    2>/dev/null | tee -a "$OUT/bench.txt"
  echo "== bandwidth (JITWARM_CUDA_COMPILE_THREADS=1: one thread per compile)" | tee -a "$OUT/bench.txt"
  JITWARM_CUDA_COMPILE_THREADS=1 build-device/bench/jitwarm-bench-bandwidth --platform cuda \
    --iterations 30 2>/dev/null | tee -a "$OUT/bench.txt"
fi

if want tune; then
  # Tuning (docs/tuning.md): every kernel with its default config, then with
  # the tunable ones tuned on the bench's own arguments, in turns, beside
  # torch.compile's Inductor kernels for the same shapes on the same GPU.
  echo "== tuning: bandwidth with default configs and tuned, in turns" | tee "$OUT/tune.txt"
  for round in 1 2; do
    echo "-- round $round: default configs" | tee -a "$OUT/tune.txt"
    build-device/bench/jitwarm-bench-bandwidth --platform cuda --iterations 30 \
      2>/dev/null | tee -a "$OUT/tune.txt"
    echo "-- round $round: tuned (the winners below the table)" | tee -a "$OUT/tune.txt"
    build-device/bench/jitwarm-bench-bandwidth --platform cuda --iterations 30 --tune \
      2>"$OUT/tune-winners-$round.txt" | tee -a "$OUT/tune.txt"
    grep -B1 '^  on ' "$OUT/tune-winners-$round.txt" | tee -a "$OUT/tune.txt"
    echo "-- round $round: torch.compile" | tee -a "$OUT/tune.txt"
    python3 bench/torch_compile_compare.py --iterations 30 2>&1 | grep -v Warning | tee -a "$OUT/tune.txt"
  done
fi

if want tune-cli; then
  # `jitwarm tune` on the kernel set's [[tune]] tables into a cache, what it
  # stored (--show), a warmup that compiles the winners, and conformance
  # running the winners from that cache (docs/tuning.md).
  tc=$(mktemp -d)
  echo "== jitwarm tune (manifests/kernel-set.toml)" | tee "$OUT/tune-cli.txt"
  $J tune --manifest manifests/kernel-set.toml --cache-dir "$tc" 2>&1 | tee -a "$OUT/tune-cli.txt"
  echo "exit code ${PIPESTATUS[0]}" | tee -a "$OUT/tune-cli.txt"
  $J tune --show --manifest manifests/kernel-set.toml --cache-dir "$tc" >> "$OUT/tune-cli.txt" 2>&1
  echo "exit code $?" | tee -a "$OUT/tune-cli.txt"
  $J warmup --manifest manifests/kernel-set.toml --cache-dir "$tc" --jobs 4 --dry-run | grep -c '{' |
    sed 's/^/tuned keys in the warmup plan: /' | tee -a "$OUT/tune-cli.txt"
  $J warmup --manifest manifests/kernel-set.toml --cache-dir "$tc" --jobs 4 --quiet 2>&1 | tee -a "$OUT/tune-cli.txt"
  echo "== conformance with the tuned cache" | tee -a "$OUT/tune-cli.txt"
  $J conformance --platform cuda --jobs 4 --cache-dir "$tc" --json-file "$OUT/conformance-tuned.json" \
    > "$OUT/conformance-tuned.txt" 2>&1
  echo "exit code $?" | tee -a "$OUT/tune-cli.txt"; tail -3 "$OUT/conformance-tuned.txt" | tee -a "$OUT/tune-cli.txt"
  python3 -c '
import json, sys
results = json.load(open(sys.argv[1]))["results"]
tuned = [r for r in results if "{" in r.get("key", "")]
passed = sum(r["status"] == "pass" for r in tuned)
print(f"cases that ran a tuned config: {len(tuned)}, passed: {passed}")
for key in sorted({r["key"] for r in tuned}): print("  " + key)' "$OUT/conformance-tuned.json" 2>&1 | tee -a "$OUT/tune-cli.txt"
  rm -rf "$tc"
fi

if want launch; then
  # Host time per launch, side by side in one command: raw cuLaunchKernel,
  # jitwarm (C++ and C), signature + lookup, Triton's launcher.
  echo "== launch overhead" | tee "$OUT/launch.txt"
  for round in 1 2; do
    build-device/bench/jitwarm-bench-launch-overhead --platform cuda 2>&1 | tee -a "$OUT/launch.txt"
    python3 bench/triton_launch_overhead.py 2>&1 | tail -3 | tee -a "$OUT/launch.txt"
  done
  build-device/bench/jitwarm-bench-launch-overhead --platform cpu 2>&1 | tee -a "$OUT/launch.txt"
fi

if want turns; then
  # The launch path of an earlier commit (.carry/baseline, each side with its
  # own core, plugins and bench) and this one, in turns process by process,
  # so that each comparison is between neighbours on a drifting host.
  base=$PWD/.carry/baseline
  echo "== launch overhead in turns: old $(cat "$base/COMMIT") and new $(git rev-parse HEAD 2>/dev/null || echo this tree)" | tee "$OUT/launch-turns.txt"
  for round in 1 2 3; do
    for side in old:$base new:$PWD/build-device; do
      build=${side#*:}
      echo "-- round $round, ${side%%:*}" | tee -a "$OUT/launch-turns.txt"
      JITWARM_PLUGIN_PATH=$build/plugins/reference-cpu:$build/plugins/cuda \
        "$build/bench/jitwarm-bench-launch-overhead" --platform cuda 2>&1 | tee -a "$OUT/launch-turns.txt"
    done
  done
fi

if want trust; then
  # What verifying signatures costs at load (docs/operators.md, "Trust"):
  # every key of the kernel-set plan for this GPU loaded by fresh processes
  # from a warm loopback Redis (into memory, and into an empty disk cache)
  # and from the filled disk cache, each with and without the signing key
  # trusted, in turns round by round. The launch path itself is unchanged:
  # 'turns' (against .carry/baseline) times it.
  echo "== trust: load with and without signature verification" | tee "$OUT/trust.txt"
  command -v redis-server > /dev/null || echo "no redis-server here: the remote rows will fail" | tee -a "$OUT/trust.txt"
  port=$((20000 + RANDOM % 20000))
  redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no \
    --dir /tmp --daemonize yes --pidfile /tmp/jitwarm-trust-redis.pid > /dev/null
  sleep 1
  target=$($J plugins 2>/dev/null | grep -oE 'cuda:sm_[0-9a-z]+' | head -1)
  build-device/bench/jitwarm-bench-fleet-cache --remote-cache redis://127.0.0.1:$port/0 \
    --target "${target:-cuda:sm_90}" --rounds 7 --trust --json "$OUT/trust.json" 2>&1 \
    | tee -a "$OUT/trust.txt"
  echo "exit code ${PIPESTATUS[0]}"
  kill "$(cat /tmp/jitwarm-trust-redis.pid)"
fi

if want bandwidth-turns; then
  # The bandwidth bench with an earlier commit's CUDA plugin (.carry/baseline)
  # and this build's, in turns in one command. The plugin embeds the
  # kernels' sources and descriptors and links no libjitwarm, so the same
  # bench and core time the old kernels and the new ones.
  base=$PWD/.carry/baseline
  echo "== bandwidth in turns: old $(cat "$base/COMMIT")'s CUDA plugin and new $(git rev-parse HEAD 2>/dev/null || echo this tree)'s" | tee "$OUT/bandwidth-turns.txt"
  for round in 1 2; do
    for side in old:$base/plugins/cuda new:$PWD/build-device/plugins/cuda; do
      echo "-- round $round, ${side%%:*}" | tee -a "$OUT/bandwidth-turns.txt"
      JITWARM_PLUGIN_PATH=$PWD/build-device/plugins/reference-cpu:${side#*:} \
        build-device/bench/jitwarm-bench-bandwidth --platform cuda --iterations 30 \
        2>/dev/null | tee -a "$OUT/bandwidth-turns.txt"
    done
  done
fi

if want token-variants; then
  # The token kernels outside jitwarm (bench/token_kernel_variants.cu, built
  # here with nvcc): checks against a CPU reference, then launch variants
  # beside a copy.
  echo "== token kernel variants" | tee "$OUT/token-variants.txt"
  nvcc -O3 -std=c++17 -arch=sm_90 -I plugins/common/kernels bench/token_kernel_variants.cu \
    -o /tmp/token_kernel_variants && /tmp/token_kernel_variants --iterations 30 --rounds 5 \
    2>&1 | tee -a "$OUT/token-variants.txt"
  echo "exit code ${PIPESTATUS[0]}"
fi

if want python; then
  # The wheel built on the build machine (.carry/wheels, scripts/device-bundle.sh),
  # installed with pip alone, as a user of this torch venv would: no
  # build here, no compiler, no LD_LIBRARY_PATH (unset for the whole
  # section). NVRTC comes from torch's nvidia packages or the CUDA toolkit.
  echo "== Python: the wheel built for this machine's python3 (the torch venv), installed with pip" | tee "$OUT/python.txt"
  if site=$(env -u LD_LIBRARY_PATH bash scripts/device-pip.sh /tmp/jitwarm-site 2>>"$OUT/python-install.txt"); then
    tail -2 "$OUT/python-install.txt" | tee -a "$OUT/python.txt"
    ls -l .carry/wheels/*.whl | tee -a "$OUT/python.txt"
    # Each test's reference plugin: the wheel's own, alone in a directory.
    reference=/tmp/jitwarm-reference-plugin
    rm -rf "$reference" && mkdir -p "$reference"
    cp "$site/jitwarm/lib/jitwarm/plugins/libjitwarm-reference-cpu.so" "$reference/"
    (
      export PYTHONPATH=$site
      unset LD_LIBRARY_PATH JITWARM_PLUGIN_PATH
      for elf in "$site"/jitwarm/_jitwarm*.so "$site"/jitwarm/lib/libjitwarm.so \
                 "$site"/jitwarm/lib/jitwarm/plugins/*.so "$site"/jitwarm/bin/jitwarm; do
        echo "$(basename "$elf"): $(ldd "$elf" | awk '{print ($3 ~ /^\// ? $3 : $1)}' | tr '\n' ' ')"
      done | tee -a "$OUT/python.txt"
      python3 -c 'import os, torch, jitwarm; print("jitwarm from", jitwarm.__file__); print(jitwarm.install_location()); print("JITWARM_VENDOR_LIBRARY_PATH=" + os.environ.get("JITWARM_VENDOR_LIBRARY_PATH", "")); print(jitwarm.Runtime().load_plugins().to_text())' 2>&1 | tee -a "$OUT/python.txt"
      "$site/jitwarm/bin/jitwarm" plugins 2>&1 | grep -E "searched|loaded|platform cuda|CPUs" | tee -a "$OUT/python.txt"
      python3 bench/python_launch_overhead.py --platform all 2>&1 | tee -a "$OUT/python.txt"
      python3 bench/torch_query_costs.py 2>&1 | tee -a "$OUT/python.txt"
      # The whole package suite under this Python (3.12, NumPy 2, torch),
      # test_torch_cuda.py included: here it launches for real. The plugin
      # path is the package's own plugin directory; the fake plugins of
      # the loader tests are the build's (they link nothing but libstdc++).
      JITWARM_PLUGIN_PATH=$site/jitwarm/lib/jitwarm/plugins \
      JITWARM_TEST_REFERENCE_PLUGIN_DIR=$reference \
      JITWARM_TEST_FAKE_PLUGIN_DIR=$PWD/build-device/tests/plugins \
      JITWARM_TEST_SOURCE_ROOT=$PWD JITWARM_LOG_LEVEL=error \
        python3 -m pytest -q -p no:cacheprovider -rs tests/python 2>&1 | tail -15 | tee -a "$OUT/python.txt"
      python3 bench/triton_bridge_check.py 2>&1 | tail -25 | tee -a "$OUT/python.txt"
      # One cache for Triton's kernels and jitwarm's: tuned on the GPU, warmed
      # with the GPU hidden, one bundle, a fleet node that compiles nothing.
      python3 bench/triton_cache_check.py 2>&1 | tail -25 | tee -a "$OUT/python.txt"
    )
  else
    echo "pip could not install the wheel:"; tail -30 "$OUT/python-install.txt"
  fi
fi

if want fleet-start; then
  # A fleet node ready (issue 51): a fresh process from import to every
  # Triton specialization launched once and jitwarm's kernel set loaded, from
  # Triton's own cache, jitwarm's disk tier, a bundle, and cold, in turns
  # (bench/triton_fleet_start.py). The wheel, installed as in 'python'.
  echo "== a fleet node ready: Triton's cache, jitwarm's disk tier, a bundle, cold" | tee "$OUT/fleet-start.txt"
  if site=$(env -u LD_LIBRARY_PATH bash scripts/device-pip.sh /tmp/jitwarm-site 2>>"$OUT/python-install.txt"); then
    (
      export PYTHONPATH=$site
      unset LD_LIBRARY_PATH JITWARM_PLUGIN_PATH JITWARM_NO_CACHE_DIR
      python3 bench/triton_fleet_start.py --rounds "${FLEET_ROUNDS:-3}" ${FLEET_NO_COLD_ROUNDS:+--no-cold-rounds} --json-file "$OUT/fleet-start.json" 2>&1 |
        tee -a "$OUT/fleet-start.txt"
    )
  else
    echo "pip could not install the wheel:"; tail -30 "$OUT/python-install.txt"
  fi
fi

if want warmup; then
  echo "== warmup of manifests/kernel-set.toml for sm_90 (169 keys, cold cache each time)"
  timed() {  # timed MANIFEST ARGS...: a warmup for sm_90 into /tmp/jwc, its summary and time
    { time $J warmup --manifest "$1" --target cuda:sm_90 --cache-dir /tmp/jwc --quiet "${@:2}" \
        | grep keys:; } 2>&1 | tr '\n' ' '; echo
  }
  cold() {  # cold LABEL MANIFEST ARGS...: the same from a cold cache, labelled
    local label=$1; shift
    rm -rf /tmp/jwc
    echo -n "$label: "
    timed "$@"
  }
  warm() {  # warm LABEL ARGS...: one cold warmup of the kernel set
    local label=$1; shift
    cold "$label" manifests/kernel-set.toml "$@"
  }
  {
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\))'
    # Before the compile work of issue 14: one key per program, one thread
    # per compile.
    JITWARM_CUDA_COMPILE_THREADS=1 warm "before, jobs=1 batch=1" --jobs 1 --batch 1
    JITWARM_CUDA_COMPILE_THREADS=1 warm "before, jobs=16 processes batch=1" --jobs 16 --batch 1
    warm "jobs=1" --jobs 1
    warm "jobs=1 batch=16" --jobs 1 --batch 16
    warm "jobs=8 threads" --jobs 8 --parallel threads
    warm "jobs=16 threads" --jobs 16 --parallel threads
    warm "jobs=8 processes" --jobs 8
    warm "jobs=16 processes" --jobs 16
    warm "jobs=16 processes batch=2" --jobs 16 --batch 2
    # Where the 16 workers' time goes: each unit's end (debug log).
    rm -rf /tmp/jwc
    JITWARM_LOG_LEVEL=debug $J warmup --manifest manifests/kernel-set.toml --target cuda:sm_90 \
      --cache-dir /tmp/jwc --quiet --jobs 16 2>&1 | grep -E 'warmup: .* took|keys:' > "$OUT/warmup-schedule.txt"
    echo "jobs=16 processes, with its schedule logged: $(grep keys: "$OUT/warmup-schedule.txt")"
    echo -n "warm cache: "
    timed manifests/kernel-set.toml
  } | tee "$OUT/warmup.txt"
  # The host's speed drifts within one command: serial and 16 processes in
  # turns, so each ratio compares neighbours.
  # "threads=1": one thread per compile (JITWARM_CUDA_COMPILE_THREADS=1),
  # the serial baseline; the default splits each compile over every thread.
  echo "== in turns: serial on one thread, serial, 16 processes, four rounds" | tee "$OUT/warmup-turns.txt"
  for round in 1 2 3 4; do
    JITWARM_CUDA_COMPILE_THREADS=1 warm "round $round jobs=1 threads=1" --jobs 1
    warm "round $round jobs=1" --jobs 1
    warm "round $round jobs=16" --jobs 16
  done | tee -a "$OUT/warmup-turns.txt"
  echo "== cold compile: Triton vs jitwarm, the same 18 silu_and_mul specializations" | tee -a "$OUT/warmup.txt"
  python3 bench/triton_compare.py 2>&1 | tail -1 | tee -a "$OUT/warmup.txt"
  # One of the 18 alone: what jitwarm's first specialization costs.
  sed 's/"float16", "float32"//; s/aligned = \[true, false\]/aligned = [true]/; s/H = \[16, 17, 1\]/H = [16]/' \
    bench/silu_and_mul.toml > /tmp/silu-one.toml
  cold "jitwarm, the first of them alone" /tmp/silu-one.toml --jobs 1 | tee -a "$OUT/warmup.txt"
  JITWARM_CUDA_COMPILE_THREADS=1 cold "jitwarm, the first of them alone, threads=1" \
    /tmp/silu-one.toml --jobs 1 | tee -a "$OUT/warmup.txt"
  for spec in "1 8" "1 18" "1 1" "16 8"; do
    set -- $spec
    cold "jitwarm --jobs $1 --batch $2" bench/silu_and_mul.toml --jobs $1 --batch $2 | tee -a "$OUT/warmup.txt"
  done
  JITWARM_CUDA_COMPILE_THREADS=1 cold "jitwarm --jobs 1 --batch 8, threads=1" \
    bench/silu_and_mul.toml --jobs 1 | tee -a "$OUT/warmup.txt"
fi
