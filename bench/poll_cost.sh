#!/usr/bin/env bash
# What `--poll busy` costs and buys (docs/benchmarks.md, "Busy polling"): the CPU an
# idle `writ serve` uses over IDLE_SECONDS, then 4 KiB session deliveries until
# `validated` (small_delivery_bench), each with --poll block and --poll busy on both
# sides, per provider, with the receiver's CPU for the deliveries and how many
# signatures its receipts took. SENDERS=N runs N sessions at once (default 1).
#   bench/poll_cost.sh [BUILD_DIR] [COUNT] [PROVIDERS...]
set -euo pipefail
build=${1:-build/release}
count=${2:-500}
shift $(( $# > 2 ? 2 : $# ))
providers=("$@")
[[ ${#providers[@]} -gt 0 ]] || providers=(tcp shm)
writ=$build/tools/writ/writ
bench=$build/bench/small_delivery_bench
idle_seconds=${IDLE_SECONDS:-2}
senders=${SENDERS:-1}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/wait_line.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 4096 /dev/urandom > "$work/4k"
hz=$(getconf CLK_TCK)

cpu_s() {  # utime + stime of PID, in seconds
  awk -v hz="$hz" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for provider in "${providers[@]}"; do
  for mode in block busy; do
    log=$work/serve-$provider-$mode.log
    "$writ" serve --listen 127.0.0.1:0 --provider "$provider" --poll "$mode" > "$log" 2>&1 &
    pid=$!
    wait_line "$log" "listening on" 1 30
    address=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$log" | head -1)
    before=$(cpu_s "$pid")
    sleep "$idle_seconds"
    idle=$(awk -v a="$before" -v b="$(cpu_s "$pid")" 'BEGIN { printf "%.2f", b - a }')
    before=$(cpu_s "$pid")
    pids=()
    for ((i = 0; i < senders; i++)); do
      "$bench" --to "$address" --file "$work/4k" --count "$count" --mode session \
        --poll "$mode" --json > "$work/result-$i.json" &
      pids+=($!)
    done
    wait "${pids[@]}"
    result=$(jq -c '.session' "$work"/result-*.json | tr '\n' ' ')
    used=$(awk -v a="$before" -v b="$(cpu_s "$pid")" 'BEGIN { printf "%.2f", b - a }')
    kill -TERM "$pid"
    wait "$pid" || true
    signed=$(grep -o '[0-9]* receipt(s) signed with [0-9]* signature(s)' "$log" || true)
    echo "$provider --poll $mode: idle serve ${idle} CPU-s in ${idle_seconds} s;" \
      "session(s): $result;" \
      "serve CPU for the deliveries ${used} s; ${signed}"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
