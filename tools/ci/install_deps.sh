#!/usr/bin/env bash
# Installs zyfa's build/test dependencies on Debian 12 (bookworm); idempotent, fast when everything is present.
#
#   bash tools/ci/install_deps.sh          # as root, or as a user with sudo
#
# 1. Debian packages (pinned below; installed only if missing). apt waits up to ZYFA_APT_LOCK_WAIT seconds
#    (default 600) for another apt/dpkg to release its lock. A failure names its cause: the lock still held, the
#    archive unreachable (network), or a pinned version that has left the archive (a Debian point/security
#    release replaced it; checked with apt-cache madison before installing): then the script says so loudly and
#    installs the current version of that package only.
# 2. Python: a virtual environment in .venv (created with --system-site-packages so an already-installed
#    numpy/pytest at the pinned version is reused without a download), then tools/requirements.txt (pinned)
#    into it. tests/run_all.sh uses .venv/bin/python when it exists. If no venv can be created, falls back to
#    pip --user (with --break-system-packages on Debian's externally-managed python).
# 3. CUDA: nvcc is not a Debian 12 package that knows sm_90a (Debian's nvidia-cuda-toolkit is 11.8); the
#    device compile step (tools/ci/compile_device.sh) uses nvcc from PATH or /usr/local/cuda/bin and says
#    loudly when it is absent.
# 4. torch (python/requirements-torch.txt, pinned) into the venv for the Python package's tests; ZYFA_SKIP_TORCH=1
#    skips it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO="__no_sudo__"; fi
fi

