#!/usr/bin/env bash
# Device run for issue 30's token kernels: variants, old vs new bench in turns, conformance.
set -u
cd "$(dirname "$0")"
B=$PWD/build-device
export LD_LIBRARY_PATH=$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export JITWARM_NO_CACHE_DIR=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
REF=$B/plugins/reference-cpu


nvidia-smi -L
SECONDS=0
bench() {  # bench ROUND SIDE DIR
  echo "-- round $1, $2" | tee -a "$OUT/bench.txt"
  JITWARM_PLUGIN_PATH=$REF:$3 timeout 90 $B/bench/jitwarm-bench-bandwidth --platform cuda \
    --iterations 30 2>/dev/null | tee -a "$OUT/bench.txt"
  echo "exit ${PIPESTATUS[0]} (${SECONDS}s)"
}
echo "== bench in turns: old = da96d0e's CUDA plugin, new = this tree's" | tee "$OUT/bench.txt"
bench 1 old $PWD/old-cuda
bench 1 new $B/plugins/cuda
{
  echo "== conformance (new)"
  export JITWARM_PLUGIN_PATH=$REF:$B/plugins/cuda
  timeout 70 $B/tools/jitwarm conformance --platform cuda --jobs 8 > "$OUT/conformance-cuda.txt" 2>&1
  echo "exit $? (${SECONDS}s)"; grep -iE "fail|error" "$OUT/conformance-cuda.txt" | head -20; tail -3 "$OUT/conformance-cuda.txt"
  timeout 60 $B/tools/jitwarm conformance --platform cuda --large --case '*large*' --jobs 2 >> "$OUT/conformance-cuda.txt" 2>&1
  echo "exit $? (${SECONDS}s)"; tail -3 "$OUT/conformance-cuda.txt"
}
{
  echo "== variants"
  timeout 60 ./token_kernel_variants --iterations 30 --rounds 3 > "$OUT/variants.txt" 2>&1
  echo "exit $? (${SECONDS}s)"; grep -E "FAIL|checks:" "$OUT/variants.txt" | head; sed -n '/iterations per timing/,$p' "$OUT/variants.txt"
}
bench 2 new $B/plugins/cuda
bench 2 old $PWD/old-cuda
{
  echo "== test_cuda_launch (new)"
  JITWARM_PLUGIN_PATH=$REF:$B/plugins/cuda timeout 60 $B/tests/gpu/test_cuda_launch > "$OUT/cuda-launch-test.txt" 2>&1
  echo "exit $? (${SECONDS}s)"; grep -B2 -A8 "ERROR" "$OUT/cuda-launch-test.txt" | head -30; tail -2 "$OUT/cuda-launch-test.txt"
}
