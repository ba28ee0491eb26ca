#!/usr/bin/env bash
# bench/build_sm90_ws.sh -- builds what bench/run_sm90_ws.sh runs on the GPU machine, into build-ws/ (here, or
# there when the carried binaries do not start): the GPU test suite with the sm_90a kernel dispatched
# (ZYFA_BF16_SM90_WS=1) and the benchmark's C entry point (bench/zyfa_capi.cu). Needs nvcc 13 and doctest.h in
# .offline/doctest (bench/prepare_offline.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build-ws
NVCC=${NVCC:-nvcc}
FLAGS="-std=c++17 -gencode=arch=compute_90a,code=sm_90a -DZYFA_BF16_SM90_WS=1 -Iinclude -Xptxas -v"
$NVCC $FLAGS -O2 -I.offline tests/gpu/test_flash_attn.cu -o build-ws/test_flash_attn_ws > build-ws/build_test.log 2>&1 &
$NVCC $FLAGS -O3 -shared -Xcompiler -fPIC bench/zyfa_capi.cu -o build-ws/libzyfa_capi.so > build-ws/build_capi.log 2>&1 &
wait
grep -E "spill|C75" build-ws/build_test.log build-ws/build_capi.log | sort | uniq -c | sort -rn | head