# name=version pins (versions as in bookworm / bookworm-security on 2026-11-29).
APT_PKGS=(
  cmake=3.25.1-1
  g++=4:12.2.0-3
  make=4.3-4.1
  doctest-dev=2.4.9~ds-1
  zlib1g-dev=1:1.2.13.dfsg-1          # gzopen/gzread for .npy.gz inputs of examples/prefill
  clang-22=1:22.1.8-1~deb12u1          # HIP device code for gfx950/gfx942
  clang-tools-22=1:22.1.8-1~deb12u1    # clang-offload-bundler: clang -x hip -c (host + device in one object)
  clang-format=1:14.0-55.7~deb12u1     # .clang-format check (tools/ci/check_format.sh)
  llvm-22=1:22.1.8-1~deb12u1
  lld-22=1:22.1.8-1~deb12u1
  libamdhip64-dev=5.2.3-8              # HIP 5.2 headers (/usr/include/hip)
  python3=3.11.2-1+b1
  python3-venv=3.11.2-1+b1
  python3-pip=23.0.1+dfsg-1
)
need=()
for p in "${APT_PKGS[@]}"; do dpkg -s "${p%%=*}" >/dev/null 2>&1 || need+=("$p"); done
LOCK_WAIT=${ZYFA_APT_LOCK_WAIT:-600}
LOCK_RE='Could not get lock|Unable to acquire the dpkg|Unable to lock'
NET_RE='Temporary failure resolving|Could not resolve|Failed to fetch|Unable to connect|Could not connect|Connection failed|Network is unreachable|Connection timed out'
# apt's own messages ("E: ..."/"W: ..."), for the report of a failure.
apt_errors() { grep -E '^(E:|W:|Err:)' "$1" | head -8 | sed 's/^/    /' >&2 || true; }
# Runs apt-get with the lock wait, its output in $APT_LOG too; returns apt-get's status. `env` keeps
# DEBIAN_FRONTEND through sudo.
APT_LOG=$(mktemp); trap 'rm -f "$APT_LOG"' EXIT
apt_run() {
  set +e
  # uniq: apt repeats "Waiting for cache lock ..." every second while it waits
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout="$LOCK_WAIT" "$@" 2>&1 | tee "$APT_LOG" | uniq
  local rc=${PIPESTATUS[0]}
  set -e
  return "$rc"
}
if [ ${#need[@]} -gt 0 ]; then
  echo "install_deps: installing ${need[*]}"
  if [ "$SUDO" = "__no_sudo__" ]; then
    echo "install_deps: ERROR: not root and no sudo; install these Debian packages first: ${need[*]}" >&2
    exit 1
  fi
  # apt-get update does not honour DPkg::Lock::Timeout for the package lists' lock: wait for it here.
  t0=$SECONDS net=""
  until apt_run update; do
    if grep -qE "$LOCK_RE" "$APT_LOG" && [ $((SECONDS - t0)) -lt "$LOCK_WAIT" ]; then
      echo "install_deps: another apt holds the package lists' lock; waiting ($((SECONDS - t0)) of $LOCK_WAIT s)" >&2
      sleep 5
    elif grep -qE "$LOCK_RE" "$APT_LOG"; then
      echo "install_deps: ERROR: apt's package lists are still locked after $LOCK_WAIT s (another apt-get is running):" >&2
      apt_errors "$APT_LOG"; exit 1
    elif grep -qE "$NET_RE" "$APT_LOG"; then
      break  # reported below
    else
      echo "install_deps: ERROR: apt-get update failed:" >&2; apt_errors "$APT_LOG"; exit 1
    fi
  done
  # apt-get update exits 0 when it cannot download, with warnings ("W: Failed to fetch ...").
  if grep -qE "$NET_RE" "$APT_LOG"; then
    net=" (apt-get update could not reach the Debian archive, see above)"
    echo "install_deps: WARNING: apt-get update could not reach the Debian archive (network); using the package lists already here:" >&2
    apt_errors "$APT_LOG"
  fi
  # A pinned version that the archive no longer lists (apt-cache madison) is replaced by the current one, loudly.
  want=()
  for p in "${need[@]}"; do
    name=${p%%=*} ver=${p#*=}
    avail=$(apt-cache madison "$name" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}')
    if [ -z "$avail" ]; then
      echo "install_deps: ERROR: no Debian package '$name' in the package lists$net; is this Debian 12 with bookworm and bookworm-security in its apt sources?" >&2
      exit 1
    elif ! grep -qxF "$ver" <<< "$avail"; then
      echo "install_deps: WARNING: pinned $name=$ver is no longer in the Debian archive (available: $(tr '\n' ' ' <<< "$avail")); installing the current $name" >&2
      want+=("$name")
    else
      want+=("$p")
    fi
  done
  if ! apt_run install -y --no-install-recommends "${want[@]}"; then
    if grep -qE "$LOCK_RE" "$APT_LOG"; then
      echo "install_deps: ERROR: dpkg is still locked after $LOCK_WAIT s (another apt/dpkg is running; ZYFA_APT_LOCK_WAIT sets the wait):" >&2
    elif grep -qE "$NET_RE" "$APT_LOG"; then
      echo "install_deps: ERROR: could not download the packages from the Debian archive (network):" >&2
    else
      echo "install_deps: ERROR: apt-get install ${want[*]} failed:" >&2
    fi
    apt_errors "$APT_LOG"
    exit 1
  fi
fi

# Python tools and tests, pinned in tools/requirements.txt.
REQ="$ROOT/tools/requirements.txt"
PY=${PYTHON:-python3}
VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv --system-site-packages "$VENV" 2>/dev/null || rm -rf "$VENV"
fi
if [ -x "$VENV/bin/python" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
  echo "install_deps: Python packages in $VENV ($("$VENV/bin/python" --version))"
  # 4. torch for the Python package's CPU tests (tests/torch), pinned in python/requirements-torch.txt: PyPI's
  #    Linux wheel (the CUDA build, ~2.6 GB with its dependencies; ~2.5 min to download and install here). It runs
  #    on CPU. Skip with ZYFA_SKIP_TORCH=1 (tests/run_all.sh then skips tests/torch and says so).
  ZYFA_TORCH_DISK_GB=${ZYFA_TORCH_DISK_GB:-6}
  if [ "${ZYFA_SKIP_TORCH:-0}" != 1 ]; then
    if ! "$VENV/bin/python" -c 'import torch; assert torch.__version__.split("+")[0] == "2.11.0"' 2>/dev/null; then
      # Disk: one pinned package at a time (--no-deps: the file pins every dependency), unpacked next to the venv
      # (not in /tmp, which may be a small tmpfs) and not cached, so the peak is the installed 4.6 GB plus one
      # wheel: 4.7 GB measured (all at once: 7.1 GB, and 2.6 GB more in the cache); the check below names a shortfall.
      need_kb=$((ZYFA_TORCH_DISK_GB * 1024 * 1024))
      free_kb=$(df -Pk "$ROOT" | awk 'NR == 2 { print $4 }')
      if [ "$free_kb" -lt "$need_kb" ]; then
        echo "install_deps: ERROR: torch needs about $ZYFA_TORCH_DISK_GB GB free on $(df -P "$ROOT" | awk 'NR == 2 { print $6 }') (the venv and pip's unpacked wheels); $((free_kb / 1024)) MB free. Free space there, or set ZYFA_SKIP_TORCH=1 to skip the Python package's tests." >&2
        exit 1
      fi
      echo "install_deps: installing torch (python/requirements-torch.txt; $((free_kb / 1024 / 1024)) GB free)"
      pip_tmp="$ROOT/.pip-tmp"
      mkdir -p "$pip_tmp"
      grep -E '^[A-Za-z0-9_.-]+==' "$ROOT/python/requirements-torch.txt" | while read -r pin; do
        TMPDIR="$pip_tmp" "$VENV/bin/python" -m pip install -q --no-cache-dir --no-deps --disable-pip-version-check "$pin"
      done
      rm -rf "$pip_tmp"
    fi
    echo "install_deps: torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') in $VENV"
  fi
else
  echo "install_deps: WARNING: could not create a venv; installing with pip --user" >&2
  extra=()
  "$PY" -m pip install --help 2>/dev/null | grep -q -- --break-system-packages && extra+=(--break-system-packages)
  "$PY" -m pip install -q --disable-pip-version-check --user "${extra[@]}" -r "$REQ"
fi
