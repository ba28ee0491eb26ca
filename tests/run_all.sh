#!/usr/bin/env bash
# THE test command (README): configures and builds zyfa's tests and examples, runs the C++ tests (ctest: doctest
# suites, the installed-package consumer, the example's smoke runs) and the Python tests (pytest).
#   bash tests/run_all.sh
# Environment: ZYFA_BUILD_DIR (default build), ZYFA_JOBS (default: nproc, at most 4).
# Python: .venv/bin/python when tools/ci/install_deps.sh created it, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZYFA_BUILD_DIR:-build}
JOBS=${ZYFA_JOBS:-$(n=$(nproc); echo $((n > 4 ? 4 : n)))}
PY=python3
[ -x .venv/bin/python ] && PY="$PWD/.venv/bin/python"
# ON, not the default AUTO: a missing doctest or zlib must fail here instead of skipping tests.
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DZYFA_BUILD_TESTS=ON -DZYFA_BUILD_EXAMPLES=ON
cmake --build "$BUILD" -j"$JOBS"
ctest --test-dir "$BUILD" --output-on-failure -j"$JOBS"
ZYFA_BUILD_DIR="$BUILD" "$PY" -m pytest -q tests/python
