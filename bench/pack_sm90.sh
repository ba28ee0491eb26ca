#!/usr/bin/env bash
# bench/pack_sm90.sh -- build-ws/ and build-ab/ (bench/build_sm90_ws.sh, bench/build_ab_sm90.sh) as one xz archive,
# build-pack/sm90.tar.xz, for the GPU machine: the libraries and test program shrink about 8x (a 3.9 MB benchmark
# library packs to about 0.5 MB), so one call can carry many A/B builds: carry `build-pack` and `.offline` and begin
# the command with `tar -xJf build-pack/sm90.tar.xz &&` (explicitly: an archive older than a rebuilt build-ws/ must
# not overwrite it). Build logs stay out.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build-pack
dirs=()
for d in build-ws build-ab; do [ -d "$d" ] && dirs+=("$d"); done
[ ${#dirs[@]} -gt 0 ] || { echo "nothing to pack: build build-ws/ or build-ab/ first" >&2; exit 1; }
tar --exclude='*.log' -cJf build-pack/sm90.tar.xz "${dirs[@]}"
tar -tJf build-pack/sm90.tar.xz | grep -v '/$' | tr '\n' ' '
echo
ls -l build-pack/sm90.tar.xz | awk '{print "build-pack/sm90.tar.xz:", $5, "bytes"}'
