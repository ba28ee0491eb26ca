#!/usr/bin/env bash
# Fills .carry/ (ignored by git, listed in .git/info/exclude) with what bench/run_h200.sh needs on the device
# machine and that its image lacks: doctest.h (Debian doctest-dev 2.4.9) and zlib's headers (zlib1g-dev).
# Then: device run with carry [".carry"] and command `bash bench/run_h200.sh [full|quick|check]`.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.carry/' .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
mkdir -p .carry/doctest .carry/zlib/include
cp /usr/include/doctest/doctest.h .carry/doctest/
cp /usr/include/zlib.h /usr/include/zconf.h .carry/zlib/include/
echo "prepare_carry: .carry/ ready ($(du -sh .carry | cut -f1))"
