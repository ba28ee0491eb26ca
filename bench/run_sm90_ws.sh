#!/usr/bin/env bash
# bench/run_sm90_ws.sh -- ONE device call for the sm_90a pipeline: GPU test suite with the sm_90a kernel dispatched,
# compute-sanitizer memcheck on the small subset, benchmark against SDPA flash/cuDNN and FlashAttention-3.
#   bash bench/run_sm90_ws.sh [test|bench|all]   (outputs under $OUT)
# ZYFA_NCU=1: Nsight Compute summaries of one causal and one non-causal hd128 call; ZYFA_NCU=source: stall samples per
# SASS instruction of zyfa and FA3 (hd128 causal, seqlen 16K or ZYFA_NCU_SEQLEN, 16K tokens), bench/loop_segments.py's
# cycles per key tile (by group and by stall reason) and per work tile (--work-tile), and each kernel's Nsight Compute
# details page (details_*.csv).
# Uses build-ws/ built here by bench/build_sm90_ws.sh (rebuilt on the GPU machine when the carried binaries do not
# start) and, when present, the FA3 wheel in .offline/fa3/ (unpacked to /tmp/fa3, no network needed).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/zyfa_out}
mkdir -p "$OUT"
MODE=${1:-all}
export PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader; } | tee "$OUT/run.log"
if ! ./build-ws/test_flash_attn_ws -ltc > /dev/null 2>&1 || ! python3 -c "import ctypes; ctypes.CDLL('build-ws/libzyfa_capi.so')" 2>/dev/null; then
  echo "carried binaries do not start: building here" | tee -a "$OUT/run.log"
  NVCC=nvcc bash bench/build_sm90_ws.sh 2>&1 | tail -3
fi
mkdir -p build-gpu/activations
for f in data/activations/*/layer*_[qkv].npy.gz; do
  m=$(basename "$(dirname "$f")"); gunzip -c "$f" > "build-gpu/activations/${m}_$(basename "$f" .gz)"
done
if [ "$MODE" != bench ]; then
  timeout 40 ./build-ws/test_flash_attn_ws -tc='small: built-in*' > "$OUT/smoke.log" 2>&1
  rc=$?; echo "smoke rc=$rc" | tee -a "$OUT/run.log"; tail -5 "$OUT/smoke.log"
  if [ $rc -ne 0 ]; then grep -E "case|ERROR|FAIL" "$OUT/smoke.log" | head -30; exit 1; fi
  timeout 240 ./build-ws/test_flash_attn_ws > "$OUT/test.log" 2>&1
  echo "gpu test rc=$?" | tee -a "$OUT/run.log"; grep -E "ERROR|FAILED|test cases|assertions" "$OUT/test.log" | head -30
  timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 ./build-ws/test_flash_attn_ws -tc='small: built-in*,small: causal*,small: Inf*' > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?" | tee -a "$OUT/run.log"; tail -3 "$OUT/memcheck.log"
  for tool in racecheck synccheck; do
    timeout 30 compute-sanitizer --tool $tool --error-exitcode 9 ./build-ws/test_flash_attn_ws -tc='small: built-in*' > "$OUT/$tool.log" 2>&1
    echo "$tool rc=$?" | tee -a "$OUT/run.log"; tail -2 "$OUT/$tool.log"
  done
fi
if ls .offline/fa3/*.whl > /dev/null 2>&1; then  # FA3 for the benchmark and the source-level profile
  python3 -m zipfile -e .offline/fa3/*.whl /tmp/fa3 && export PYTHONPATH=/tmp/fa3
fi
if [ "$MODE" != test ]; then
  timeout ${ZYFA_BENCH_TIMEOUT:-70} python3 bench/bench_sm90_ws.py --lib build-ws/libzyfa_capi.so --out "$OUT" ${ZYFA_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
  echo "bench rc=${PIPESTATUS[0]}" | tee -a "$OUT/run.log"
fi
if [ "${ZYFA_NCU:-0}" = source ]; then
  sl=${ZYFA_NCU_SEQLEN:-16384}
  for who in zyfa fa3; do
    if [ $who = fa3 ]; then args="fa3 $sl"; kern=regex:device_kernel; else args="0 $sl"; kern=regex:fwd_kernel_ws; fi
    timeout 150 ncu --clock-control none --set full --import-source no -k $kern --launch-count 1 -o "$OUT/ncu_$who" \
      python3 bench/profile_ws.py build-ws/libzyfa_capi.so 1 $args > "$OUT/ncu_run_$who.log" 2>&1
    echo "ncu source $who rc=$?" | tee -a "$OUT/run.log"
    ncu -i "$OUT/ncu_$who.ncu-rep" --page source --csv --print-source sass > "$OUT/src_$who.csv" 2> /dev/null
    ncu -i "$OUT/ncu_$who.ncu-rep" --page details --csv > "$OUT/details_$who.csv" 2> /dev/null  # L2, DRAM, clocks
    rm -f "$OUT/ncu_$who.ncu-rep"
  done
  python3 bench/loop_segments.py "$OUT/src_zyfa.csv" "$OUT/src_fa3.csv" | tee "$OUT/loop_segments.txt"
  python3 bench/loop_segments.py --reasons "$OUT/src_zyfa.csv" "$OUT/src_fa3.csv" | tee -a "$OUT/loop_segments.txt"
  python3 bench/loop_segments.py --work-tile "$OUT/src_zyfa.csv" "$OUT/src_fa3.csv" >> "$OUT/loop_segments.txt"
fi
if [ "${ZYFA_NCU:-0}" = 1 ]; then  # Nsight Compute on one causal and one non-causal hd128 call
  for causal in 1 0; do
    timeout 25 ncu --clock-control none -k regex:fwd_kernel_ws --launch-count 1 --section SpeedOfLight \
      --section WarpStateStats --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active \
      python3 bench/profile_ws.py build-ws/libzyfa_capi.so $causal >> "$OUT/ncu.txt" 2>&1
    echo "ncu causal=$causal rc=$?" | tee -a "$OUT/run.log"
  done
fi
