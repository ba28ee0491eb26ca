#!/usr/bin/env bash
# bench/run_ab_sm90.sh -- ONE device call for an A/B of sm_90a kernel builds made by bench/build_ab_sm90.sh:
#   bash bench/run_ab_sm90.sh BASE VARIANT [VARIANT ...]      (names of build-ab/*.so; outputs under $OUT)
# BASE "ws" is build-ws/libzyfa_capi.so (bench/build_sm90_ws.sh: the working tree's kernel), so that what goes to the
# GPU machine holds that library once.
# 1. bench/bench_sm90_ws.py with --interleave: BASE as zyfa_sm90a, each VARIANT, BASE again as zyfa_base2, SDPA
#    flash/cuDNN and FlashAttention-3 (the wheel in .offline/fa3/), every built-in head dim, causal and not, 2K-16K;
# 2. bench/ab_bitwise.py: every VARIANT against BASE, bit for bit.
# ZYFA_AB_DIMS, ZYFA_AB_REPS override the head dims (default "128,128 256,256 192,128 64,64") and repetitions (30).
# The GPU test suite of a build to be taken: build-ws/ with its headers and switches (here:
# NVCC="nvcc -Ibuild-wt/NAME/include -D..." bash bench/build_sm90_ws.sh), then bash bench/run_sm90_ws.sh test.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/zyfa_out}
mkdir -p "$OUT"
base=${1:?usage: run_ab_sm90.sh BASE VARIANT...}
shift
base_lib=build-ab/$base.so
[ "$base" = ws ] && base_lib=build-ws/libzyfa_capi.so
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader |
  tee "$OUT/gpu.txt"
if ls .offline/fa3/*.whl > /dev/null 2>&1; then
  python3 -m zipfile -e .offline/fa3/*.whl /tmp/fa3 && export PYTHONPATH=/tmp/fa3
fi
variants=() libs=()
for v in "$@"; do
  variants+=(--variant "$v=build-ab/$v.so")
  libs+=("build-ab/$v.so")
done
# shellcheck disable=SC2086
timeout 300 python3 bench/bench_sm90_ws.py --lib "$base_lib" "${variants[@]}" \
  --variant "zyfa_base2=$base_lib" --no-mma --interleave --reps "${ZYFA_AB_REPS:-30}" \
  --dims ${ZYFA_AB_DIMS:-128,128 256,256 192,128 64,64} --out "$OUT/bench" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"
grep "^d=" "$OUT/bench.log" | sed 's/ *max|.*//'
timeout 200 python3 bench/ab_bitwise.py "$base_lib" "${libs[@]}" > "$OUT/ab_bitwise.log" 2>&1
echo "ab_bitwise rc=$?"
tail -5 "$OUT/ab_bitwise.log"
