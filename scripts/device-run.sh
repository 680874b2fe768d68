#!/usr/bin/env bash
# What the H200 run executes (build-device/ from scripts/device-bundle.sh is
# carried over). Writes its outputs under $OUT; docs/results/cuda-h200.md
# records what it printed.
set -u
export LD_LIBRARY_PATH=$PWD/build-device/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export JITWARM_PLUGIN_PATH=$PWD/build-device/plugins/reference-cpu:$PWD/build-device/plugins/cuda
OUT=${OUT:-/tmp/jitwarm-out}
mkdir -p "$OUT"
J=build-device/tools/jitwarm
TIMEFORMAT='%R s'
nvidia-smi -L; echo "cores: $(nproc)"; ldd $J | grep -i 'not found'
$J plugins 2>&1 | grep -E 'platform|loaded|rejected'
echo "== launch tests (tests/gpu)"; build-device/tests/gpu/test_cuda_launch 2>&1 | tail -2
echo "== conformance"
$J conformance --platform cuda --jobs 4 --json-file "$OUT/conformance-cuda.json" \
  --junit "$OUT/conformance-cuda.xml" > "$OUT/conformance-cuda.txt" 2>&1
echo "exit code $?"; tail -3 "$OUT/conformance-cuda.txt"
$J conformance --platform cuda --large --case '*large*' --jobs 2 \
  --json-file "$OUT/conformance-cuda-large.json" > "$OUT/conformance-cuda-large.txt" 2>&1
echo "exit code $?"; tail -3 "$OUT/conformance-cuda-large.txt"
echo "== bandwidth"
build-device/bench/jitwarm-bench-bandwidth --platform cuda --iterations 30 \
  --json "$OUT/bench.json" 2>/dev/null | tee "$OUT/bench.txt"
echo "== warmup of manifests/kernel-set.toml for sm_90 (cold cache each time)"
for spec in "1 processes" "4 threads" "8 threads" "16 threads" "4 processes" "8 processes" "16 processes"; do
  set -- $spec
  rm -rf /tmp/jwc
  echo -n "jobs=$1 $2: "
  { time $J warmup --manifest manifests/kernel-set.toml --target cuda:sm_90 --cache-dir /tmp/jwc \
      --jobs "$1" --parallel "$2" --quiet | tail -1; } 2>&1 | tr '\n' ' '; echo
done | tee "$OUT/warmup-scaling.txt"
echo -n "warm cache: " | tee -a "$OUT/warmup-scaling.txt"
{ time $J warmup --manifest manifests/kernel-set.toml --target cuda:sm_90 --cache-dir /tmp/jwc --quiet | tail -1; } 2>&1 | tr '\n' ' ' | tee -a "$OUT/warmup-scaling.txt"; echo
echo "== cold compile: Triton vs jitwarm, the same 18 silu_and_mul specializations"
python3 bench/triton_compare.py 2>&1 | tail -1 | tee "$OUT/triton-compare.txt"
for jobs in 1 16; do
  rm -rf /tmp/jwc-silu
  echo -n "jitwarm --jobs $jobs: " | tee -a "$OUT/triton-compare.txt"
  $J warmup --manifest bench/silu_and_mul.toml --target cuda:sm_90 --cache-dir /tmp/jwc-silu \
    --jobs $jobs --quiet | tail -1 | tee -a "$OUT/triton-compare.txt"
done
