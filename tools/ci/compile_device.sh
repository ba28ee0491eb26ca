#!/usr/bin/env bash
# Compiles zyfa's device code without a GPU and reports per-kernel resources:
#   AMD gfx950 and gfx942: Debian's clang++-22 with Debian's HIP 5.2 headers (flags: DESIGN.md), -S, plus
#     -Rpass-analysis=kernel-resource-usage; reported: VGPRs, AGPRs, .amdhsa_next_free_vgpr, .amdhsa_accum_offset,
#     SGPRs, LDS (group_segment_fixed_size), scratch (private segment / ScratchSize), SGPR/VGPR spills, occupancy.
#   NVIDIA sm_90a: nvcc -Xptxas -v; reported: registers, shared memory, stack frame, spill stores/loads.
# Fails (exit 1) on any compile error and on any spill: every registered TU is a built-in configuration.
#
#   bash tools/ci/compile_device.sh            # all registered TUs, all their targets
#   ZYFA_DEVICE_OUT=dir ZYFA_REQUIRE_NVCC=1 bash tools/ci/compile_device.sh
# Outputs in $ZYFA_DEVICE_OUT (default build-device/): <tu>.<arch>.s, logs, resources.md (the table).
set -euo pipefail
cd "$(dirname "$0")/../.."

# ---------------------------------------------------------------------------------------------------------
# Registered device translation units, one line per TU:
#   "<path from repo root>|<targets: comma list of gfx950,gfx942,sm_90a; empty = all>|<extra compiler flags>"
# The same HIP source is compiled for every target (nvcc compiles it as CUDA: -x cu).
DEVICE_TUS=(
  "tools/ci/device_smoke.hip||"   # platform-header smoke kernel (pipeline self-check)
  "tests/host/numeric_device.hip||"   # zyfa/numeric conversions in device passes
  "tests/gpu/builtin_kernels.hip||"   # BF16 forward kernels: the built-in head dims + the (96,96) custom example
  "tests/gpu/sm90_ws_kernels.cu|sm_90a|"   # the sm_90a wgmma/TMA pipeline for the built-in head dims
  "tests/gpu/sm90_ws_kernels.cu|sm_90a|-DZYFA_SM90_RESCALE_THRESHOLD=0"   # the same with the exact running max
  "tests/gpu/fp8_sm90_kernels.cu|sm_90a|"   # the sm_90a FP8 kernel (Lean P and the exp2 twin)
)
# ---------------------------------------------------------------------------------------------------------
ALL_TARGETS="gfx950,gfx942,sm_90a"

OUT=${ZYFA_DEVICE_OUT:-build-device}
rm -rf "$OUT"; mkdir -p "$OUT"
MANIFEST="$OUT/manifest.tsv"; : > "$MANIFEST"
PY=python3; [ -x .venv/bin/python ] && PY=.venv/bin/python

CLANG=${CLANG:-clang++-22}
command -v "$CLANG" >/dev/null || { echo "compile_device: ERROR: $CLANG not found (tools/ci/install_deps.sh)" >&2; exit 1; }
RESOURCE_DIR="$("$CLANG" -print-resource-dir)"
AMD_FLAGS=(-x hip --cuda-device-only -nogpulib -nogpuinc -isystem "$RESOURCE_DIR" -D__HIP_PLATFORM_AMD__
           -D__AMDGCN_WAVEFRONT_SIZE=64 -O3 -std=c++17 -Iinclude -Rpass-analysis=kernel-resource-usage)

NVCC=${NVCC:-$(command -v nvcc || true)}
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
NV_FLAGS=(-x cu -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v)
if [ -z "$NVCC" ]; then
  cat >&2 <<'MSG'
#################################################################################################
# compile_device: nvcc NOT FOUND (PATH, /usr/local/cuda/bin). sm_90a device code is NOT compiled.
# Debian 12's nvidia-cuda-toolkit (CUDA 11.8) predates sm_90a; install NVIDIA's CUDA >= 12 toolkit.
#################################################################################################
MSG
  [ "${ZYFA_REQUIRE_NVCC:-0}" = 1 ] && exit 1
else
  echo "compile_device: nvcc = $NVCC ($("$NVCC" --version | tail -1))"
fi
echo "compile_device: clang = $CLANG ($("$CLANG" --version | head -1))"

