#!/usr/bin/env bash
# Fails when a source file listed by tools/ci/format_files.sh is not formatted as .clang-format says (clang-format 14,
# Debian 12). Fix with: bash tools/ci/format_files.sh | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/../.."
CF=${CLANG_FORMAT:-clang-format}
command -v "$CF" >/dev/null || { echo "check_format: $CF not found (tools/ci/install_deps.sh)" >&2; exit 1; }
bash tools/ci/format_files.sh | xargs "$CF" --dry-run --Werror
echo "check_format: $(bash tools/ci/format_files.sh | wc -l) files formatted"
