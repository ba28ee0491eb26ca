#!/usr/bin/env bash
# Copies into .offline/ (ignored by git) the headers that bench/run_h200.sh needs and a GPU machine without internet
# access may lack: doctest.h (Debian doctest-dev 2.4.9) and zlib's headers (zlib1g-dev). Run it here, on a Debian 12
# machine after tools/ci/install_deps.sh; then copy the checkout with .offline/ to the GPU machine and run
# `bash bench/run_h200.sh [full|quick|check]` there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .offline/doctest .offline/zlib/include
cp /usr/include/doctest/doctest.h .offline/doctest/
cp /usr/include/zlib.h /usr/include/zconf.h .offline/zlib/include/
echo "prepare_offline: .offline/ ready ($(du -sh .offline | cut -f1))"
