#!/usr/bin/env bash
# Inside the guest: the Soft-RoCE figures recorded in docs/benchmarks.md (perftest on
# rxe0, and RC-233 at transport level with fabric_peer over verbs and verbs;ofi_rxm).
# These describe an emulated NIC under an emulated CPU, not writ's performance.
# Also an example of a guest-side script that starts several processes.
#
# Usage (on the host): scripts/guest/run-in-guest.sh --timeout 400 -- \
#                        scripts/guest/soft-roce-figures.sh BUILD_DIR [RUNS]
set -euo pipefail
[[ ${WRIT_GUEST:-} == 1 ]] || { echo "soft-roce-figures: run me through run-in-guest.sh" >&2; exit 2; }
build=$(cd "${1:?usage: soft-roce-figures.sh BUILD_DIR [RUNS]}" && pwd)
runs=${2:-3}
dev=$WRIT_GUEST_RXE_DEVICE
addr=$WRIT_GUEST_RXE_ADDRESS
peer=$build/tests/fabric/fabric_peer
work=$(mktemp -d)

# perftest: the server in the background, the client once the server listens (its
# output is buffered, so ask ss); they exchange QP data over TCP port 18515 inside the
# guest, and RoCE v2 runs on GID 1 (the IPv4 one, 10.77.0.1). Both bounded: a failed
# client must not leave the server waiting forever. (perftest 4.5's rdma_cm mode, -R,
# was rejected or crashed here when the machine was loaded.)
perftest() {
  local tool=$1
  shift
  timeout 120 "$tool" -d "$dev" -x 1 "$@" >"$work/server.log" 2>&1 &
  local server=$!
  for _ in $(seq 1 60); do
    ss -ltn 'sport = :18515' | grep -q LISTEN && break
    sleep 0.5
  done
  echo "--- $tool $*"
  if timeout 120 "$tool" -d "$dev" -x 1 "$@" "$addr" >"$work/client.log" 2>&1; then
    grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+' "$work/client.log"
  else
    echo "(client failed: $(tail -n 3 "$work/client.log" | tr '\n' ' '))"
    echo "(server: $(tail -n 3 "$work/server.log" | tr '\n' ' '))"
  fi
  wait "$server" || true
}

echo "=== $(uname -r), $(nproc) vCPUs, device $dev on $addr"
perftest ib_write_bw -s 65536 -n 2000
perftest ib_write_bw -s 1048576 -n 200
perftest ib_write_lat -s 8 -n 2000

# RC-233 at transport level: three 8 MiB writes-with-data into one 24 MiB window.
rc233() {
  local provider=$1 fifo=$work/target.in
  rm -f "$fifo"
  mkfifo "$fifo"
  "$peer" target --provider "$provider" --window 25165824 --node "$addr" <"$fifo" >"$work/target.out" &
  local target=$!
  exec 7>"$fifo"
  for _ in $(seq 1 300); do grep -q '^READY' "$work/target.out" && break; sleep 0.1; done
  local address region
  read -r _ address region _ < <(grep '^READY' "$work/target.out")
  "$peer" initiator --provider "$provider" --target "$address" --region "$region" \
    --scenario rc233 --level delivery --node "$addr" >"$work/initiator.out"
  echo "verify" >&7
  echo "quit" >&7
  exec 7>&-
  wait "$target"
  echo "$provider: $(grep '^ELAPSED' "$work/initiator.out") $(grep '^TALLY' "$work/initiator.out")" \
    "granted=$(grep -o '"granted":"[a-z]*"' "$work/initiator.out" | cut -d'"' -f4 | sort -u | paste -sd,)" \
    "target: $(grep '^VERIFY' "$work/target.out")"
}

for provider in verbs "verbs;ofi_rxm"; do
  for _ in $(seq 1 "$runs"); do rc233 "$provider"; done
done
rm -rf "$work"
