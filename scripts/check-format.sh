#!/usr/bin/env bash
# Fails, naming the files, when any tracked C++ file differs from what clang-format
# (the repository's .clang-format) would make of it. `make format` fixes them.
# Files go to clang-format 64 at a time (one process per file cost CI two minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src include tools tests bench fuzz examples -name '*.cc' -o -name '*.h')
existing=()
for f in "${files[@]}"; do [[ -f $f ]] && existing+=("$f"); done
status=0
said=$(printf '%s\0' "${existing[@]}" |
  xargs -0 -n 64 -P "${JOBS:-2}" clang-format --dry-run --Werror 2>&1 >/dev/null) || status=$?
# clang-format names each file it would change: "FILE:LINE:COL: error: code should be ...".
mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: (error|warning): code should be clang-formatted' \
  <<<"$said" | cut -d: -f1 | sort -u)
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "format check: ${#bad[@]} of ${#files[@]} files are not clang-formatted ($(clang-format --version)):"
  printf '  %s\n' "${bad[@]}"
  echo "run 'make format' and commit the result"
  exit 1
fi
if [[ $status -ne 0 ]]; then
  echo "format check: clang-format failed (exit $status):"
  printf '%s\n' "$said" | head -20
  exit 1
fi
echo "format check: all ${#files[@]} C++ files are clang-formatted ($(clang-format --version))"
