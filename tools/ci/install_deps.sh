#!/usr/bin/env bash
# Installs zyfa's build/test dependencies on Debian 12 (bookworm). Versions are pinned here.
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
APT_PKGS=(cmake g++ doctest-dev=2.4.9~ds-1 clang-22 llvm-22 lld-22 libamdhip64-dev python3-pip)
need=()
for p in "${APT_PKGS[@]}"; do dpkg -s "${p%%=*}" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi
python3 -m pip install -q --disable-pip-version-check -r "$(dirname "$0")/../requirements.txt"
