#!/usr/bin/env bash
# Fails, naming the files, when any tracked C++ file differs from what clang-format
# (the repository's .clang-format) would make of it. `make format` fixes them.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src include tools tests bench fuzz examples -name '*.cc' -o -name '*.h')
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "format check: ${#bad[@]} of ${#files[@]} files are not clang-formatted ($(clang-format --version)):"
  printf '  %s\n' "${bad[@]}"
  echo "run 'make format' and commit the result"
  exit 1
fi
echo "format check: all ${#files[@]} C++ files are clang-formatted ($(clang-format --version))"
