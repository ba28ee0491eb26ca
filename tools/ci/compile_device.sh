#!/usr/bin/env bash
# Compiles zyfa's device code without a GPU: nvcc for sm_90a, clang-22 (+ Debian's HIP headers) for gfx950
# and gfx942. Kernel owners add their translation units to the lists below.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "compile_device: nothing registered yet"
