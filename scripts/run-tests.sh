#!/usr/bin/env bash
# The test command behind `make test`: builds and runs CTest in a normal
# build, a clang libFuzzer smoke build and an ASan+UBSan build.
# Usage: run-tests.sh [release|fuzz|asan]...   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(release fuzz asan)

run_stage() {
  local name=$1 dir=$2 target=$3; shift 3
  echo "=== writ tests: $name build ($dir) ==="
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" --target $target  # word-split: one or more targets
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900)
}

status=0
# Static checks first; a failure is reported but the test stages still run.
echo "=== writ tests: static checks ==="
bash scripts/check-format.sh || status=1

for stage in "${stages[@]}"; do
  case $stage in
    # The release stage starts with the source checks that need no build.
    release) scripts/check-function-length.sh || status=1
             run_stage release build/release all -DCMAKE_BUILD_TYPE=RelWithDebInfo || status=1 ;;
    # -O1: sanitizer runs stay quick without optimising away what ASan should see.
    # No Python package: the interpreter is not sanitized, so an ASan-built extension would
    # not even load into it (the release stage runs the Python tests).
    asan) run_stage "asan+ubsan" build/asan all -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
            -DWRIT_SANITIZE=ON -DWRIT_PYTHON=OFF || status=1 ;;
    # clang: also builds writ, so every src/ and tools/ file passes -Wthread-safety.
    fuzz) run_stage "fuzz smoke" build/fuzz "fuzzers writ" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWRIT_FUZZ=ON \
            -DWRIT_BENCH=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ || status=1 ;;
    *) echo "run-tests.sh: unknown stage $stage" >&2; exit 2 ;;
  esac
done
exit $status
