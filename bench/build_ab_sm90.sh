#!/usr/bin/env bash
# bench/build_ab_sm90.sh -- builds one variant of bench/zyfa_capi.cu (the benchmark's C entry point) for an A/B of
# the sm_90a kernel, into build-ab/NAME.so (here, no GPU needed; about 40 s):
#   bash bench/build_ab_sm90.sh NAME [--patch FILE] [--rev REV] [--flag NVCC_FLAG ...] [-DMACRO=VALUE ...]
# --rev REV: the kernel of that revision (default: the working tree's); --patch FILE: an experiment patch
# (bench/patches/) applied to it (both in a scratch worktree, build-wt/NAME: outside build-ab/, which is carried);
# --flag: an extra nvcc option (e.g. -ftz=true); -D...: experiment switches. Then, on the GPU machine with build-ab/
# and .offline/ carried:
# bash bench/run_ab_sm90.sh BASE VARIANT... (build-ab/*.so names).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: build_ab_sm90.sh NAME [--patch FILE] [--rev REV] [--flag F] [-D...]}
shift
patch="" rev="" opts=()
while [ $# -gt 0 ]; do
  case $1 in
    --patch) patch=$(realpath "$2"); shift 2 ;;
    --rev) rev=$2; shift 2 ;;
    --flag) opts+=("$2"); shift 2 ;;
    -D*) opts+=("$1"); shift ;;
    *) echo "build_ab_sm90: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p build-ab
src=$PWD
if [ -n "$rev" ] || [ -n "$patch" ]; then
  src=$PWD/build-wt/$name
  mkdir -p build-wt
  rm -rf "$src"
  git worktree prune
  git worktree add -f --detach "$src" "${rev:-HEAD}" > /dev/null
  if [ -z "$rev" ]; then  # the working tree's changes to the headers, then the patch
    git diff HEAD -- include | (cd "$src" && git apply --allow-empty)
  fi
  [ -n "$patch" ] && (cd "$src" && git apply "$patch")
fi
nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DZYFA_BF16_SM90_WS=1 -I"$src/include" -Xptxas -v -O3 -shared \
  -Xcompiler -fPIC "${opts[@]}" bench/zyfa_capi.cu -o "build-ab/$name.so" > "build-ab/$name.log" 2>&1
# ptxas's wgmma serialization notes (C7514/C7515/C7517) and spills of the sm_90a kernels: what to look at first.
echo "build_ab_sm90: build-ab/$name.so; C75xx notes: $(grep -c 'C751[0-9]' "build-ab/$name.log" || true);" \
  "sm_90a kernels with spills: $(awk '/Compiling entry function .*fwd_kernel_ws/ { k = 1 } /spill stores/ && k \
  { if ($5 + $9 > 0) n++; k = 0 } END { print n + 0 }' "build-ab/$name.log")"
