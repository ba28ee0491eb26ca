#!/usr/bin/env bash
# Lists the C++/CUDA/HIP sources that .clang-format governs (one per line): include/, tests/, examples/, bench/,
# python/zyfa/csrc/ and tools/ (*.hpp, *.h, *.cpp, *.cu, *.hip). Generated files (*.inc) and the hazard checker's
# test corpus (whose text is its test input) are not listed.
set -euo pipefail
cd "$(dirname "$0")/../.."
git ls-files 'include/*.hpp' 'include/*.h' 'tests/*.hpp' 'tests/*.cpp' 'tests/*.cu' 'tests/*.hip' \
  'examples/*.hpp' 'examples/*.cpp' 'examples/*.cu' 'examples/*.hip' 'bench/*.hpp' 'bench/*.cpp' 'bench/*.cu' \
  'python/zyfa/csrc/*.cpp' 'python/zyfa/csrc/*.hpp' 'python/zyfa/csrc/*.cu' 'tools/*.cpp' 'tools/*.cu' 'tools/*.hip' |
  grep -v '^tools/gfx950hazard/corpus/'
