#!/usr/bin/env bash
# Inside the guest: `writ capture` of unmodified perftest programs on rxe0 (Soft-RoCE),
# client and server captured separately, each bundle checked against what the program
# was told to do, and audited (on rxe perftest posts through ibv_post_send; writes built
# through ibv_wr_* come from verbs_raw, as does an error completion). Usage (on the host): scripts/guest/run-in-guest.sh --timeout 400 -- \
#                        scripts/guest/capture-perftest.sh BUILD_DIR
set -euo pipefail
[[ ${WRIT_GUEST:-} == 1 ]] || { echo "capture-perftest: run me through run-in-guest.sh" >&2; exit 2; }
build=$(cd "${1:?usage: capture-perftest.sh BUILD_DIR}" && pwd)
writ=$build/tools/writ/writ
dev=$WRIT_GUEST_RXE_DEVICE
addr=$WRIT_GUEST_RXE_ADDRESS
work=$(mktemp -d)
iterations=200
bytes=4096

# Until the server process SERVER listens on TCP port PORT (the client may connect), or it
# exited, or 60 s passed; the socket's state is polled, there being no event to wait on.
await_listening() {
  local port=$1 server=$2
  for _ in $(seq 1 600); do
    ss -ltn "sport = :$port" | grep -q LISTEN && return 0
    kill -0 "$server" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# Server in the background, client once the server listens on perftest's TCP port; GID 1
# is rxe0's IPv4 one. Both bounded, so a failed client leaves no server waiting.
run_pair() {
  local name=$1 tool=$2
  shift 2
  local args=("$@")
  timeout 120 "$writ" capture --evidence "$work/$name.server.json" -- "$tool" "${args[@]}" \
    >"$work/$name.server.log" 2>&1 &
  local server=$!
  await_listening 18515 "$server"
  local rc=0
  timeout 120 "$writ" capture --evidence "$work/$name.client.json" -- "$tool" "${args[@]}" "$addr" \
    >"$work/$name.client.log" 2>&1 || rc=$?
  wait "$server" || rc=$?
  grep -h "writ capture:" "$work/$name.server.log" "$work/$name.client.log" || true
  return $rc
}

# perftest's closing handshake (its own TCP exchange after the test, ctx_close_connection)
# fails now and then under the guest's emulated CPU, and the side it fails on exits 1 after
# a complete run: seen in `ib_send_bw`, once in about ten runs. That failure alone, named
# by perftest, gets the pair run again, twice at most; any other failure fails at once.
captured_pair() {
  local name=$1 tool=$2
  shift 2
  local args=(-d "$dev" -x 1 -n "$iterations" -s "$bytes" "$@") attempt rc
  echo "=== $tool ${args[*]}"
  for attempt in 1 2 3; do
    rc=0
    run_pair "$name" "$tool" "${args[@]}" || rc=$?
    [[ $rc -ne 0 ]] || break
    if ((attempt < 3)) && grep -q "Failed to close connection between server and client" \
      "$work/$name.server.log" "$work/$name.client.log"; then
      echo "(attempt $attempt: $tool exited $rc at perftest's closing handshake; run again)"
      continue
    fi
    echo "FAIL $tool exited $rc"; tail -n 5 "$work/$name.server.log" "$work/$name.client.log"
    return 1
  done
  "$writ" audit --json "$work/$name.client.json" >"$work/$name.client.audit.json"
  "$writ" audit --json "$work/$name.server.json" >"$work/$name.server.audit.json"
  python3 - "$work" "$name" "$iterations" "$bytes" "$dev" <<'PY'
import json, sys
work, name, iterations, size, dev = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def load(path): return json.load(open(path))
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: sys.exit(1)
client, server = load(f"{work}/{name}.client.json"), load(f"{work}/{name}.server.json")
op = "send" if name.startswith("send") else "write"
for side, bundle in (("client", client), ("server", server)):
    cap, ctx = bundle["capture"], bundle["context"]
    check(cap["providers"] == ["libibverbs"], f"{side}: observed through libibverbs")
    check(ctx["device"] == dev and ctx["transport"] == "roce_rc", f"{side}: {dev}, roce_rc")
    check(ctx["software_release"].startswith("rdma-core "), f"{side}: release {ctx['software_release']}")
    check(ctx["memory_type"] == "dram", f"{side}: host memory registered")
    check(cap["unmatched_completions"] == 0, f"{side}: every completion matched to its request")
    check(all(w["status"] == "success" for w in bundle["work_completions"]), f"{side}: all successful")
    audit = load(f"{work}/{name}.{side}.audit.json")
    check(audit["records"] == len(bundle["work_completions"]) and audit["logical_deliveries"] == 0,
          f"{side}: audit reads {audit['records']} completion records and no delivery")
wrs = [w for w in client["capture"]["work_requests"] if w["operation"] == op and w["bytes"] == size]
check(len(wrs) == iterations, f"client: {len(wrs)} {op}s of {size} bytes posted (-n {iterations})")
check(all(w["call"] == "ibv_post_send" for w in wrs), "client: posted through ibv_post_send")
signaled = [w for w in wrs if "IBV_SEND_SIGNALED" in w["flags"]]
done = {c["wr_id"] for c in client["work_completions"]}
check(0 < len(signaled) <= iterations and done == {w["wr_id"] for w in signaled},
      f"client: {len(client['work_completions'])} completions, one per signaled request "
      f"({client['capture']['unsignaled_requests']} unsignaled have none of their own)")
check(client["context"]["operation"] == ("send" if op == "send" else "rdma_write"),
      f"client: operation {client['context']['operation']}")
if op == "send":
    received = [c for c in server["work_completions"] if c.get("opcode") == "recv"]
    check(len(received) == iterations and all(c["byte_len"] == size for c in received),
          f"server: {len(received)} receive completions of {size} bytes")
else:
    check(not server["work_completions"], "server: no completion (its memory is written, it posts nothing)")
PY
}

raw=$build/tests/verbs/verbs_raw

# Writes built through ibv_wr_* (perftest takes that path only on some devices).
wr_writes() {
  echo "=== verbs_raw wr-writes $dev 16"
  local rc=0
  "$writ" capture --evidence "$work/wr.json" -- "$raw" wr-writes "$dev" 16 \
    >"$work/wr.out" 2>"$work/wr.err" || rc=$?
  cat "$work/wr.out" "$work/wr.err"
  [[ $rc -eq 0 ]] || { echo "FAIL verbs_raw wr-writes exited $rc"; return 1; }
  python3 - "$work/wr.json" <<'PY'
import json, sys
bundle = json.load(open(sys.argv[1]))
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: sys.exit(1)
wrs, wcs = bundle["capture"]["work_requests"], bundle["work_completions"]
check([(w["operation"], w["bytes"], w["call"], w["program_wr_id"]) for w in wrs] ==
      [("write", 4096, "ibv_wr_complete", 100 + i) for i in range(16)],
      "16 writes of 4096 bytes through ibv_wr_complete, wr_id 100..115")
check(all(w["flags"] == ["IBV_SEND_SIGNALED"] for w in wrs), "each signaled")
check([c["wr_id"] for c in wcs] == [w["wr_id"] for w in wrs] and
      all(c["status"] == "success" and c["opcode"] == "rdma_write" and c["byte_len"] is None for c in wcs),
      "16 completions, in order, each its write's (rdma_write, no byte_len)")
check(bundle["context"]["operation"] == "rdma_write", "operation rdma_write")
PY
}

# An error completion: a receive flushed by moving its QP to ERR, read from an extended CQ;
# and a send refused by the provider (posted in INIT).
flushed_receive() {
  echo "=== verbs_raw flushed-receive $dev"
  local rc=0
  "$writ" capture --evidence "$work/flushed.json" -- "$raw" flushed-receive "$dev" \
    >"$work/flushed.out" 2>"$work/flushed.err" || rc=$?
  cat "$work/flushed.err"
  [[ $rc -eq 0 ]] || { echo "FAIL verbs_raw flushed-receive exited $rc"; return 1; }
  python3 - "$work/flushed.json" "$(awk '/^qp / {print $2}' "$work/flushed.out")" <<'PY'
import json, sys
bundle, qp = json.load(open(sys.argv[1])), int(sys.argv[2])
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: sys.exit(1)
wrs, wcs = bundle["capture"]["work_requests"], bundle["work_completions"]
check([(w["operation"], w["program_wr_id"], w["call"]) for w in wrs] == [("recv", 7, "ibv_post_recv")],
      "one receive posted (wr_id 7)")
check(bundle["capture"]["refused_posts"] == {"send": 1}, "the send posted in INIT counted as refused")
check(len(wcs) == 1, "one completion read (through ibv_start_poll)")
wc = wcs[0]
check(wc["status"] == "IBV_WC_WR_FLUSH_ERR", "status " + wc["status"])
check(sorted(wc) == ["endpoint", "qp_num", "status", "vendor_err", "wr_id"],
      "only the fields valid on an error: " + ", ".join(sorted(wc)))
check(wc["qp_num"] == qp and wc["wr_id"] == wrs[0]["wr_id"], "matched to the receive on qp %d" % qp)
PY
}

# A libfabric program on the verbs provider: its libfabric calls are observed, and the
# provider's own libibverbs calls are not (they are not the program's).
libfabric_on_verbs() {
  echo "=== fi_pingpong -p 'verbs;ofi_rxm' -e rdm -I 10 -S 64 -d $dev"
  local args=(-p "verbs;ofi_rxm" -e rdm -I 10 -S 64 -d "$dev") rc=0
  timeout 120 "$writ" capture --evidence "$work/fi.server.json" -- fi_pingpong "${args[@]}" \
    >"$work/fi.server.log" 2>&1 &
  local server=$!
  await_listening 47592 "$server"
  timeout 120 "$writ" capture --evidence "$work/fi.client.json" -- fi_pingpong "${args[@]}" "$addr" \
    >"$work/fi.client.log" 2>&1 || rc=$?
  wait "$server" || rc=$?
  [[ $rc -eq 0 ]] || { echo "FAIL fi_pingpong exited $rc"; tail -n 5 "$work"/fi.*.log; return 1; }
  python3 - "$work" <<'PY'
import json, sys
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: sys.exit(1)
for side in ("server", "client"):
    b = json.load(open(f"{sys.argv[1]}/fi.{side}.json"))
    check(b["capture"]["providers"] == ["verbs;ofi_rxm"], f"{side}: only the program's libfabric calls")
    check(all("program_wr_id" not in w for w in b["capture"]["work_requests"]),
          f"{side}: none of the provider's verbs requests")
PY
}

status=0
libfabric_on_verbs || status=1
wr_writes || status=1
flushed_receive || status=1
captured_pair write ib_write_bw || status=1
captured_pair send ib_send_bw || status=1
exit $status
