#!/usr/bin/env bash
# The test command behind `make test`: builds and runs CTest in a normal
# build, an ASan+UBSan build and a clang libFuzzer smoke build.
# Usage: run-tests.sh [release|asan|fuzz]...   (default: all three, in that order)
#
# CTest runs nearly one test at a time (the two-process tests are RUN_SERIAL), which
# leaves a core idle. So each stage runs as phases, and while one phase's tests run, the
# next phase's build runs at nice 19 on what the tests leave; its output is shown when it
# ends. The ASan stage is two phases: the tests that run real processes (long, mostly
# waiting) first, while the rest of the ASan build (the in-process test programs) goes on
# beside them. The fuzz stage, last, builds and tests entirely beside the ASan tests,
# from the start of the process tests.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(release asan fuzz)

# Labels of the tests that run real `writ` processes; the ASan stage runs them first.
process_labels='integration|faults|hostile|cluster|capture'
process_dirs=(tests/integration tests/faults tests/hostile tests/cluster tests/capture)

# Every test build links with lld: about 100 programs, each with all of writ's layers
# statically; writ itself links in 0.9 s with lld against 4.2 s with GNU ld here.
fast_link=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
           -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)

# stage_config PHASE: sets label, dir, targets (one or more, word-split), target_dirs (build
# directories whose every target is built too), cmake_args and ctest_args.
stage_config() {
  target_dirs=()
  case $1 in
    # -g1 (line tables: backtraces keep file:line) instead of -g: the biggest unit
    # compiles in 21 s instead of 29, and its object is a third of the size.
    release) label=release dir=build/release targets=all
             cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWRIT_WERROR=ON
                         "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
                         "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
             ctest_args=() ;;
    # -O1: sanitizer runs stay quick without optimising away what ASan should see.
    # -g1: line tables, so reports keep file:line, at a fraction of full debug info's cost.
    asan-processes|asan-rest)
          dir=build/asan
          cmake_args=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_CXX_FLAGS_DEBUG=-g1
                      -DWRIT_SANITIZE=ON -DWRIT_PYTHON=OFF -DWRIT_WERROR=ON)
          # No Python package: the interpreter is not sanitized, so an ASan-built extension
          # would not even load into it (the release stage runs the Python tests).
          # Not the `consumer` test: an outside project linking this build's -fsanitize libwrit
          # would need the sanitizer flags too, and installing it proves nothing the release
          # stage does not.
          # Not the rxm instances of the provider-parameterised tests: `tcp;ofi_rxm` takes
          # writ's RDM path (address vector, peers added and removed), which the shm instances
          # run under ASan too; what rxm adds is libfabric's own behaviour, which ASan does not
          # judge, and the release stage runs them. About 4 minutes of CI.
          # (A parameterised test's CTest name goes on: "…/tcp_ofi_rxm  # GetParam() = …".)
          local no_rxm='/(tcp_ofi_rxm|rxm)( |$)'
          if [[ $1 == asan-processes ]]; then
            # `writ` and the capture interposer, which the tests run, are not link
            # dependencies of the test programs.
            label="asan+ubsan (tests running processes)" targets="writ writ_capture"
            target_dirs=("${process_dirs[@]}")
            ctest_args=(-L "^($process_labels)\$" -E "$no_rxm")
          else
            # Not cli.reference_matches_help: a text comparison of docs/cli.md with every
            # subcommand's --help, which ASan would judge only as CLI11's formatting.
            label="asan+ubsan (the rest)" targets=all
            ctest_args=(-LE "^($process_labels|consumer)\$" -E "$no_rxm|^cli\.reference_matches_help\$")
          fi ;;
    # clang: its CTest also runs -Wthread-safety over every src/ and tools/ file
    # (-fsyntax-only), so writ itself is not built here.
    fuzz) label="fuzz smoke" dir=build/fuzz targets="fuzzers writ_build_info"
          cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWRIT_FUZZ=ON -DWRIT_BENCH=OFF -DWRIT_WERROR=ON
                      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
                      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
          ctest_args=() ;;
    *) echo "run-tests.sh: unknown stage $1" >&2; return 2 ;;
  esac
}

# Background phases print their output only when they end, so each phase's last line
# says when it ended and how long it took: where CI's time goes.
ended() { echo "=== writ tests: $1 ended at $(date +%T), after $(($SECONDS - $2)) s ==="; }

