#!/usr/bin/env bash
# bench/run_fp8_sm90.sh -- ONE GPU-machine call for the sm_90a FP8 kernel: its GPU test against the FP8
# specification (and compute-sanitizer on a subset), then the benchmark and accuracy run (bench/bench_fp8_sm90.py)
# against FlashAttention-3 FP8 and the BF16 peers.
#   bash bench/run_fp8_sm90.sh [test|bench|all|mainjob]   (outputs under $OUT; mainjob: examples/run_prefill.sh)
# Uses build-fp8/ built by bench/build_fp8_sm90.sh (rebuilt here when the carried binaries do not start) and, when
# present, the FA3 wheel in .offline/fa3/ (unpacked to /tmp/fa3, no network needed).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/zyfa_out}
mkdir -p "$OUT"
MODE=${1:-all}
export PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader; } | tee "$OUT/run.log"
if ! ./build-fp8/test_fp8_sm90 -ltc > /dev/null 2>&1 || ! python3 -c "import ctypes; ctypes.CDLL('build-fp8/libzyfa_capi.so')" 2>/dev/null; then
  echo "carried binaries do not start: building here" | tee -a "$OUT/run.log"
  NVCC=nvcc bash bench/build_fp8_sm90.sh 2>&1 | tail -3
fi
if [ "$MODE" = test ] || [ "$MODE" = all ]; then
  timeout ${ZYFA_TEST_TIMEOUT:-240} ./build-fp8/test_fp8_sm90 ${ZYFA_TEST_ARGS:-} > "$OUT/test_fp8.log" 2>&1
  echo "fp8 gpu test rc=$?" | tee -a "$OUT/run.log"; grep -E "ERROR|FAILED|test cases|assertions" "$OUT/test_fp8.log" | head -30
  if [ "${ZYFA_SANITIZE:-1}" = 1 ]; then
    for tool in memcheck racecheck synccheck; do
      timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 ./build-fp8/test_fp8_sm90 -tc='P codes*' > /tmp/$tool.log 2>&1
      echo "$tool rc=$?" | tee -a "$OUT/run.log"; tail -3 /tmp/$tool.log | tee -a "$OUT/sanitizer.log"
    done
  fi
fi
if [ "$MODE" = bench ] || [ "$MODE" = all ]; then
  if ls .offline/fa3/*.whl > /dev/null 2>&1; then
    python3 -m zipfile -e .offline/fa3/*.whl /tmp/fa3 && export PYTHONPATH=/tmp/fa3
  fi
  if ls .offline/cudnn_fe/*.whl > /dev/null 2>&1; then  # cudnn-frontend: cuDNN's FP8 forward as a peer
    python3 -m zipfile -e .offline/cudnn_fe/*.whl /tmp/cudnn_fe && export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/cudnn_fe
  fi
  timeout ${ZYFA_BENCH_TIMEOUT:-200} python3 bench/bench_fp8_sm90.py --lib build-fp8/libzyfa_capi.so --out "$OUT" ${ZYFA_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
  echo "bench rc=${PIPESTATUS[0]}" | tee -a "$OUT/run.log"
fi
if [ "$MODE" = mainjob ]; then  # the main job on the GPU (the FP8 line: "FP8 on the GPU ...")
  ZARGS="-DZYFA_BUILD_TESTS=OFF"
  if [ ! -f /usr/include/zlib.h ] && [ -f .offline/zlib/include/zlib.h ]; then
    LIBZ=$(ldconfig -p | sed -n 's/.*libz\.so\.1 .*=> \(.*\)/\1/p' | head -1)
    ZARGS+=" -DZLIB_INCLUDE_DIR=$PWD/.offline/zlib/include -DZLIB_LIBRARY=$LIBZ"
  fi
  ZYFA_CMAKE_ARGS="$ZARGS" ZYFA_BUILD_DIR=build-gpu/prefill ZYFA_OUT_DIR="$OUT/prefill" timeout ${ZYFA_MAIN_TIMEOUT:-300} \
    bash examples/run_prefill.sh > "$OUT/prefill.log" 2>&1
  echo "main job (run_prefill.sh) rc=$?" | tee -a "$OUT/run.log"
  grep -E "^backend|^SUMMARY|^FP8 on the GPU|^\|" "$OUT/prefill.log" | tail -20
fi
if [ "${ZYFA_NCU:-0}" = 1 ]; then
  timeout 120 ncu --clock-control none -k regex:^fwd_kernel$ --launch-count 1 --section SpeedOfLight --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section SchedulerStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed.sum \
    python3 bench/bench_fp8_sm90.py --lib build-fp8/libzyfa_capi.so --out /tmp/ncu_out --dims 128,128 --seqlens 8192 --reps 1 --activations none > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$?" | tee -a "$OUT/run.log"
fi
