#!/usr/bin/env bash
# A `perf record -g` of `writ serve` over one tcp delivery until validated, per retention:
# volatile into a touched reserve as large as the delivery, and process-restart (--data).
# Each serve takes two deliveries: the first touches the window pool (a serve's one-time
# cost), the second is profiled. Prints the serve's CPU (user+sys) for both and the top
# self-% entries of the second's profile.
# Usage: bench/receiver_profile.sh SIZE_MIB OUT_DIR WRIT [PROVIDER]
#   bench/receiver_profile.sh 2048 /tmp/prof build/release/tools/writ/writ tcp
set -euo pipefail
source "$(dirname "$0")/wait_line.sh"
size_mib=$1 out=$2 writ=$3 provider=${4:-tcp}
mkdir -p "$out"
work=$(mktemp -d /tmp/writ-rprof-XXXXXX)
serve=""
trap '[[ -n $serve ]] && kill $serve 2>/dev/null; rm -rf "$work"' EXIT
head -c $((size_mib << 20)) /dev/urandom >"$work/data"
ticks=$(getconf CLK_TCK)
# The serve's CPU, its reserve-refill thread left out (as bench/compare counts it).
cpu_s() {
  { cat /proc/"$1"/stat; grep -h "(writ-reserve)" /proc/"$1"/task/*/stat || true; } 2>/dev/null |
    awk -v hz="$ticks" 'NR == 1 {t = $14 + $15; next} {t -= $14 + $15} END {printf "%.2f", t / hz}'
}
for mode in reserve process-restart; do
  args=(--volatile-reserve "${size_mib}MiB")
  send_args=()
  if [[ $mode == process-restart ]]; then
    args=(--volatile-reserve 0)
    send_args=(--retention process-restart)
  fi
  rm -rf "$work/store"
  "$writ" serve --listen 127.0.0.1:0 --provider "$provider" --data "$work/store" \
    --identity "$work/id" "${args[@]}" >"$work/serve.out" 2>"$work/serve.err" &
  serve=$!
  wait_line "$work/serve.out" "listening on" 1 10 || { cat "$work/serve.err" >&2; exit 1; }
  addr=$(awk '/listening on/ {print $4}' "$work/serve.out")
  [[ $mode == reserve ]] && { wait_line "$work/serve.err" "volatile reserve ready" 1 120 || true; }
  before=$(cpu_s $serve)
  "$writ" send "$work/data" --to "$addr" --provider "$provider" --id "w-$mode" \
    --until validated "${send_args[@]}" >/dev/null
  first=$(echo "$(cpu_s $serve) - $before" | bc)
  [[ $mode == reserve ]] && { wait_line "$work/serve.err" "volatile reserve ready" 2 120 || true; }
  perf record -g -o "$out/$mode.data" -p "$serve" 2>"$out/$mode.perf.err" &
  perf_pid=$!
  sleep 0.5
  before=$(cpu_s $serve)
  start=$(date +%s.%N)
  "$writ" send "$work/data" --to "$addr" --provider "$provider" --id "p-$mode" \
    --until validated "${send_args[@]}" >/dev/null
  end=$(date +%s.%N)
  after=$(cpu_s $serve)
  kill -INT $perf_pid
  wait $perf_pid || true
  kill $serve && wait $serve || true
  serve=""
  printf "%s %s: serve cpu_s 1st %.2f, 2nd %.2f (%.2f per GiB), 2nd wall %.2f s, load %s\n" \
    "$provider" "$mode" "$first" "$(echo "$after - $before" | bc)" "$(echo "($after - $before) * 1024 / $size_mib" | bc -l)" \
    "$(echo "$end - $start" | bc)" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/summary.txt"
  perf report -i "$out/$mode.data" --stdio --no-children --percent-limit 0.8 -g none --sort comm,dso,sym 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -25 >"$out/$mode.top.txt"
  cat "$out/$mode.top.txt"
done
