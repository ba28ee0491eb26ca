#!/usr/bin/env bash
# bench/run_h200.sh -- everything zyfa checks on an NVIDIA H200 in one run: build, GPU tests,
# compute-sanitizer, the custom head-dim example, the main job on the GPU, benchmark. Written for a GPU machine
# without internet access: it installs nothing.
#   bash bench/run_h200.sh [full|quick|check]   (outputs under $OUT, default /tmp/zyfa_out)
#   check: everything but the benchmark (GPU tests, sanitizers, custom head dim, the main job on the GPU)
# Needs: nvcc that knows sm_90a (CUDA 12 or newer; run with 13.0), python3 with torch (CUDA), compute-sanitizer;
# doctest.h and zlib's headers in .offline/ when the machine lacks them (bench/prepare_offline.sh copies them there
# from a Debian machine that has doctest-dev and zlib1g-dev; copy .offline/ to the GPU machine with the checkout).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/zyfa_out}
mkdir -p "$OUT" build-gpu
MODE=${1:-full}
export PYTHONUNBUFFERED=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.backends.cudnn.version())'
} 2>&1 | tee "$OUT/test.log"

# Build the test program and the torch extension in parallel.
(nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -Iinclude -I.offline \
   tests/gpu/test_flash_attn.cu -o build-gpu/test_flash_attn > "$OUT/build_test.log" 2>&1; echo "test build rc=$?" >> "$OUT/build_test.log") &
(python3 bench/bench_h200.py --out "$OUT" --build-only > "$OUT/build_ext.log" 2>&1; echo "ext build rc=$?" >> "$OUT/build_ext.log") &
wait
tail -3 "$OUT/build_test.log"; tail -3 "$OUT/build_ext.log"
grep -E "registers|spill" "$OUT/build_test.log" | sort | uniq -c | head -20

# Real activations for the GPU test: unpack the committed .npy.gz files.
mkdir -p build-gpu/activations
for f in data/activations/*/layer*_[qkv].npy.gz; do
  m=$(basename "$(dirname "$f")"); gunzip -c "$f" > "build-gpu/activations/${m}_$(basename "$f" .gz)"
done

# GPU tests (every element vs fp64, edge cases, real activations, 100 bitwise repeats).
timeout 240 ./build-gpu/test_flash_attn 2>&1 | tee -a "$OUT/test.log" | tail -60
echo "gpu test rc=${PIPESTATUS[0]}"

# The custom head-dim example (one KernelConfig instantiation).
nvcc -x cu -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a -Iinclude examples/custom_head_dim/custom_head_dim.hip \
  -o build-gpu/custom_head_dim && ./build-gpu/custom_head_dim; echo "custom_head_dim rc=$?"

# The main job on the GPU: examples/run_prefill.sh picks the CUDA backend when nvcc and a GPU are present.
# The GPU machine may lack doctest (tests off) and zlib's headers (then .offline/zlib from bench/prepare_offline.sh).
ZARGS="-DZYFA_BUILD_TESTS=OFF"
if [ ! -f /usr/include/zlib.h ] && [ -f .offline/zlib/include/zlib.h ]; then
  LIBZ=$(ldconfig -p | sed -n 's/.*libz\.so\.1 .*=> \(.*\)/\1/p' | head -1)
  ZARGS+=" -DZLIB_INCLUDE_DIR=$PWD/.offline/zlib/include -DZLIB_LIBRARY=$LIBZ"
fi
ZYFA_CMAKE_ARGS="$ZARGS" ZYFA_BUILD_DIR=build-gpu/prefill ZYFA_OUT_DIR="$OUT/prefill" timeout 300 bash examples/run_prefill.sh \
  > "$OUT/prefill.log" 2>&1
echo "main job (run_prefill.sh) rc=$?"; grep -E "^backend|^SUMMARY|ratio" "$OUT/prefill.log"

# Optional: Nsight Compute on one hd128 call (ZYFA_NCU=1), clocks left alone.
if [ "${ZYFA_NCU:-0}" = 1 ]; then
  nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a -Iinclude tests/gpu/profile_one.cu -o build-gpu/profile_one
  for causal in 0 1; do
    timeout 120 ncu --clock-control none -k regex:fwd_kernel --launch-count 1 --section SpeedOfLight \
      --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section Occupancy \
      ./build-gpu/profile_one 128 128 $causal 2 8192 16 >> "$OUT/ncu.txt" 2>&1
    echo "ncu causal=$causal rc=$?"
  done
fi

# compute-sanitizer on the small subset.
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 ./build-gpu/test_flash_attn -tc='small*' \
    > "$OUT/san.tmp" 2>&1
  echo "compute-sanitizer $tool rc=$?" | tee -a "$OUT/sanitizer.log"; cat "$OUT/san.tmp" >> "$OUT/sanitizer.log"
  tail -4 "$OUT/san.tmp"; rm -f "$OUT/san.tmp"
done

[ "$MODE" = check ] && exit 0
# Benchmark (same process, same inputs: zyfa, SDPA flash, SDPA cuDNN).
if [ "$MODE" = quick ]; then BQ=--quick; else BQ=; fi
timeout 400 python3 bench/bench_h200.py --out "$OUT" $BQ ${ZYFA_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
echo "bench rc=${PIPESTATUS[0]}"
