#!/usr/bin/env bash
# build.release_configure (tests/build_types/CMakeLists.txt says why only src/audit).
# Usage: release_configure.sh SOURCE_DIR WORK_DIR CMAKE CXX CC
set -euo pipefail
src=$1 work=$2 cmake=$3 cxx=$4 cc=$5
rm -rf "$work"
"$cmake" -S "$src" -B "$work" -DCMAKE_BUILD_TYPE=Release -DWRIT_BENCH=OFF -DWRIT_PYTHON=OFF \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" >/dev/null
if grep -q -- '-Werror' "$work/compile_commands.json"; then
  echo "a default configure compiles with -Werror: a packager's newer compiler would stop" >&2
  exit 1
fi
grep -q -- '-O3' "$work/compile_commands.json" || { echo "Release is not -O3 here" >&2; exit 1; }
"$cmake" -S "$src" -B "$work" -DWRIT_WERROR=ON >/dev/null
"$cmake" --build "$work" -j2 --target writ_audit
echo "Release: no -Werror by default; writ_audit builds at -O3 with -Werror"
rm -rf "$work"
