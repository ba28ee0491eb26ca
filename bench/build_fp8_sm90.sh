#!/usr/bin/env bash
# bench/build_fp8_sm90.sh -- builds what bench/run_fp8_sm90.sh runs on the GPU machine, into build-fp8/ (here, or
# there when the carried binaries do not start): the FP8 GPU test (tests/gpu/test_fp8_sm90.cu) and the benchmark's C
# entry point (bench/zyfa_capi.cu, BF16 and FP8). Needs nvcc 13 and doctest.h in .offline/doctest
# (bench/prepare_offline.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build-fp8
NVCC=${NVCC:-nvcc}
FLAGS="-std=c++17 -gencode=arch=compute_90a,code=sm_90a -DZYFA_BF16_SM90_WS=1 -Iinclude -Xptxas -v"
$NVCC $FLAGS -O2 -I.offline tests/gpu/test_fp8_sm90.cu -o build-fp8/test_fp8_sm90 > build-fp8/build_test.log 2>&1 &
$NVCC $FLAGS -O3 -shared -Xcompiler -fPIC bench/zyfa_capi.cu -o build-fp8/libzyfa_capi.so > build-fp8/build_capi.log 2>&1 &
rc=0
wait -n || rc=1
wait -n || rc=1
grep -E "error" build-fp8/build_test.log build-fp8/build_capi.log | head
grep -E "spill|C75" build-fp8/build_test.log build-fp8/build_capi.log | sort | uniq -c | sort -rn | head
exit $rc
