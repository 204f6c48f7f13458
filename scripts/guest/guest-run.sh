#!/bin/bash
# Runs inside the guest, as root, in the overlay of the host's root (guest-init.sh
# starts it as /run/writ-job/runner.sh). Creates the Soft-RoCE device, then runs the
# job's command.sh with its output in the job share:
#   stdout, stderr   the command's output
#   rc               its exit code (124: the guest-side timeout hit)
#   setup.log        this script's own messages; setup-failed marks a broken guest
# No `set -e`: every setup step is checked explicitly (setup_failed), and the
# command's own failure must be recorded, not end this script.
set -uo pipefail
job=/run/writ-job
exec >"$job/setup.log" 2>&1
uptime_now() { cut -d' ' -f1 /proc/uptime; }
echo "guest-run: started at uptime $(uptime_now) s"

setup_failed() {
  echo "guest-run: setup failed: $*"
  touch "$job/setup-failed"
  exit 1
}

hostname writ-guest
# Registered memory is pinned: RC-233 alone registers 2 x 24 MiB.
ulimit -l unlimited || setup_failed "ulimit -l unlimited"

# rxe cannot bind to lo; a dummy netdev carries its RoCE v2 (UDP) traffic. The
# address exists only inside this guest (qemu gets no network card at all).
rxe_netdev=rxedum0
rxe_address=10.77.0.1
ip link set lo up || setup_failed "lo up"
ip link add "$rxe_netdev" type dummy || setup_failed "ip link add $rxe_netdev"
ip addr add "$rxe_address/24" dev "$rxe_netdev" || setup_failed "ip addr add"
ip link set "$rxe_netdev" up || setup_failed "ip link set up"
rdma link add rxe0 type rxe netdev "$rxe_netdev" || setup_failed "rdma link add rxe0"

# The port goes ACTIVE once the netdev is up; wait for it (bounded). sysfs, not
# ibv_devinfo: every dynamically linked program costs a good fraction of a second here.
port_state=/sys/class/infiniband/rxe0/ports/1/state
for _ in $(seq 1 100); do
  grep -q ACTIVE "$port_state" 2>/dev/null && break
  sleep 0.1
done
grep -q ACTIVE "$port_state" || setup_failed "rxe0 never became PORT_ACTIVE"
echo "guest-run: rxe0 on $rxe_netdev ($rxe_address) is PORT_ACTIVE at uptime $(uptime_now) s"

export HOME=/root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# verbs;ofi_rxm asks for a CQ larger than rxe0's max_cqe (32767) unless told the
# job is small.
export FI_UNIVERSE_SIZE=64
# Tell programs where they are: tests use these instead of 127.0.0.1 for verbs.
export WRIT_GUEST=1 WRIT_GUEST_RXE_DEVICE=rxe0 WRIT_GUEST_RXE_ADDRESS=$rxe_address

timeout_seconds=$(cat "$job/timeout")
timeout -k 5 "$timeout_seconds" bash "$job/command.sh" >"$job/stdout" 2>"$job/stderr" </dev/null
rc=$?
echo "guest-run: command exited $rc at uptime $(uptime_now) s"
echo $rc >"$job/rc"
sync
