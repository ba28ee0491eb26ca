#!/usr/bin/env bash
# Generated-file check for zyfa's gfx950 FP8 kernels (docs/generator.md):
#   1. regenerates asm/*.s and include/zyfa/fp8/gfx950/*.inc in memory (tools/gen_asm.py --check) and fails on any
#      byte difference from the checked-in files;
#   2. runs the gfx950 hazard checker on every checked-in asm/*.s;
#   3. compiles the FP8 loader/launcher (include/zyfa/fp8/gfx950/) for AMD: HIP host pass with Debian's HIP 5.2 headers
#      (-fsyntax-only: no GPU runtime library is linked) and gfx950 device pass.
# Needs python3 with numpy-free stdlib only, llvm-mc-22, ld.lld-22, llvm-objcopy-22, clang++-22.
#   bash tools/ci/check_generated.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=python3; [ -x .venv/bin/python ] && PY=.venv/bin/python
"$PY" tools/gen_asm.py --check
PYTHONPATH=tools "$PY" -m gfx950hazard asm/*.s
CLANG=${CLANG:-clang++-22}
RD="$("$CLANG" -print-resource-dir)"
HIPF=(-x hip -nogpulib -nogpuinc -isystem "$RD" -D__HIP_PLATFORM_AMD__ -D__AMDGCN_WAVEFRONT_SIZE=64 -std=c++17
      -Iinclude -Wall -Wextra -Werror)
TU=tests/fp8/fp8_loader_tu.hip
"$CLANG" "${HIPF[@]}" --offload-arch=gfx950 --cuda-host-only -fsyntax-only "$TU"
"$CLANG" "${HIPF[@]}" --offload-arch=gfx950 --cuda-device-only -O3 -S "$TU" -o /dev/null
echo "check_generated: OK"
