#!/usr/bin/env bash
# Builds FlashAttention-3's hdim-128 bf16 forward kernel from source with this machine's nvcc (bench/fa3_src/
# launcher.cu), as it is and with three ablations, into OUT_DIR/fa3_src*.so for bench/bench_fa3_src.py. No GPU
# needed; about 80 s per library on two cores.
#   bash bench/build_fa3_src.sh FLASH_ATTENTION_DIR OUT_DIR
# FLASH_ATTENTION_DIR: a checkout of https://github.com/Dao-AILab/flash-attention at 0251105a (hopper/ and the
# csrc/cutlass submodule at 7127592 are used; `git submodule update --init csrc/cutlass`). Other commits may build
# but are not what bench/RESULTS.md measured. Libraries:
#   fa3_src.so                 FA3 unchanged (nvcc flags of FA3's setup.py)
#   fa3_src_static.so          its causal tile scheduler static: tile t, t + grid, ... in the same order (FA3X_STATIC)
#   fa3_src_regs40.so          producer / consumer registers 40 / 232 (zyfa's split) instead of 24 / 240 (FA3X_REGS)
#   fa3_src_rescale_before.so  O rescaled before P.V also at hdim 128 (FA3 does it above 128) (FA3X_RESCALE_BEFORE)
set -euo pipefail
fa=${1:?usage: build_fa3_src.sh FLASH_ATTENTION_DIR OUT_DIR}
out=${2:?usage: build_fa3_src.sh FLASH_ATTENTION_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$fa/hopper/flash_fwd_launch_template.h" ] || { echo "no FA3 source at $fa/hopper" >&2; exit 1; }
[ -f "$fa/csrc/cutlass/include/cute/tensor.hpp" ] || { echo "no CUTLASS at $fa/csrc/cutlass" >&2; exit 1; }
mkdir -p "$out"
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp -r "$fa/hopper" "$src/hopper"
# The ablations, each behind a macro (the unpatched lines stay the default).
python3 - "$src/hopper" <<'EOF'
import sys
d = sys.argv[1]
def patch(name, old, new):
    path = f"{d}/{name}"
    s = open(path).read()
    i = s.find(old)
    if i < 0:
        sys.exit(f"build_fa3_src.sh: {name} does not contain the expected line (another FA3 commit?): {old}")
    open(path, "w").write(s[:i] + new + s[i + len(old):])
regs_lr = ("static constexpr uint32_t LoadRegisterRequirement = NumMmaWarpGroups == 1 ? 56 : "
           "(NumMmaWarpGroups == 2 ? (Use_TMA_KV ? 24 : 40) : 32);")
regs_mr = ("static constexpr uint32_t MmaRegisterRequirement = NumMmaWarpGroups == 1 ? 256 : "
           "(NumMmaWarpGroups == 2 ? (Use_TMA_KV ? 240 : 232) : 160);")
patch("flash_fwd_kernel_sm90.h", regs_lr,
      "\n#ifdef FA3X_REGS\nstatic constexpr uint32_t LoadRegisterRequirement = 40;\n#else\n" + regs_lr + "\n#endif\n")
patch("flash_fwd_kernel_sm90.h", regs_mr,
      "\n#ifdef FA3X_REGS\nstatic constexpr uint32_t MmaRegisterRequirement = 232;\n#else\n" + regs_mr + "\n#endif\n")
rescale = "static constexpr bool RescaleOBeforeGemm = kHeadDim > 128 && (!Is_FP8 || V_colmajor) && IntraWGOverlap;"
patch("mainloop_fwd_sm90_tma_gmma_ws.hpp", rescale,
      "\n#ifdef FA3X_RESCALE_BEFORE\nstatic constexpr bool RescaleOBeforeGemm = IntraWGOverlap;\n#else\n" + rescale +
      "\n#endif\n")
path = f"{d}/tile_scheduler.hpp"
s = open(path).read()
dyn = "current_work.tile_idx = atomicAdd(params.tile_count_semaphore, 1) + int(gridDim.x);"
i = s.find(dyn, s.find("class DynamicPersistentTileScheduler"))
if i < 0:
    sys.exit("build_fa3_src.sh: tile_scheduler.hpp has no DynamicPersistentTileScheduler::prefetch_next_work")
s = (s[:i] + "\n#ifdef FA3X_STATIC\ncurrent_work.tile_idx = current_work.tile_idx + int(gridDim.x);\n#else\n" + dyn +
     "\n#endif\n" + s[i + len(dyn):])
open(path, "w").write(s)
EOF
build() {
  local name=$1
  shift
  nvcc -O3 -std=c++17 --use_fast_math -lineinfo -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -DCUTLASS_ENABLE_GDC_FOR_SM90 \
    -DCUTLASS_DEBUG_TRACE_LEVEL=0 -DNDEBUG -DFLASHATTENTION_DISABLE_BACKWARD --expt-relaxed-constexpr \
    -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC "$@" -I"$src/hopper" \
    -I"$fa/csrc/cutlass/include" -I"$fa/csrc/cutlass/tools/util/include" "$here/fa3_src/launcher.cu" \
    -o "$out/$name.so" >"$out/$name.log" 2>&1 || { tail -20 "$out/$name.log" >&2; return 1; }
  echo "built $out/$name.so"
}
build fa3_src &
p1=$!
build fa3_src_static -DFA3X_STATIC &
p2=$!
wait $p1
wait $p2
build fa3_src_regs40 -DFA3X_REGS &
p1=$!
build fa3_src_rescale_before -DFA3X_RESCALE_BEFORE &
p2=$!
wait $p1
wait $p2
