#!/usr/bin/env bash
# No function in src/ or tools/ is longer than 80 lines (CONTRIBUTING's rule; issue #13).
# Measured with universal-ctags: every C++ function definition (free, member defined out of
# line or in a class, in an anonymous namespace), from its first line to its closing brace,
# so lambdas count toward the function they are written in. No allowlist.
# Usage: check-function-length.sh [max-lines] [dir...]   (default: 80 src tools)
set -euo pipefail
cd "$(dirname "$0")/.."
max=${1:-80}
shift || true
dirs=("$@")
[[ ${#dirs[@]} -gt 0 ]] || dirs=(src tools)

ctags=""
for c in ctags-universal universal-ctags ctags; do
  if command -v "$c" >/dev/null && "$c" --version 2>/dev/null | grep -q 'Universal Ctags'; then
    ctags=$c
    break
  fi
done
if [[ -z $ctags ]]; then
  echo "check-function-length: universal-ctags not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi

# One line per function: first line, last line, name, file.
functions=$("$ctags" -R --languages=C++ --kinds-C++=f --fields=+ne -x \
  --_xformat='%{line} %{end} %N %F' "${dirs[@]}")
files=$(awk '{print $4}' <<<"$functions" | sort -u | wc -l)
count=$(wc -l <<<"$functions")
offenders=$(awk -v max="$max" '$2 != "" { n = $2 - $1 + 1; if (n > max) print n, $3, $4 ":" $1 }' \
  <<<"$functions" | sort -rn)

echo "check-function-length: $count functions in $files files under ${dirs[*]} (universal-ctags)," \
  "limit $max lines"
if [[ -n $offenders ]]; then
  echo "check-function-length: longer than $max lines (lines, function, where):" >&2
  sed 's/^/  /' <<<"$offenders" >&2
  exit 1
fi
echo "check-function-length: none longer than $max lines"
