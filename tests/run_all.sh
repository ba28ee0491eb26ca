#!/usr/bin/env bash
# The test command: configures, builds and runs the C++ tests (ctest), then the Python tests (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZYFA_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"
python3 -m pytest -q tests/python
