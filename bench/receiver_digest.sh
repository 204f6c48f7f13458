#!/usr/bin/env bash
# Receiver CPU (user+sys of the `writ serve` process) and wall time of one delivery until
# validated, per provider and rule, for one or more writ binaries (before/after a change).
# Usage: bench/receiver_digest.sh SIZE_MIB "RULES" "PROVIDERS" WRIT...
#   bench/receiver_digest.sh 1024 "xxh3-128 sha256 sha256-tree-1MiB" "tcp shm" /tmp/before build/release/tools/writ/writ
set -euo pipefail
source "$(dirname "$0")/wait_line.sh"
size_mib=$1 rules=$2 providers=$3
shift 3
work=$(mktemp -d /tmp/writ-digest-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
head -c $((size_mib << 20)) /dev/urandom >"$work/data"
ticks=$(getconf CLK_TCK)
cpu_s() { awk -v t="$ticks" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }
# CPU of the process's threads named writ-digest (the digest workers), 0 where none.
digest_s() {
  local sum=0 task
  for task in /proc/$1/task/*; do
    [[ $(cat "$task/comm" 2>/dev/null) == writ-digest ]] || continue
    sum=$((sum + $(awk '{print $14 + $15}' "$task/stat")))
  done
  echo "scale=2; $sum / $ticks" | bc
}
port=$((20000 + RANDOM % 20000))
printf "%-12s %-4s %-18s %8s %8s %8s %s\n" binary prov rule cpu_s digest_s wall_s load
for writ in "$@"; do
  for provider in $providers; do
    for rule in $rules; do
      port=$((port + 1))
      "$writ" serve --listen 127.0.0.1:$port --provider "$provider" --identity "$work/id" \
        >"$work/serve.err" 2>&1 &
      serve=$!
      wait_line "$work/serve.err" "listening on" 1 10 || { cat "$work/serve.err" >&2; exit 1; }
      before=$(cpu_s $serve) digest_before=$(digest_s $serve)
      start=$(date +%s.%N)
      if ! "$writ" send "$work/data" --to 127.0.0.1:$port --provider "$provider" --rule "$rule" \
        --id "d-$port" --until validated >/dev/null 2>&1; then
        kill $serve && wait $serve || true
        printf "%-12s %-4s %-18s %8s\n" "$(basename "$(dirname "$writ")")" "$provider" "$rule" "n/a"
        continue
      fi
      end=$(date +%s.%N)
      after=$(cpu_s $serve) digest_after=$(digest_s $serve)
      kill $serve && wait $serve || true
      printf "%-12s %-4s %-18s %8.2f %8.2f %8.2f %s\n" "$(basename "$(dirname "$writ")")" \
        "$provider" "$rule" "$(echo "$after - $before" | bc)" \
        "$(echo "$digest_after - $digest_before" | bc)" "$(echo "$end - $start" | bc)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
