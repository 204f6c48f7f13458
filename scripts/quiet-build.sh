#!/usr/bin/env bash
# quiet-build.sh BUILD_DIR TARGET...: builds the targets with nothing on the terminal
# unless the build fails, when its whole output follows. `make demo` builds through it, so
# a newcomer sees the receipts, not compiler and make lines.
# JOBS (default 2) is the parallelism.
set -euo pipefail
dir=$1
shift
log="$dir/quiet-build.log"
mkdir -p "$dir"
if ! MAKEFLAGS=--no-print-directory cmake --build "$dir" -j"${JOBS:-2}" --target "$@" >"$log" 2>&1; then
  cat "$log" >&2
  echo "writ: building $* failed (the output above is also in $log)" >&2
  exit 1
fi
