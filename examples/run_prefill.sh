#!/usr/bin/env bash
# zyfa's main job: builds examples/prefill and runs causal prefill attention on the default input, printing
# which backend ran and the accuracy report, and writing out/prefill/<input>/{out.npy,softmax_lse.npy,report.txt}.
#
#   bash examples/run_prefill.sh [extra zyfa_prefill arguments, e.g. --no-fp8]
#
# Input: every layer of real activations under data/activations/<model>/layerNN_{q,k,v}.npy.gz when present
# (causal, softmax_scale from the model's meta.json, compared also with the model's own layerNN_out.npy.gz),
# else the bundled synthetic sample data/sample/{q,k,v}.npy.gz. ZYFA_INPUT=sample forces the sample.
# Backend: the GPU when include/zyfa/flash_attn.hpp exists, nvidia-smi sees a GPU and nvcc is found (CMake
# -DZYFA_PREFILL_GPU=CUDA), else zyfa's host backend. ZYFA_PREFILL_GPU=OFF|CUDA|HIP overrides the choice.
# Environment: ZYFA_CMAKE_ARGS (extra CMake arguments), ZYFA_BUILD_DIR (default build), ZYFA_OUT_DIR (default out/prefill), ZYFA_JOBS,
# ZYFA_ACTIVATIONS_DIR (default data/activations).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZYFA_BUILD_DIR:-build}
OUTDIR=${ZYFA_OUT_DIR:-out/prefill}
JOBS=${ZYFA_JOBS:-$(n=$(nproc); echo $((n > 4 ? 4 : n)))}

GPU=${ZYFA_PREFILL_GPU:-auto}
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DZYFA_BUILD_EXAMPLES=ON)  # ON: a missing zlib is an error, not a skip
NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
if [ "$GPU" = auto ]; then
  GPU=OFF
  if [ -f include/zyfa/flash_attn.hpp ] && [ -n "$NVCC" ] && nvidia-smi -L >/dev/null 2>&1; then
    GPU=CUDA
  fi
fi
if [ "$GPU" = CUDA ] && [ -n "$NVCC" ]; then
  cmake_args+=(-DCMAKE_CUDA_COMPILER="$NVCC")  # also when nvcc is only in /usr/local/cuda/bin, not on PATH
fi
cmake_args+=(-DZYFA_PREFILL_GPU="$GPU")
# extra CMake arguments, e.g. ZYFA_CMAKE_ARGS="-DZLIB_INCLUDE_DIR=... -DZLIB_LIBRARY=..." for a zlib outside the system
read -r -a extra_cmake <<< "${ZYFA_CMAKE_ARGS:-}"
cmake_args+=("${extra_cmake[@]}")
echo "== configure + build zyfa_prefill (GPU path: $GPU) in $BUILD"
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" "${cmake_args[@]}" > "$BUILD/configure-prefill.log" 2>&1 || { cat "$BUILD/configure-prefill.log"; exit 1; }
cmake --build "$BUILD" --target zyfa_prefill -j"$JOBS"
EXE="$BUILD/examples/prefill/zyfa_prefill"

# runs: "label|q|k|v|extra args"
runs=()
shopt -s nullglob
ACT=${ZYFA_ACTIVATIONS_DIR:-data/activations}
layers=("$ACT"/*/layer*_q.npy.gz)
if [ "${ZYFA_INPUT:-auto}" != sample ] && [ ${#layers[@]} -gt 0 ]; then
  for qf in "${layers[@]}"; do
    dir=$(dirname "$qf"); model=$(basename "$dir"); layer=$(basename "$qf" _q.npy.gz)
    extra="--causal"
    scale=$(sed -n 's/.*"softmax_scale"[[:space:]]*:[[:space:]]*\([0-9.eE+-]*\).*/\1/p' "$dir/meta.json" 2>/dev/null | head -1)
    [ -n "$scale" ] && extra+=" --softmax-scale $scale"
    [ -f "$dir/${layer}_out.npy.gz" ] && extra+=" --expected $dir/${layer}_out.npy.gz"
    runs+=("$model/$layer|$qf|$dir/${layer}_k.npy.gz|$dir/${layer}_v.npy.gz|$extra")
  done
else
  runs+=("sample (synthetic)|data/sample/q.npy.gz|data/sample/k.npy.gz|data/sample/v.npy.gz|--causal")
fi

summary=()
for r in "${runs[@]}"; do
  IFS='|' read -r label qf kf vf extra <<< "$r"
  out="$OUTDIR/${label%% *}"; mkdir -p "$out"
  echo; echo "== $label"
  # shellcheck disable=SC2086  # $extra is a list of arguments
  "$EXE" --q "$qf" --k "$kf" --v "$vf" --out "$out/out.npy" --lse "$out/softmax_lse.npy" $extra "$@" | tee "$out/report.txt"
  line=$(grep '^SUMMARY ' "$out/report.txt" || true)
  summary+=("$label ${line#SUMMARY }")
done

echo
echo "== summary (errors vs fp64; FP8 recipes on e4m3fn-quantized inputs vs fp64 on the dequantized inputs)"
echo "| input | backend | out rel. Frobenius | zyfa FP8 | aiter_like FP8 | zyfa / aiter_like | zyfa FP8 on the GPU | vs model's own out |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for s in "${summary[@]}"; do
  label=${s%% backend=*}
  get() { echo "$s" | sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
  z=$(get fp8_zyfa_rel_fro); a=$(get fp8_aiter_like_rel_fro); e=$(get expected_rel_fro); g=$(get fp8_gpu_rel_fro)
  ratio=$(awk -v z="$z" -v a="$a" 'BEGIN { if (z >= 0 && a > 0) printf "%.3f", z / a; else printf "-" }')
  [ "${e#-}" != "$e" ] && e="-"
  [ "${z#-}" != "$z" ] && z="-"
  [ "${a#-}" != "$a" ] && a="-"
  [ -z "$g" ] || [ "${g#-}" != "$g" ] && g="-"
  echo "| $label | $(get backend) | $(get rel_fro) | $z | $a | $ratio | $g | $e |"
done
echo "outputs: $OUTDIR/<input>/{out.npy,softmax_lse.npy,report.txt}"