build_stage() {
  stage_config "$1"
  local t0=$SECONDS sub
  echo "=== writ tests: $label build ($dir) ==="
  cmake -S . -B "$dir" "${cmake_args[@]}" "${fast_link[@]}" >/dev/null &&
    cmake --build "$dir" -j"$jobs" --target $targets || return  # word-split: one or more
  for sub in "${target_dirs[@]}"; do
    if [[ -f $dir/build.ninja ]]; then ninja -C "$dir" -j"$jobs" "$sub/all" || return
    else make -C "$dir/$sub" -j"$jobs" --no-print-directory || return; fi
  done
  ended "$label build" "$t0"
}

test_stage() {
  stage_config "$1"
  local t0=$SECONDS rc=0
  echo "=== writ tests: $label tests ($dir) ==="
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"  # a failure summary names this run's only
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900 "${ctest_args[@]}") || rc=$?
  ended "$label tests" "$t0"
  if ((rc != 0)); then failed_tests "$label" "$dir" >>"$summary"; fi
  return $rc
}

# CI shows only the end of the output, where the fuzz stage's log lands: so each failed
# test is named again in a summary printed last.
failed_tests() {
  local failed=$2/Testing/Temporary/LastTestsFailed.log
  if [[ -s $failed ]]; then sed "s/^/FAILED in $1 tests: /" "$failed"
  else echo "FAILED: $1 tests (CTest named no test)"; fi
}

# A stage is one phase, or two for asan (stage_config's asan-processes and asan-rest).
phases=()
for stage in "${stages[@]}"; do
  if [[ $stage == asan ]]; then phases+=(asan-processes asan-rest); else phases+=("$stage"); fi
done
stages=("${phases[@]}")
for stage in "${stages[@]}"; do stage_config "$stage" || exit 2; done

status=0
# Static checks first; a failure is reported but the test stages still run.
echo "=== writ tests: static checks ==="
summary=$(mktemp)
bash scripts/check-format.sh || { status=1; echo "FAILED: check-format.sh" >>"$summary"; }
# The release stage starts with the source checks that need no build.
if [[ " ${stages[*]} " == *" release "* ]]; then
  scripts/check-function-length.sh || { status=1; echo "FAILED: check-function-length.sh" >>"$summary"; }
fi

# Background jobs run in their own process groups (set -m), ended with the script.
next_pid=""
fuzz_pid=""
trap 'for p in $next_pid $fuzz_pid; do kill -- -"$p" 2>/dev/null || true; done; rm -f "$summary"' EXIT
trap 'exit 130' INT TERM
# The fuzz stage, when it is last, is built and tested entirely in
# the background from the start of the ASan process tests (or of the stage before it): its fuzzers and the
# thread-safety pass are CPU work that fits in what the two-process tests leave idle (the
# rest of the ASan build beside them takes a few minutes of their quarter hour), and
# nothing waits on it until the end.
last=$((${#stages[@]} - 1))
fuzz_beside=-1
if ((last >= 1)) && [[ ${stages[last]} == fuzz ]]; then
  fuzz_beside=$((last - 1))
  if ((last >= 2)) && [[ ${stages[last - 2]} == asan-processes ]]; then fuzz_beside=$((last - 2)); fi
  unset 'stages[last]'
fi
fuzz_log=$(mktemp)
start_fuzz() {
  set -m
  (renice -n 19 -p $BASHPID >/dev/null
   if build_stage fuzz; then test_stage fuzz; else
     echo "=== writ tests: fuzz build failed; its tests did not run ===" | tee -a "$summary"; exit 1; fi
  ) >"$fuzz_log" 2>&1 &
  fuzz_pid=$!
  set +m
}
built=1
build_stage "${stages[0]}" || built=0
for ((i = 0; i < ${#stages[@]}; i++)); do
  if ((i + 1 < ${#stages[@]})); then
    next_log=$(mktemp)
    set -m
    (renice -n 19 -p $BASHPID >/dev/null && build_stage "${stages[i + 1]}") >"$next_log" 2>&1 &
    next_pid=$!
    set +m
  fi
  ((i != fuzz_beside)) || start_fuzz
  if ((built)); then
    test_stage "${stages[i]}" || status=1
  else
    echo "=== writ tests: ${stages[i]} build failed; its tests did not run ===" | tee -a "$summary"
    status=1
  fi
  if [[ -n $next_pid ]]; then
    built=1
    wait "$next_pid" || built=0
    next_pid=""
    cat "$next_log"
    rm -f "$next_log"
  fi
done
if [[ -n $fuzz_pid ]]; then
  wait "$fuzz_pid" || status=1
  fuzz_pid=""
  cat "$fuzz_log"
fi
rm -f "$fuzz_log"
if ((status != 0)); then
  echo "=== writ tests: summary of failures ==="
  cat "$summary"
fi
rm -f "$summary"
exit $status