fail=0
for entry in "${DEVICE_TUS[@]}"; do
  IFS='|' read -r tu targets extra <<< "$entry"
  [ -n "$targets" ] || targets=$ALL_TARGETS
  read -r -a extra_flags <<< "${extra:-}"
  base=$(echo "$tu" | tr '/' '_')
  [ -z "${extra:-}" ] || base="$base$(echo "$extra" | tr -c 'A-Za-z0-9_\n' '_')"  # one output per flag set
  IFS=',' read -r -a tlist <<< "$targets"
  for t in "${tlist[@]}"; do
    case "$t" in
      gfx950|gfx942)
        asm="$OUT/$base.$t.s"; log="$OUT/$base.$t.log"
        echo "compile_device: $t  $tu"
        if ! "$CLANG" "${AMD_FLAGS[@]}" --offload-arch="$t" "${extra_flags[@]}" -S "$tu" -o "$asm" > "$log" 2>&1; then
          grep -v "remark:" "$log" | head -50 >&2; echo "compile_device: FAILED $t $tu" >&2; fail=1; continue
        fi
        printf '%s\t%s\t%s\t%s\n' "$t" "$tu" "$asm" "$log" >> "$MANIFEST" ;;
      sm_90a)
        [ -n "$NVCC" ] || continue
        log="$OUT/$base.$t.log"
        echo "compile_device: $t  $tu"
        if ! "$NVCC" "${NV_FLAGS[@]}" "${extra_flags[@]}" -c "$tu" -o "$OUT/$base.$t.o" > "$log" 2>&1; then
          head -50 "$log" >&2; echo "compile_device: FAILED $t $tu" >&2; fail=1; continue
        fi
        printf '%s\t%s\t%s\t%s\n' "$t" "$tu" "" "$log" >> "$MANIFEST" ;;
      *) echo "compile_device: ERROR: unknown target '$t' for $tu" >&2; fail=1 ;;
    esac
  done
done

# The way a user compiles a HIP TU: one `-c` object with the host code and the gfx950 code object embedded
# (.hip_fatbin). Bundling needs clang-offload-bundler (Debian clang-tools-22); without it clang stops with
# "posix_spawn failed". (-O3: at -O0 the HIP headers' device assert needs ROCm's device libraries, -nogpulib.)
echo "compile_device: gfx950 host+device object (-c)  tools/ci/device_smoke.hip"
if "$CLANG" -x hip --offload-arch=gfx950 -nogpulib -nogpuinc -isystem "$RESOURCE_DIR" -D__HIP_PLATFORM_AMD__ \
     -D__AMDGCN_WAVEFRONT_SIZE=64 -O3 -std=c++17 -Iinclude -c tools/ci/device_smoke.hip -o "$OUT/device_smoke.o" &&
   llvm-objcopy-22 --dump-section=.hip_fatbin="$OUT/device_smoke.hip_fatbin" "$OUT/device_smoke.o" &&
   clang-offload-bundler-22 -list -type=o -input="$OUT/device_smoke.hip_fatbin" | grep -qx 'hipv4-amdgcn-amd-amdhsa--gfx950'; then
  :
else
  echo "compile_device: FAILED the -c compile of a HIP TU (clang-offload-bundler: Debian clang-tools-22)" >&2; fail=1
fi

# The GPU path of the main job (examples/prefill, ZYFA_EXAMPLE_GPU=1) is never built by tests/run_all.sh on a
# machine without GPU; compile it here so it cannot rot: HIP host pass (syntax) and, with nvcc, the full CUDA TU.
if [ -f include/zyfa/flash_attn.hpp ]; then
  echo "compile_device: examples/prefill GPU path (HIP host pass, CUDA sm_90a)"
  "$CLANG" -x hip --offload-arch=gfx950 -nogpulib -nogpuinc -isystem "$RESOURCE_DIR" -D__HIP_PLATFORM_AMD__ \
    -D__AMDGCN_WAVEFRONT_SIZE=64 -std=c++17 -Iinclude -DZYFA_EXAMPLE_GPU=1 --cuda-host-only -fsyntax-only \
    examples/prefill/prefill.cpp || { echo "compile_device: FAILED examples/prefill (HIP)" >&2; fail=1; }
  if [ -n "$NVCC" ]; then
    "$NVCC" -x cu -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Iinclude -DZYFA_EXAMPLE_GPU=1 \
      -c examples/prefill/prefill.cpp -o "$OUT/prefill_gpu.sm_90a.o" ||
      { echo "compile_device: FAILED examples/prefill (CUDA)" >&2; fail=1; }
  fi
fi

# Generated gfx950 FP8 code objects: regenerate and diff, hazard-check asm/*.s, compile the loader.
bash tools/ci/check_generated.sh || fail=1
"$PY" tools/ci/device_resources.py --self-test
"$PY" tools/ci/device_resources.py "$MANIFEST" --markdown "$OUT/resources.md" || fail=1
[ "$fail" = 0 ] && echo "compile_device: OK" || echo "compile_device: FAILED" >&2
exit "$fail"
