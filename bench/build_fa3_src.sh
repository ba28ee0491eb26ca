#!/usr/bin/env bash
# Builds FlashAttention-3's hdim-128 bf16 forward kernel from source with this machine's nvcc (bench/fa3_src/
# launcher.cu), as it is and with five ablations, into OUT_DIR/fa3_src*.so for bench/bench_fa3_src.py. No GPU
# needed; about 80 s per library on two cores (six libraries).
#   bash bench/build_fa3_src.sh FLASH_ATTENTION_DIR OUT_DIR
# FLASH_ATTENTION_DIR: a checkout of https://github.com/Dao-AILab/flash-attention at 0251105a (hopper/ and the
# csrc/cutlass submodule at 7127592 are used; `git submodule update --init csrc/cutlass`). Other commits may build
# but are not what bench/RESULTS.md measured. Libraries:
#   fa3_src.so                 FA3 unchanged (nvcc flags of FA3's setup.py)
#   fa3_src_static.so          its causal tile scheduler static: tile t, t + grid, ... in the same order (FA3X_STATIC)
#   fa3_src_regs40.so          producer / consumer registers 40 / 232 (zyfa's split) instead of 24 / 240 (FA3X_REGS)
#   fa3_src_rescale_before.so  O rescaled before P.V also at hdim 128 (FA3 does it above 128) (FA3X_RESCALE_BEFORE)
#   fa3_src_max4.so            each row's max in four partial chains, both rows before the exponentials, as zyfa
#                              (FA3X_MAX4; FA3: one serial chain per row)
#   fa3_src_wait_late.so       the P.V wait held after the whole softmax by a branch that is never taken, as zyfa
#                              (FA3X_WAIT_LATE; FA3 lets ptxas place it, part way through the exponentials)
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
patch("softmax.h", """            flash::template reduce_max</*zero_init=*/false>(scores, row_max);
""", """#ifdef FA3X_MAX4
            #pragma unroll
            for (int mi = 0; mi < size<0>(scores); ++mi) {
                float part[4] = {row_max(mi), scores(mi, 0), scores(mi, 1), scores(mi, 2)};
                #pragma unroll
                for (int ni = 3; ni < size<1>(scores); ++ni) {
                    part[(ni + 1) % 4] = fmaxf(part[(ni + 1) % 4], scores(mi, ni));
                }
                row_max(mi) = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
            }
            { MaxOp<float> max_op; quad_allreduce_(row_max, row_max, max_op); }
#else
            flash::template reduce_max</*zero_init=*/false>(scores, row_max);
#endif
""")
path = f"{d}/mainloop_fwd_sm90_tma_gmma_ws.hpp"
s = open(path).read()
old = """                softmax.template online_softmax</*Is_first=*/false, Check_inf>(tSrS);
                if constexpr (!HasQv) {
                    warpgroup_wait<0>();"""
i = s.find(old, s.find("auto fwd_step = [&]"))
if i < 0:
    sys.exit("build_fa3_src.sh: mainloop_fwd_sm90_tma_gmma_ws.hpp has no fwd_step P.V wait")
new = """                softmax.template online_softmax</*Is_first=*/false, Check_inf>(tSrS);
                if constexpr (!HasQv) {
#ifdef FA3X_WAIT_LATE
                    if (__any_sync(0xffffffffu, softmax.row_sum(0) < 0.f)) {
                        warpgroup_wait<0>();
                        softmax.row_sum(0) = 0.f;
                    } else {
                        warpgroup_wait<0>();
                    }
#else
                    warpgroup_wait<0>();
#endif"""
open(path, "w").write(s[:i] + new + s[i + len(old):])
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
# Two builds at a time: "name [-Dmacro]" per library.
set -- "fa3_src" "fa3_src_static -DFA3X_STATIC" "fa3_src_regs40 -DFA3X_REGS" \
  "fa3_src_rescale_before -DFA3X_RESCALE_BEFORE" "fa3_src_max4 -DFA3X_MAX4" "fa3_src_wait_late -DFA3X_WAIT_LATE"
while [ $# -gt 0 ]; do
  pids=()
  for spec in "$1" "${2:-}"; do
    [ -n "$spec" ] || continue
    # shellcheck disable=SC2086  # spec is "name [macro]", split on purpose
    build $spec &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  shift $(($# >= 2 ? 2 : 1))
done
