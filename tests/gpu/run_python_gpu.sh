#!/usr/bin/env bash
# tests/gpu/run_python_gpu.sh -- the Python package on the GPU machine (offline; python3 there holds torch):
#   1. `pip install --no-build-isolation --no-deps .` with the CUDA kernels (ZYFA_CUDA=1: nvcc, sm_90a);
#   2. a fresh-process import and call from outside the repository;
#   3. pytest tests/torch with ZYFA_REQUIRE_CUDA=1: the CPU tests, the CUDA tests (against SDPA/fp64 on the built-in
#      head dims, GQA, strides, causal/non-causal, LSE; varlen bit for bit vs per-sequence calls with ragged lengths
#      1..5,000; merge on the GPU; FP8 -> NotImplementedError; torch.compile fullgraph) and the context-parallel
#      example (CPU/gloo; and 2 GPUs/NCCL at 32K tokens with timing when two GPUs are visible: $OUT/cp_2gpu.json).
#   bash tests/gpu/run_python_gpu.sh            # outputs under $OUT (default /tmp/zyfa_out); exit status 0 = all passed
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zyfa_out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
# NVLink multicast stays off (the GPU machines' rule), also for the processes torch.distributed.run starts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
LOG="$OUT/python_gpu.log"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv
  nvcc --version | tail -1
  "$PY" -c 'import torch, setuptools; print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count(), "setuptools", setuptools.__version__)'
} 2>&1 | tee "$LOG"

fail=0
t0=$SECONDS
ZYFA_CUDA=1 "$PY" -m pip install --no-build-isolation --no-deps -v . > "$OUT/pip_install.log" 2>&1
rc=$?; echo "pip install rc=$rc ($((SECONDS - t0)) s)" | tee -a "$LOG"
[ $rc = 0 ] || { tail -40 "$OUT/pip_install.log"; exit 1; }

(cd /tmp && "$PY" - <<'PY') 2>&1 | tee -a "$LOG"
import torch, zyfa
q = torch.randn(2, 1024, 16, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(2, 1024, 4, 128, device="cuda", dtype=torch.bfloat16)
out, lse = zyfa.flash_attn_func(q, k, k, causal=True, return_attn_probs=True)
print("import from", zyfa.__file__, "->", tuple(out.shape), tuple(lse.shape), "cuda lib", zyfa._lib.CUDA is not None)
PY
[ "${PIPESTATUS[0]}" = 0 ] || fail=1

(cd tests/torch && ZYFA_REQUIRE_CUDA=1 ZYFA_CP_OUT="$OUT/cp_2gpu.json" timeout 1500 "$PY" -m pytest -q -rs --durations=10 . ) \
  2>&1 | tee -a "$LOG" | tail -40
[ "${PIPESTATUS[0]}" = 0 ] || fail=1
[ -f "$OUT/cp_2gpu.json" ] && cat "$OUT/cp_2gpu.json"
echo "run_python_gpu: $([ $fail = 0 ] && echo PASSED || echo FAILED) in $((SECONDS - t0)) s" | tee -a "$LOG"
exit $fail
