#!/usr/bin/env bash
# Inside the guest: RC-233 as a full delivery -- a real `writ serve` and a real
# `writ send` -- over verbs (RC) and verbs;ofi_rxm on rxe0, checking what the receipts
# say: provider, device, transport, the completion level granted, and every rung.
# Usage (on the host): scripts/guest/run-in-guest.sh --timeout 400 -- \
#                        scripts/guest/rc233-delivery.sh BUILD_DIR
set -euo pipefail
[[ ${WRIT_GUEST:-} == 1 ]] || { echo "rc233-delivery: run me through run-in-guest.sh" >&2; exit 2; }
build=$(cd "${1:?usage: rc233-delivery.sh BUILD_DIR}" && pwd)
writ=$build/tools/writ/writ
addr=$WRIT_GUEST_RXE_ADDRESS
dev=$WRIT_GUEST_RXE_DEVICE
work=$(mktemp -d)
export FI_UNIVERSE_SIZE=64  # rxm's default CQ is larger than rxe0's max_cqe

# Three distinct 8 MiB chunks.
python3 -c "
import os, sys
with open(sys.argv[1], 'wb') as f:
    for k in range(3): f.write(bytes([65 + k]) * 4096 * 2048)
" "$work/rc233"

status=0
for provider in verbs "verbs;ofi_rxm"; do
  echo "=== RC-233 over $provider"
  "$writ" serve --listen "$addr:0" --provider "$provider" --identity "$work/id" \
    --scratch "$work" >"$work/serve.out" 2>"$work/serve.err" &
  serve=$!
  for _ in $(seq 1 600); do grep -q "listening on" "$work/serve.out" && break; sleep 0.1; done
  to=$(awk '/listening on/ {print $4}' "$work/serve.out")
  if [[ -z $to ]]; then
    echo "writ serve did not start:"; cat "$work/serve.err"; status=1; kill "$serve"; continue
  fi
  if ! timeout 300 "$writ" send "$work/rc233" --to "$to" --id RC-233 --chunk-size 8MiB --json \
      >"$work/send.json" 2>"$work/send.err"; then
    echo "writ send failed:"; cat "$work/send.err"; status=1
  else
    python3 - "$work/send.json" "$provider" "$dev" <<'PY' || status=1
import json, sys
out, provider, dev = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: sys.exit(1)
ctx = out["context"]
rungs = [r["rung"] for r in out["receipts"]]
check(out["delivery"]["bytes"] == 25165824 and out["delivery"]["chunks"] == 3, "24 MiB as 3 chunks")
check(len(out["work_completions"]) == 3 and all(w["status"] == "success" for w in out["work_completions"]),
      "3 records, 3 successes")
check(rungs == ["transport", "received", "validated", "retained"], "rungs " + ", ".join(rungs))
check(ctx["provider"] == provider and ctx["device"] == dev, "context names %s on %s" % (provider, dev))
check(ctx["transport"] == "roce_rc", "transport roce_rc (RoCE, reliable connected)")
check(ctx["completion_level"] == "transmit", "completion level relied on: transmit (verbs grants no more)")
check(all(r["context"]["provider"] == provider for r in out["receipts"]), "every receipt names the provider")
check(out["receipts"][1]["observer"] == "receiver", "received comes from the receiver's own notifications")
PY
  fi
  kill "$serve"; wait "$serve" || true
done
exit $status
