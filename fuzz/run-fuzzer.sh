#!/usr/bin/env bash
# run-fuzzer.sh BINARY WORK_CORPUS SEED_CORPUS SECONDS
# Runs one libFuzzer target for a bounded time; fails on any crash, leak or timeout.
set -euo pipefail
bin=$1 work=$2 seed=$3 seconds=$4
mkdir -p "$work"
seeds=()
[[ -d "$seed" ]] && seeds=("$seed")
echo "fuzzing $(basename "$bin") for ${seconds}s"
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work" "${seeds[@]}" 2>&1 | tail -n 25
exit "${PIPESTATUS[0]}"
